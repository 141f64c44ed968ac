"""Raw bytes are compressed with one zstd compressor per thread (not one per batch), and
what it writes still decompresses to the bytes, batch after batch."""

from __future__ import annotations

import threading

import zstandard

from helixd.store.writer import _compressor


def test_one_compressor_per_thread_gives_whole_frames() -> None:
    assert _compressor() is _compressor()
    other: list[zstandard.ZstdCompressor] = []
    t = threading.Thread(target=lambda: other.append(_compressor()))
    t.start()
    t.join()
    assert other[0] is not _compressor()  # a compressor is not shared across threads
    d = zstandard.ZstdDecompressor()
    for data in (b'{"type":"user"}\n' * 300, b"x", b"\n".join(b"%d" % i for i in range(999))):
        assert d.decompress(_compressor().compress(data)) == data

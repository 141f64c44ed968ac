"""Raw bytes are compressed with one zstd compressor per thread (not one per batch), and
what it writes still decompresses to the bytes, batch after batch."""

from __future__ import annotations

import threading

import zstandard

from helixd.store.batch import _compressor


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


def test_a_block_repeated_beyond_two_mib_is_stored_once() -> None:
    """The window spans a whole parse piece (8 MiB): a session's context repeated 3 MiB
    later (a resume, a compaction's copy) costs its bytes once, as level 3's 2 MiB window
    did not."""
    import random

    part = random.Random(12).randbytes(3 << 20)
    data = part + part
    stored = _compressor().compress(data)
    assert len(stored) < len(part) * 1.05
    assert zstandard.ZstdDecompressor().decompress(stored) == data

"""Reading agents' log files: stat, identity, fingerprint, bounded reads (files are opened
by ``helixd.sources.gate``, the one place that decides what may be read).

The decision of where to resume is pure (``resume_offset``), so it is tested without
files.  Rules (docs/cursor-and-identity.md):

* a file is identified by (device, inode) plus a fingerprint of its first bytes; the path
  is an attribute that may change (rename, archive);
* size below the cursor, a different head, or a byte before the cursor that cannot end a
  record means the file was truncated or replaced: read it again from 0 as a new
  generation (natural keys keep the rows free of duplicates);
* unchanged size, mtime and inode means nothing to read: the file is not even opened.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

import zstandard

from helixd.core.records import Cursor
from helixd.core.redact import RedactStream, redact
from helixd.sources.filestat import FileStat as FileStat
from helixd.sources.filestat import stat_file as stat_file
from helixd.sources.gate import COMPANION_MAX, Source, read_companion

HEAD_BYTES: Final = 1024


def unchanged(cursor: Cursor | None, st: FileStat) -> bool:
    """True when the file cannot hold anything new since the cursor was written."""
    return (
        cursor is not None
        and cursor.size == st.size
        and cursor.mtime_ns == st.mtime_ns
        and cursor.ino == st.ino
        and cursor.dev == st.dev
    )


def fingerprint(head: bytes) -> bytes:
    return hashlib.blake2b(head, digest_size=16).digest()


def read_at(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    return f.read(size)


def resume_offset(
    cursor: Cursor | None, size: int, head_hash: bytes | None, byte_before: bytes
) -> tuple[int, bool]:
    """Where to start reading: ``(offset, replaced)``.

    ``head_hash`` is the fingerprint of the file's first ``cursor.head_len`` bytes now;
    ``byte_before`` the byte at ``cursor.offset - 1`` now (empty when offset is 0).
    """
    if cursor is None:
        return 0, False
    if size < cursor.offset:
        return 0, True
    if cursor.head_len and head_hash != cursor.head_hash:
        return 0, True
    if cursor.offset and byte_before not in (b"\n", b"}"):
        return 0, True
    return cursor.offset, False


def head_of(f: BinaryIO, length: int) -> bytes:
    return read_at(f, 0, length)


@dataclass(frozen=True, slots=True)
class Piece:
    """One bounded read of a file, ending on a line boundary.

    ``data`` ends after a newline unless ``at_eof`` (the adapter then decides about a
    final line without newline).  ``oversized`` > 0 marks a line longer than the cap: its
    bytes are not in ``data`` (they are streamed from ``path`` when stored) and it is
    ``oversized`` bytes long, newline included.  ``marks``: the piece holds a database's
    row lines (``helixd/sources/sqlite.py``) and these are its watermarks after them."""

    offset: int
    data: bytes
    at_eof: bool
    oversized: int = 0
    marks: dict[str, Any] | None = None  # a database's watermarks after these rows


def read_pieces(
    f: BinaryIO, offset: int, size: int, chunk: int, max_line: int, whole: bool
) -> Iterator[Piece]:
    """The pieces of ``f`` from ``offset`` to ``size``: chunks of ``chunk`` bytes cut at the
    last newline; a read grows (doubling, up to ``max_line``) while a line does not fit;
    ``whole`` files come in one piece.  Stops before a partial line that is still growing."""
    pos = offset
    base = min(max(size - offset, chunk), max_line) if whole else chunk
    while pos < size:
        want = base
        while True:
            data = read_at(f, pos, min(want, size - pos))
            if not data:
                return
            if pos + len(data) >= size:
                yield Piece(pos, data, True)
                return
            cut = data.rfind(b"\n") + 1
            if cut or want >= max_line:
                break
            want = min(want * 2, max_line)
        if cut:
            yield Piece(pos, data[:cut], False)
            pos += cut
            continue
        length = _line_length(f, pos, size)
        if not length:
            return
        yield Piece(pos, b"", False, oversized=length)
        pos += length


def _line_length(f: BinaryIO, offset: int, size: int) -> int:
    """Length of the line at ``offset`` including its newline; 0 if its end is not written."""
    pos = offset
    while pos < size:
        piece = read_at(f, pos, min(1 << 20, size - pos))
        if not piece:
            return 0
        nl = piece.find(b"\n")
        if nl >= 0:
            return pos + nl + 1 - offset
        pos += len(piece)
    return 0


def masked_sidecar(src: Source) -> bytes | None:
    """The adapter's companion file beside ``src`` (``gate.read_companion``) with secrets
    masked, as ingest stores it with the cursor.  A margin past the 64 KiB cut is read and
    masked too, so a secret across the cut leaves no readable prefix behind."""
    data = read_companion(src, COMPANION_MAX + RedactStream.TAIL)
    return redact(data)[0][:COMPANION_MAX] if data else data


def compress_range(
    f: BinaryIO, offset: int, length: int, piece: int = 1 << 22
) -> tuple[bytes, int]:
    """Stream-compress ``length`` bytes at ``offset`` (an over-long line kept raw), read
    ``piece`` bytes at a time and masked on the way (``RedactStream``: a secret across two
    pieces is masked too).  Returns the compressed bytes and the number of secrets."""
    comp = zstandard.ZstdCompressor(level=3).compressobj()
    stream = RedactStream()
    out: list[bytes] = []
    pos = offset
    while pos < offset + length:
        data = read_at(f, pos, min(piece, offset + length - pos))
        if not data:
            break
        out.append(comp.compress(stream.feed(data)))
        pos += len(data)
    out.append(comp.compress(stream.close()))
    out.append(comp.flush())
    return b"".join(out), stream.found

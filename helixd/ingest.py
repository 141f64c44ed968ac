"""The use case: file -> cursor -> bounded read -> redact -> parse -> store, one batch at a time.

``Ingestor.ingest_file`` reads one source from its persisted cursor to the last complete
line, in chunks of ``chunk_bytes`` so that one huge file cannot starve the others, and hands
each chunk's records plus the cursor after it to the store as one transaction.  Parsing
(main thread) and committing (aiosqlite's thread, compression in a worker) overlap through
a small queue.  ``backfill`` does that for every file under every adapter root.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

import zstandard

from helixd.adapters import Adapter, Chunk, FileContext
from helixd.records import BadLine, Cursor, Parsed
from helixd.redact import redact
from helixd.store import Batch, Store
from helixd.tailer import (
    HEAD_BYTES,
    FileStat,
    fingerprint,
    head_of,
    read_at,
    resume_offset,
    stat_file,
    unchanged,
)

SIDECAR_MAX: Final = 64 * 1024
QUEUE_DEPTH: Final = 3


@dataclass(frozen=True, slots=True)
class Source:
    """A file some adapter claims, found under one of its roots."""

    adapter: Adapter
    root: str
    path: str
    rel: str


@dataclass(slots=True)
class IngestStats:
    files_seen: int = 0
    files_read: int = 0
    files_gone: int = 0
    bytes_read: int = 0
    lines: int = 0
    events: int = 0
    bad_lines: int = 0
    unknown_records: int = 0
    redactions: int = 0
    replaced: int = 0
    sessions: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        mb_s = self.bytes_read / 1e6 / self.seconds if self.seconds else 0.0
        return {
            "files": self.files_seen,
            "files_read": self.files_read,
            "files_gone": self.files_gone,
            "bytes": self.bytes_read,
            "lines": self.lines,
            "sessions": len(self.sessions),
            "events": self.events,
            "malformed_lines": self.bad_lines,
            "unknown_records": self.unknown_records,
            "redactions": self.redactions,
            "replaced_files": self.replaced,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "mb_per_s": round(mb_s, 1),
        }


def discover(roots: Iterable[tuple[Adapter, Path]]) -> Iterator[Source]:
    """Every file under each existing root that its adapter claims (no symlinked dirs)."""
    seen: set[str] = set()
    for adapter, root in roots:
        if not root.is_dir():
            continue
        root_s = str(root)
        for dirpath, dirnames, filenames in os.walk(root_s):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root_s).replace(os.sep, "/")
                if path not in seen and adapter.matches(rel):
                    seen.add(path)
                    yield Source(adapter, root_s, path, rel)


class _Writer:
    """Commits batches in order on a background task while the caller parses the next."""

    def __init__(self, store: Store, stats: IngestStats) -> None:
        self.store = store
        self.stats = stats
        self.queue: asyncio.Queue[Batch | None] = asyncio.Queue(QUEUE_DEPTH)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while (batch := await self.queue.get()) is not None:
            await asyncio.to_thread(batch.prepare)
            await self.store.commit(batch)

    async def put(self, batch: Batch) -> None:
        if self.task.done():
            self.task.result()  # re-raise the writer's failure in the producer
        await self.queue.put(batch)
        await asyncio.sleep(0)

    async def close(self) -> None:
        if not self.task.done():
            await self.queue.put(None)
        await self.task


class Ingestor:
    def __init__(
        self, store: Store, *, chunk_bytes: int = 4 << 20, max_line_bytes: int = 64 << 20
    ) -> None:
        self.store = store
        self.chunk_bytes = chunk_bytes
        self.max_line_bytes = max(max_line_bytes, chunk_bytes)

    async def backfill(
        self, sources: Iterable[Source], progress: Callable[[int, int], None] | None = None
    ) -> IngestStats:
        """Ingest every source once; unchanged files are skipped without being opened."""
        started = time.perf_counter()
        stats = IngestStats()
        cursors = await self.store.cursors()
        todo: list[tuple[Source, FileStat, Cursor | None]] = []
        seen: set[str] = set()
        for src in sources:
            stats.files_seen += 1
            seen.add(src.path)
            st = stat_file(src.path)
            cur = cursors.get(src.path)
            if st is None:
                continue
            if not unchanged(cur, st):
                todo.append((src, st, cur))
        total = sum(max(st.size - (c.offset if c else 0), 0) for _, st, c in todo)
        writer = _Writer(self.store, stats)
        done = 0
        try:
            for src, _st, cur in todo:
                before = stats.bytes_read
                await self._ingest(src, cur, writer, stats)
                done += stats.bytes_read - before
                if progress:
                    progress(done, total)
        finally:
            await writer.close()
        for path in cursors.keys() - seen:
            if not os.path.exists(path) and await self.store.mark_gone(path):
                stats.files_gone += 1
        stats.seconds = time.perf_counter() - started
        return stats

    async def ingest_file(self, src: Source, cursor: Cursor | None) -> IngestStats:
        stats = IngestStats(files_seen=1)
        started = time.perf_counter()
        writer = _Writer(self.store, stats)
        try:
            await self._ingest(src, cursor, writer, stats)
        finally:
            await writer.close()
        stats.seconds = time.perf_counter() - started
        return stats

    async def _carried_cursor(self, st: FileStat) -> Cursor | None:
        """A cursor that followed its file through a rename (same device and inode, old path
        gone).  The head fingerprint is checked by ``resume_offset`` afterwards."""
        for cur in await self.store.cursor_by_identity(st.dev, st.ino):
            if cur.path != st.path and not os.path.exists(cur.path):
                return Cursor(**{**_fields(cur), "path": st.path})
        return None

    async def _ingest(
        self, src: Source, cursor: Cursor | None, writer: _Writer, stats: IngestStats
    ) -> None:
        st = stat_file(src.path)
        if st is None:
            if cursor is not None and await self.store.mark_gone(src.path):
                stats.files_gone += 1
            return
        if cursor is None:
            cursor = await self._carried_cursor(st)
            if cursor is not None and unchanged(cursor, st):
                # Renamed and nothing new: only the path moves.
                parsed = Parsed(consumed=0, state=cursor.state)
                await writer.put(Batch(cursor=cursor, start=cursor.offset, raw=b"", parsed=parsed))
                return
        if unchanged(cursor, st):
            return
        try:
            f = open(src.path, "rb")  # noqa: SIM115 - closed below, kept open across awaits
        except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
            stats.errors.append(f"{src.path}: {exc}")
            return
        with f:
            await self._read_file(src, f, cursor, writer, stats)

    async def _read_file(
        self, src: Source, f: BinaryIO, cursor: Cursor | None, writer: _Writer, stats: IngestStats
    ) -> None:
        st = os.fstat(f.fileno())
        size = st.st_size
        head_len = cursor.head_len if cursor else 0
        head_hash = fingerprint(head_of(f, head_len)) if head_len else None
        before = read_at(f, cursor.offset - 1, 1) if cursor and cursor.offset else b""
        offset, replaced = resume_offset(cursor, size, head_hash, before)
        if src.adapter.whole_file(src.rel) and cursor is not None:
            offset, replaced = 0, True
        generation = (cursor.generation + (1 if replaced else 0)) if cursor else 0
        state: dict[str, Any] = {} if replaced or cursor is None else dict(cursor.state)
        if replaced:
            stats.replaced += 1
        new_head = head_of(f, min(size, HEAD_BYTES))
        ctx = FileContext(src.path, src.rel, _read_sidecar(src))
        stats.files_read += 1
        whole = src.adapter.whole_file(src.rel)
        # A document rewritten whole is parsed in one piece (up to the line cap).
        base_read = (
            min(max(size, self.chunk_bytes), self.max_line_bytes) if whole else (self.chunk_bytes)
        )
        read_size = base_read
        wrote = False
        while offset < size:
            data = read_at(f, offset, min(read_size, size - offset))
            if not data:
                break
            at_eof = offset + len(data) >= size
            cut = len(data) if at_eof else data.rfind(b"\n") + 1
            if cut == 0 and not at_eof:
                if read_size < self.max_line_bytes:
                    read_size = min(read_size * 2, self.max_line_bytes)
                    continue
                consumed = self._oversized(f, offset, size)
                if consumed == 0:
                    break
                parsed = Parsed(
                    consumed=consumed,
                    state=state,
                    bad=[
                        BadLine(
                            offset,
                            consumed,
                            f"line longer than {self.max_line_bytes} bytes (kept raw)",
                        )
                    ],
                )
                raw_z = _compress_range(f, offset, consumed)
                batch = Batch(
                    cursor=_cursor(
                        src,
                        st,
                        offset + consumed,
                        new_head,
                        generation,
                        state,
                        cursor,
                        seen=offset + consumed,
                    ),
                    start=offset,
                    raw=b"",
                    parsed=parsed,
                    raw_z=raw_z,
                )
                await writer.put(batch)
                wrote = True
                _account(stats, parsed, consumed, 0)
                offset += consumed
                continue
            read_size = base_read
            redacted, n_secrets = redact(data[:cut])
            parsed = src.adapter.parse(Chunk(redacted, offset, at_eof, ctx), state)
            if parsed.consumed == 0:
                break
            state = parsed.state
            raw = redacted[: parsed.consumed]
            batch = Batch(
                cursor=_cursor(
                    src,
                    st,
                    offset + parsed.consumed,
                    new_head,
                    generation,
                    state,
                    cursor,
                    seen=size if at_eof else offset + parsed.consumed,
                ),
                start=offset,
                raw=raw,
                parsed=parsed,
                redactions=n_secrets,
                replace_events=src.adapter.whole_file(src.rel),
            )
            await writer.put(batch)
            wrote = True
            _account(stats, parsed, parsed.consumed, n_secrets)
            offset += parsed.consumed
        if wrote:
            return
        # Nothing complete was new (empty file, partial last line): still record what we
        # saw, so that an unchanged file is skipped next time without being opened.
        if cursor is None or replaced or cursor.size != size or cursor.mtime_ns != st.st_mtime_ns:
            parsed = Parsed(consumed=0, state=state)
            await writer.put(
                Batch(
                    cursor=_cursor(src, st, offset, new_head, generation, state, cursor),
                    start=offset,
                    raw=b"",
                    parsed=parsed,
                )
            )

    def _oversized(self, f: BinaryIO, offset: int, size: int) -> int:
        """Length of the over-long line at ``offset`` including its newline; 0 if its end has
        not been written yet."""
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


def _fields(cur: Cursor) -> dict[str, Any]:
    return {name: getattr(cur, name) for name in Cursor.__dataclass_fields__}


def _cursor(
    src: Source,
    st: os.stat_result,
    offset: int,
    head: bytes,
    generation: int,
    state: dict[str, Any],
    previous: Cursor | None,
    seen: int | None = None,
) -> Cursor:
    """The cursor after a batch.  ``size`` records how much of the file was examined:
    the whole file once a read reached its end, else only up to the batch, so that a run
    killed between two batches is never mistaken for an unchanged file."""
    return Cursor(
        path=src.path,
        agent=src.adapter.name,
        root=src.root,
        dev=st.st_dev,
        ino=st.st_ino,
        size=st.st_size if seen is None else seen,
        mtime_ns=st.st_mtime_ns,
        offset=offset,
        head_hash=fingerprint(head),
        head_len=len(head),
        generation=generation,
        adapter_version=src.adapter.version,
        state=state,
        file_id=previous.file_id if previous else None,
    )


def _account(stats: IngestStats, parsed: Parsed, consumed: int, secrets: int) -> None:
    stats.bytes_read += consumed
    stats.lines += parsed.lines
    stats.events += len(parsed.events)
    stats.bad_lines += len(parsed.bad)
    stats.unknown_records += sum(parsed.unknown_types.values())
    stats.redactions += secrets
    stats.sessions.update(e.session_uid for e in parsed.events)
    stats.sessions.update(u.session_uid for u in parsed.usage)


def _compress_range(f: BinaryIO, offset: int, length: int) -> bytes:
    """Stream-compress ``length`` bytes at ``offset`` (secrets masked piece by piece)."""
    comp = zstandard.ZstdCompressor(level=3).compressobj()
    out: list[bytes] = []
    pos = offset
    while pos < offset + length:
        piece = read_at(f, pos, min(1 << 22, offset + length - pos))
        if not piece:
            break
        out.append(comp.compress(redact(piece)[0]))
        pos += len(piece)
    out.append(comp.flush())
    return b"".join(out)


def _read_sidecar(src: Source) -> bytes | None:
    name = src.adapter.sidecar(src.path)
    if name is None:
        return None
    with contextlib.suppress(OSError), open(name, "rb") as f:
        return f.read(SIDECAR_MAX)
    return None

"""The use case: files -> cursor -> bounded reads -> redact -> parse -> store, batch by batch.

A pipeline in three stages, so that two cores are used:

1. **plan** (this thread): for each file, decide where to resume (``tailer.resume_offset``:
   the cursor, or 0 for a truncated/replaced file) and cut it into pieces that end on line
   boundaries (``tailer.read_pieces``) — a few pieces ahead of the parser;
2. **redact** (in a thread: the scan does not hold the GIL): secrets are masked in place,
   a few pieces ahead of the parser;
3. **parse and commit**: the adapter turns the redacted piece into records; a writer task
   compresses the raw bytes (zstd releases the GIL) and commits records and cursor in one
   transaction on the store's thread.

For a backlog of at least ``pool_min_bytes`` (a first ingest, a catch-up), steps 2 and 3's
redaction, parse, row preparation and compression run in worker processes instead
(``helixd/ingest/parsepool.py``): this process then only reads and runs SQL, and the two
cores work side by side.  Smaller reads (a live append) are parsed inline: no process start.

Each file's pieces are parsed in order with the adapter state carried along; a crash
leaves whole batches only, and natural keys make any replay harmless.

Its parts: ``groupwriter.py`` (the writer task and its transactions), ``readahead.py`` (the
plan's items read in a thread, several per hop), ``fileruns.py`` (one file being read),
``fileplan.py`` (the plan's reads, file by file).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from helixd.adapters import Chunk
from helixd.adapters.guard import parse_total
from helixd.core.records import BadLine, Cursor, Parsed
from helixd.core.redact import redact
from helixd.ingest.fileplan import FilePlanner, skip_refused, stat_source
from helixd.ingest.fileruns import FileRun, Planned
from helixd.ingest.groupwriter import INLINE_REDACT, GroupWriter
from helixd.ingest.parsepool import ParsePool, PieceJob, default_workers
from helixd.ingest.readahead import LIVE_READ_AHEAD_ITEMS, READ_AHEAD_ITEMS, ReadAhead
from helixd.ingest.stats import IngestStats
from helixd.sources.discover import Discovery, Source, discover
from helixd.sources.gate import Refused
from helixd.sources.tailer import Piece, stat_file, unchanged
from helixd.store.database import Batch, Store

if TYPE_CHECKING:
    from helixd.core.pricing import PriceTable
    from helixd.ingest.digest import Builder

__all__ = ["IngestStats", "Ingestor", "Source", "SourceFailed", "discover"]

LOOKAHEAD: Final = 3
# Pieces in flight to the parse workers, bounded by their bytes: eight pieces of the median
# file (~0.3 MB) were less work than one group commit takes, so the workers waited while the
# writer committed; eight 4 MiB pieces held 32 MiB here.
POOL_AHEAD_BYTES: Final = 8 << 20
POOL_AHEAD_PIECES: Final = 64
POOL_MIN_BYTES: Final = 32 << 20  # a backlog this big is parsed by worker processes


class SourceFailed(Exception):
    """Reading one source file failed (its adapter raised): the error names the file, so
    that the daemon can hold that file back while the others go on."""

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(f"{path}: {type(cause).__name__}: {cause}")
        self.path = path
        self.cause = cause


class Ingestor(FilePlanner):
    """Reads sources into a store, ``chunk_bytes`` at a time; lines longer than
    ``max_line_bytes`` are kept raw without being parsed.  A backlog of ``pool_min_bytes``
    or more is parsed by ``workers`` processes (0: always inline)."""

    def __init__(
        self,
        store: Store,
        *,
        chunk_bytes: int = 4 << 20,
        max_line_bytes: int = 64 << 20,
        workers: int | None = None,
        pool_min_bytes: int = POOL_MIN_BYTES,
        keep_pool: bool = False,
    ) -> None:
        self.store = store
        self.chunk_bytes = chunk_bytes
        self.max_line_bytes = max(max_line_bytes, chunk_bytes)
        self.workers = default_workers() if workers is None else workers
        self.pool_min_bytes = pool_min_bytes
        self.pieces_to_workers = 0  # how many pieces worker processes parsed (all runs)
        # keep_pool: a backfill's parse workers stay up after it (``digest_builder``) until
        # ``close`` (``helixctl ingest``: they then build the digests)
        self.keep_pool = keep_pool
        self.pool: ParsePool | None = None
        self.digest_parts_to_workers = 0  # parts of the digests the kept workers built

    def digest_builder(self, db: Path, table: PriceTable) -> Builder | None:
        """The kept parse workers as the digests' builder (``digest.analyze`` with the same
        ``table``), ``None`` when the backfill started none (a small backlog) or the table
        cannot be sent: the digests are then built here."""
        return None if self.pool is None else self.pool.digest_builder(str(db), table)

    async def close(self) -> None:
        """End the parse workers kept after a backfill (``keep_pool``)."""
        pool, self.pool = self.pool, None
        if pool is not None:
            self.digest_parts_to_workers += pool.digest_parts
            await asyncio.to_thread(pool.close)

    async def backfill(
        self, sources: Iterable[Source], progress: Callable[[int, int], None] | None = None
    ) -> IngestStats:
        """Ingest every source once; unchanged files are skipped without being opened.
        Discovery, stats and reads run in worker threads (never on the event loop)."""
        started = time.perf_counter()
        stats = IngestStats()
        cursors = await self.store.cursors()
        todo, total, gone = await asyncio.to_thread(self._select, sources, cursors, stats)
        by_identity = {(c.dev, c.ino): c for c in cursors.values()}
        await self._run(todo, by_identity, stats, progress, total)
        for path in gone:
            if await self.store.mark_gone(path):
                stats.files_gone += 1
        stats.seconds = time.perf_counter() - started
        return stats

    def _select(
        self, sources: Iterable[Source], cursors: dict[str, Cursor], stats: IngestStats
    ) -> tuple[list[tuple[Source, Cursor | None]], int, list[str]]:
        """(in a worker thread) The sources that changed since their cursor, the bytes to
        read, and the tracked paths that are gone.  Walks ``sources``; a ``Discovery`` also
        reports what it could not read."""
        todo: list[tuple[Source, Cursor | None]] = []
        seen: set[str] = set()
        total = 0
        for src in sources:
            stats.files_seen += 1
            seen.add(src.path)
            cur = cursors.get(src.path)
            try:
                st = stat_source(src)
            except Refused as exc:
                skip_refused(stats, exc)
                continue
            if st is None:
                seen.discard(src.path)  # vanished since discovery: the sweep below marks it
            elif not unchanged(cur, st):
                todo.append((src, cur))
                total += max(st.size - (cur.offset if cur else 0), 0)
        if isinstance(sources, Discovery):
            for skip in sources.skipped:
                skip_refused(stats, Refused(skip.path, skip.reason, skip.detail))
        gone = [p for p in cursors.keys() - seen if not os.path.exists(p)]
        return todo, total, gone

    async def ingest_file(
        self, src: Source, cursor: Cursor | None, budget: int | None = None
    ) -> IngestStats:
        """Read what is new in one file (the daemon's path for one changed file), at most
        about ``budget`` bytes (``stats.more`` then says the caller should come back)."""
        return await self.ingest_files([(src, cursor)], budget)

    async def ingest_files(
        self, items: Sequence[tuple[Source, Cursor | None]], budget: int | None = None
    ) -> IngestStats:
        """Read what is new in several changed files in one run: their batches share
        transactions (the writer's group commit), each still with its own cursor.  At most
        about ``budget`` bytes per file (``stats.unfinished`` names those to come back to)."""
        started = time.perf_counter()
        items = list({src.path: (src, cursor) for src, cursor in reversed(items)}.values())[::-1]
        stats = IngestStats(files_seen=len(items))  # a file named twice is read once
        identity: dict[tuple[int, int], Cursor] = {}
        todo: list[tuple[Source, Cursor | None]] = []
        for src, cursor in items:
            if cursor is None:
                try:
                    st = await asyncio.to_thread(stat_file, src.path)
                except Refused as exc:
                    skip_refused(stats, exc)
                    continue
                if st is not None:
                    found = await self.store.cursor_by_identity(st.dev, st.ino)
                    identity.update({(c.dev, c.ino): c for c in found})
            todo.append((src, cursor))
        await self._run(todo, identity, stats, None, 0, budget, whole=True)
        stats.seconds = time.perf_counter() - started
        return stats

    async def _run(
        self,
        todo: list[tuple[Source, Cursor | None]],
        identity: dict[tuple[int, int], Cursor],
        stats: IngestStats,
        progress: Callable[[int, int], None] | None,
        total: int,
        budget: int | None = None,
        *,
        whole: bool = False,
    ) -> None:
        pool = self.pool
        if pool is None and self.workers and total >= self.pool_min_bytes:
            pool = ParsePool(self.workers)
            if self.keep_pool:
                self.pool = pool
        lookahead = POOL_AHEAD_PIECES if pool else LOOKAHEAD
        ahead_bytes = POOL_AHEAD_BYTES if pool else None  # inline: counted in pieces only
        writer = GroupWriter(self.store, whole=whole)
        window: deque[Planned] = deque()
        in_window = 0  # the bytes of the window's pieces
        gone: list[str] = []
        reads = ReadAhead(
            self._plan(todo, identity, stats, gone, budget),
            LIVE_READ_AHEAD_ITEMS if whole else READ_AHEAD_ITEMS,
        )
        try:
            while (item := await reads.next()) is not None:
                self._start(item, pool)
                window.append(item)
                in_window += _size(item)
                while len(window) > lookahead or (
                    ahead_bytes is not None and in_window > ahead_bytes and len(window) > 1
                ):
                    first = window.popleft()
                    in_window -= _size(first)
                    await self._consume(first, writer, stats)
                    if progress:
                        progress(stats.bytes_read, total)
            while window:
                await self._consume(window.popleft(), writer, stats)
        finally:
            for item in window:  # cancelled midway: let pending redactions finish quietly
                for pending in (item.redacted, item.done):
                    if isinstance(pending, asyncio.Future):
                        pending.cancel()
            await reads.close()
            try:
                await writer.close()
            finally:
                if pool is not None and pool is not self.pool:
                    await asyncio.to_thread(pool.close)
        stats.bad_lines += self.store.take_refused_lines()  # quarantined by the store
        for path in gone:
            if await self.store.mark_gone(path):
                stats.files_gone += 1
        if progress:
            progress(stats.bytes_read, total)

    def _start(self, item: Planned, pool: ParsePool | None) -> None:
        """Start what can run ahead of the parse: the whole parse in a worker process, or
        the redaction (in a thread when the piece is big enough to be worth the hop)."""
        piece = item.piece
        if piece is None or not piece.data:
            return
        if pool is not None:
            item.done = pool.submit(_job(pool, item.run, piece))
            self.pieces_to_workers += 1
        elif len(piece.data) < INLINE_REDACT:
            fut: asyncio.Future[tuple[bytes, int]] = asyncio.get_running_loop().create_future()
            fut.set_result(redact(piece.data))
            item.redacted = fut
        else:
            item.redacted = asyncio.get_running_loop().run_in_executor(None, redact, piece.data)

    async def _consume(self, item: Planned, writer: GroupWriter, stats: IngestStats) -> None:
        run, piece = item.run, item.piece
        if run.stalled:
            return
        if piece is None:
            await self._finish(run, writer)
            return
        if piece.oversized:
            parsed = Parsed(
                consumed=piece.oversized,
                state=run.state,
                bad=[
                    BadLine(
                        piece.offset,
                        piece.oversized,
                        f"line longer than {self.max_line_bytes} bytes (kept raw)",
                    )
                ],
            )
            end = piece.offset + piece.oversized
            await self._put(
                writer,
                stats,
                run,
                Batch(
                    cursor=run.cursor(end, end),
                    start=piece.offset,
                    raw=b"",
                    parsed=parsed,
                    raw_z=item.raw_z,
                    redactions=item.raw_z_secrets,
                ),
                item.raw_z_secrets,
            )
            return
        if item.done is None and item.redacted is None:
            return  # an empty piece: a database with no new row
        src = run.src
        rows = raw_z = None
        if item.done is not None:
            done = await item.done
            redacted = piece.data if done.redacted is None else done.redacted
            secrets, parsed, rows, raw_z = done.secrets, done.records(), done.rows, done.raw_z
        else:
            assert item.redacted is not None
            redacted, secrets = await item.redacted
            chunk = Chunk(redacted, piece.offset, piece.at_eof, run.ctx)
            parsed = parse_total(src.adapter, chunk, run.state)  # a line that raises: a bad line
        if parsed.consumed < len(redacted):
            run.stalled = True  # the rest is a partial line: later pieces no longer line up
        if parsed.consumed == 0:
            return
        if piece.marks is not None:
            run.marks = piece.marks
        run.state = parsed.state
        end = piece.offset + parsed.consumed
        dropped = rows is not None and raw_z is not None
        if dropped:
            raw = b""  # a worker's batch holds its block, not the bytes (``Batch.raw_dropped``)
        else:
            raw = redacted if parsed.consumed == len(redacted) else redacted[: parsed.consumed]
        seen = run.st.size if piece.at_eof else end
        batch = Batch(
            cursor=run.cursor(end, seen),
            start=piece.offset,
            raw=raw,
            parsed=parsed,
            redactions=secrets,
            # a database row read again was updated in place: its events take the new content
            replace_events=src.adapter.whole_file(src.rel) or bool(src.adapter.tables),
            rows=rows,
            raw_z=raw_z,  # compressed by a parse worker (else ``Batch.prepare`` does it)
            raw_dropped=dropped,
            sidecar=None if run.wrote else run.ctx.sidecar,  # kept by coalesce afterwards
        )
        await self._put(writer, stats, run, batch, secrets)

    async def _put(
        self, writer: GroupWriter, stats: IngestStats, run: FileRun, batch: Batch, secrets: int
    ) -> None:
        await writer.put(batch)
        run.wrote = True
        run.offset = batch.cursor.offset
        _account(stats, batch, secrets)

    async def _finish(self, run: FileRun, writer: GroupWriter) -> None:
        """Nothing complete was new (an empty file, a partial last line, a rename): still
        record what was seen, so that an unchanged file is skipped next time unopened."""
        prev, st = run.previous, run.st
        if run.wrote:
            return
        if (
            run.moved
            or prev is None
            or prev.generation != run.generation
            or (prev.size != st.size or prev.mtime_ns != st.mtime_ns)
        ):
            await writer.put(
                Batch(
                    cursor=run.cursor(run.offset, st.size),
                    start=run.offset,
                    raw=b"",
                    parsed=Parsed(consumed=0, state=run.state),
                )
            )


def _size(item: Planned) -> int:
    """The bytes a planned item holds while it is in flight."""
    return 0 if item.piece is None else len(item.piece.data)


def _job(pool: ParsePool, run: FileRun, piece: Piece) -> PieceJob:
    """The worker's job for a piece: the file's first carries its starting state (nothing
    has been parsed here yet), later ones go on from the worker's own copy."""
    first = run.token == 0
    if first:
        run.token = pool.token()
    return PieceJob(
        run.token,
        run.src.adapter.name,
        piece.data,
        piece.offset,
        piece.at_eof,
        run.ctx,
        dict(run.state) if first else None,
    )


def _account(stats: IngestStats, batch: Batch, secrets: int) -> None:
    """Count a batch; its events are its prepared rows when a parse worker made them."""
    parsed = batch.parsed
    stats.bytes_read += parsed.consumed
    stats.lines += parsed.lines
    stats.bad_lines += len(parsed.bad)
    stats.unknown_records += sum(parsed.unknown_types.values())
    stats.redactions += secrets
    if batch.rows is not None:
        stats.events += len(batch.rows)
        stats.sessions.update(r[0] for r in batch.rows)
    else:
        stats.events += len(parsed.events)
        stats.sessions.update(e.session_uid for e in parsed.events)
    stats.sessions.update(u.session_uid for u in parsed.usage)

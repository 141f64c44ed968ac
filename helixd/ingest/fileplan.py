"""The plan's reads, file by file (``Ingestor``'s first stage, ``ingest/pipeline.py``): each
source opened through the path gate, where to resume decided from its cursor (a rename
followed, a truncated or replaced file read again from 0) and its bytes cut into pieces on
line boundaries — a log file, a bundle with its members' directory, a SQLite database's new
rows from its watermarks.  Runs in a worker thread; a file that cannot be read is counted
and skipped."""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Generator, Iterator
from typing import BinaryIO, Final

from helixd.adapters import FileContext
from helixd.core.records import Cursor
from helixd.ingest.fileruns import MARKS, FileRun, Planned
from helixd.ingest.stats import IngestStats
from helixd.sources import bundle
from helixd.sources import sqlite as dbsource
from helixd.sources.discover import Source
from helixd.sources.gate import DENIED, READ_ERROR, SYMLINK, Refused, open_source, refusal
from helixd.sources.tailer import (
    HEAD_BYTES,
    FileStat,
    Piece,
    compress_range,
    fingerprint,
    head_of,
    masked_sidecar,
    read_at,
    read_pieces,
    resume_offset,
    stat_file,
    unchanged,
)
from helixd.store import agentdb

DB_READ_BYTES: Final = 32 << 20  # row lines read from an agent's database per snapshot


class FilePlanner:
    """The plan's methods; ``Ingestor`` sets the sizes they cut pieces to."""

    chunk_bytes: int
    max_line_bytes: int

    def _plan(
        self,
        todo: list[tuple[Source, Cursor | None]],
        identity: dict[tuple[int, int], Cursor],
        stats: IngestStats,
        gone: list[str],
        budget: int | None = None,
    ) -> Generator[Planned, None, None]:
        """(in a worker thread) Open each file in turn through the path gate, decide where
        to resume and yield its pieces.  A file that cannot be opened or read is counted
        and skipped; the pieces it gave before a read error keep their cursors."""
        for src, cursor in todo:
            try:
                st = stat_source(src)
            except Refused as exc:
                skip_refused(stats, exc)
                continue
            if st is None:
                if cursor is not None:
                    gone.append(src.path)
                continue
            if cursor is None:
                cursor = carried(identity, st)
                if cursor is not None and unchanged(cursor, st):  # renamed, nothing new
                    run = FileRun(
                        src=src,
                        st=st,
                        previous=cursor,
                        generation=cursor.generation,
                        head_hash=cursor.head_hash,
                        head_len=cursor.head_len,
                        ctx=FileContext(src.path, src.rel),
                        state=cursor.state,
                        offset=cursor.offset,
                        moved=True,
                    )
                    yield Planned(run, None)
                    continue
            try:
                yield from self._plan_file(src, cursor, stats, budget)
            except (Refused, OSError) as exc:
                refused = refusal(src.path, exc)
                skip_refused(stats, refused)
                if refused.reason in (DENIED, READ_ERROR):  # may pass: the daemon retries later
                    stats.failed[src.path] = f"{type(exc).__name__}: {exc}"

    def _plan_file(
        self, src: Source, cursor: Cursor | None, stats: IngestStats, budget: int | None
    ) -> Iterator[Planned]:
        """One file's pieces, then its closing item (not after a read error: a cursor
        saying "examined to the end" would skip the unread rest next time)."""
        if src.adapter.tables:
            yield from self._plan_db(src, cursor, stats)
            return
        if bundle.members_dir(src) is not None:
            yield from self._plan_bundle(src, cursor, stats)
            return
        with open_source(src.root, src.rel) as f:
            run = self._open(src, f, cursor, stats)
            for piece in read_pieces(
                f,
                run.offset,
                run.st.size,
                self.chunk_bytes,
                self.max_line_bytes,
                src.adapter.whole_file(src.rel),
            ):
                item = Planned(run, piece)
                if piece.oversized:
                    item.raw_z, item.raw_z_secrets = compress_range(
                        f, piece.offset, piece.oversized
                    )
                yield item
                if budget is not None:
                    budget -= len(piece.data) + piece.oversized
                    if budget <= 0 and not piece.at_eof:
                        stats.more = True
                        stats.unfinished.append(src.path)
                        break
        yield Planned(run, None)

    def _plan_bundle(
        self, src: Source, cursor: Cursor | None, stats: IngestStats
    ) -> Iterator[Planned]:
        """A file read with its directory of members (``helixd/sources/bundle.py``): one line
        per file, the whole bundle again on every change (a new generation, as a whole file)."""
        data, st = bundle.read_bundle(src)
        f = io.BytesIO(data)
        run = FileRun(
            src=src,
            st=st,
            previous=cursor,
            generation=(cursor.generation + 1) if cursor else 0,
            head_hash=b"",
            head_len=0,
            ctx=FileContext(src.path, src.rel, None),
            state={},
            offset=0,
        )
        stats.files_read += 1
        stats.replaced += cursor is not None
        for piece in read_pieces(f, 0, len(data), self.chunk_bytes, self.max_line_bytes, True):
            item = Planned(run, piece)
            if piece.oversized:
                item.raw_z, item.raw_z_secrets = compress_range(f, piece.offset, piece.oversized)
            yield item
        yield Planned(run, None)

    def _plan_db(self, src: Source, cursor: Cursor | None, stats: IngestStats) -> Iterator[Planned]:
        """A SQLite database's new rows as row lines (``helixd/sources/sqlite.py``), from the
        watermarks in its cursor.  A database under the same path with another inode is a
        new generation read from the start (its rows' natural keys keep the store free of
        duplicates)."""
        with open_source(src.root, src.rel) as f:  # the gate: a regular file, no link
            fst = os.fstat(f.fileno())
        st = dbsource.stat_db(src.path)
        if st is None or (st.dev, st.ino) != (fst.st_dev, fst.st_ino):
            return  # replaced while being looked at: the next change reads it
        replaced = cursor is not None and (cursor.dev, cursor.ino) != (st.dev, st.ino)
        state = {} if cursor is None or replaced else dict(cursor.state)
        marks = state.pop(MARKS, None)
        run = FileRun(
            src=src,
            st=st,
            previous=cursor,
            generation=(cursor.generation + replaced) if cursor else 0,
            head_hash=b"",
            head_len=0,
            ctx=FileContext(src.path, src.rel, sidecar_of(src, stats)),
            state=state,
            offset=cursor.offset if cursor and not replaced else 0,
            marks=marks if isinstance(marks, dict) else {},
        )
        stats.files_read += 1
        stats.replaced += replaced
        # The rows are read into memory (at most DB_READ_BYTES a time) and the read
        # transaction closed before anything is committed: a reader left open would hold
        # the agent's writer (rollback journal) or its checkpoints (WAL) for that long.
        resting = agentdb.at_rest(src.path)
        pieces: list[Piece] = []
        try:
            with agentdb.snapshot(src.path, (st.dev, st.ino)) as conn:
                rows = functools.partial(agentdb.rows, conn)
                taken = 0
                for piece in dbsource.read_rows(
                    rows, src.adapter.tables, run.marks or {}, run.offset, self.chunk_bytes
                ):
                    pieces.append(piece)
                    taken += len(piece.data)
                    if taken >= DB_READ_BYTES and not piece.at_eof:
                        stats.more = True  # the rest next time, from the watermarks reached
                        break
        except agentdb.Swapped:  # the name changed hands after the gate: nothing read is used
            if os.path.islink(src.path):
                skip_refused(stats, Refused(src.path, SYMLINK))
            return  # another file under the name: its own change reads it
        if resting and (agentdb.at_rest(src.path) is False or dbsource.stat_db(src.path) != st):
            return  # read without locks and the agent started meanwhile: read it again
        for piece in pieces:
            yield Planned(run, piece)
        yield Planned(run, None)

    def _open(self, src: Source, f: BinaryIO, cursor: Cursor | None, stats: IngestStats) -> FileRun:
        fst = os.fstat(f.fileno())
        st = FileStat(src.path, fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns)
        try:
            sidecar = masked_sidecar(src)
        except (Refused, OSError) as exc:  # a FIFO or a link named like it: counted, not read
            skip_refused(stats, refusal(src.path, exc))
            sidecar = None
        head = head_of(f, min(st.size, HEAD_BYTES))
        head_now = fingerprint(head)
        head_hash = None
        if cursor and cursor.head_len:  # the head as long as the cursor's (read once if equal)
            same = cursor.head_len == len(head)
            head_hash = head_now if same else fingerprint(head_of(f, cursor.head_len))
        before = read_at(f, cursor.offset - 1, 1) if cursor and cursor.offset else b""
        offset, replaced = resume_offset(cursor, st.size, head_hash, before)
        if src.adapter.whole_file(src.rel) and cursor is not None:
            offset, replaced = 0, True
        stats.files_read += 1
        stats.replaced += replaced
        return FileRun(
            src=src,
            st=st,
            previous=cursor,
            generation=(cursor.generation + replaced) if cursor else 0,
            head_hash=head_now,
            head_len=len(head),
            ctx=FileContext(src.path, src.rel, sidecar),
            state={} if replaced or cursor is None else dict(cursor.state),
            offset=offset,
        )


def sidecar_of(src: Source, stats: IngestStats) -> bytes | None:
    """The adapter's companion file, masked; one that cannot be read is counted, not read."""
    try:
        return masked_sidecar(src)
    except (Refused, OSError) as exc:
        skip_refused(stats, refusal(src.path, exc))
        return None


def stat_source(src: Source) -> FileStat | None:
    """A source's stat as the cursor compares it (a database with its ``-wal``)."""
    if src.adapter.tables:
        return dbsource.stat_db(src.path)
    return bundle.stat_bundle(src) if bundle.members_dir(src) is not None else stat_file(src.path)


def carried(identity: dict[tuple[int, int], Cursor], st: FileStat) -> Cursor | None:
    """A cursor that followed its file through a rename (same device and inode, old path
    gone).  The head fingerprint is checked by ``resume_offset`` afterwards."""
    cur = identity.get((st.dev, st.ino))
    if cur is not None and cur.path != st.path and not os.path.exists(cur.path):
        return cur._replace(path=st.path)
    return None


def skip_refused(stats: IngestStats, exc: Refused) -> None:
    """Count a source the gate refused (``IngestStats.skip``)."""
    stats.skip(exc.path, exc.reason, str(exc))

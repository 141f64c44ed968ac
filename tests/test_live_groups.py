"""Many files appended at once: the daemon's worker reads every ready path in one ingest run
(their batches share transactions, each with its own cursor) and rebuilds digests once
the queue is empty, not after each file.  The queue part on its own, then the real daemon
over real files."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from helixd.adapters.declared import claude
from helixd.core.commits import Commit
from helixd.daemon.workqueue import RECONCILE, QueueStats, WorkQueue
from helixd.ingest.pipeline import Ingestor, discover
from helixd.sources.gate import Source
from helixd.store.database import Store
from tests.daemon_helpers import Helixd, line, project, wait_for


async def test_take_ready_takes_ready_paths_not_tasks() -> None:
    q = WorkQueue(debounce=0)
    for item in ("/a", RECONCILE, "/b", "/c"):
        q.put(item)
    assert await q.get() == "/a"
    assert q.take_ready(1) == ["/b"]
    assert q.take_ready(10) == ["/c"]  # the task stays queued for the worker's next turn
    assert q.waiting() and q.statistics().in_progress == 3
    for _ in range(3):
        q.done()
    assert await q.get() == RECONCILE
    q.done()
    assert not q.busy()
    later = WorkQueue(debounce=30)
    later.put("/x")
    assert later.take_ready(5) == []  # not before its debounce
    assert later.statistics().in_progress == 0


def test_a_run_takes_the_paths_still_in_their_debounce_when_asked() -> None:
    """The worker's run also takes the paths whose debounce ends within ``early`` (one
    run, one commit, for files appended a few milliseconds apart); never a task, nor a
    path put for later than that."""
    q = WorkQueue(debounce=30)
    q.put("/x")
    q.put("/y")
    q.put(RECONCILE)
    q.put("/z", after=60)
    assert q.take_ready(5, early=1) == []
    assert q.take_ready(5, early=30) == ["/x", "/y"]
    assert q.statistics() == QueueStats(pending=2, in_progress=2, processed=0)


def sid(i: int) -> str:
    return f"{i:08d}-3333-4000-8000-000000000000"


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_files_appended_together_are_read_together(tmp_path: Path) -> None:
    home, db = tmp_path / "home", tmp_path / "helix.db"
    proj = project(home)
    files = [proj / f"{sid(i)}.jsonl" for i in range(40)]
    for i, f in enumerate(files):
        f.write_bytes(line(0, sid=sid(i)))
    d = Helixd(home, db).start()
    try:
        d.idle()
        for i, f in enumerate(files):
            with f.open("ab") as fh:
                fh.write(line(1, "assistant", sid=sid(i)) + line(2, sid=sid(i)))

        def all_read() -> bool:
            sizes = {str(f): f.stat().st_size for f in files}
            rows = stored(db, "SELECT path, offset FROM files")
            return sum(1 for p, o in rows if sizes.get(str(p)) == o) == len(files)

        wait_for(all_read, 60, "every append to be read")
        d.idle()
        moments = stored(db, "SELECT DISTINCT ingested_at FROM sessions")
        # one file at a time gives one transaction (one moment) each: 40 and more
        assert len(moments) <= 20, len(moments)
        counts = stored(db, "SELECT events FROM sessions")
        assert sorted(c for (c,) in counts) == [3] * len(files)
        wait_for(
            lambda: (
                not stored(
                    db,
                    "SELECT id FROM sessions WHERE analyzed_at IS NULL OR changed_at > analyzed_at",
                )
            ),
            30,
            "every digest to be rebuilt",
        )
    finally:
        assert d.stop() == 0, d.stderr


async def test_an_item_put_for_later_keeps_the_queue_busy_without_blocking_others() -> None:
    q = WorkQueue(debounce=0)
    q.put("\0digests", after=0.3)
    q.put("/a")
    started = time.monotonic()
    assert await q.get() == "/a"  # not held up behind the later item
    assert time.monotonic() - started < 0.2
    q.done()
    assert q.busy()  # the later item is pending: `flush` waits for it
    assert await asyncio.wait_for(q.get(), 1) == "\0digests"
    assert time.monotonic() - started >= 0.25
    q.done()
    assert not q.busy()


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor, counting the thread hops made through it."""

    hops = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.hops += 1
        return super().submit(fn, *args, **kwargs)


async def test_a_run_of_changed_files_commits_once_with_few_thread_hops(
    store: Store, tmp_path: Path
) -> None:
    """The daemon's run of 40 changed files: every file's rows and cursor in one
    transaction (one commit, not one per few batches) and a handful of thread hops (the
    reads several files a hop, small batches prepared without a hop)."""
    sources = await _ingested_then_appended(store, tmp_path, 40)
    commits: list[Commit] = []
    store.on_commit = commits.append
    counting = CountingExecutor(max_workers=4)
    asyncio.get_running_loop().set_default_executor(counting)
    known = await store.cursors_for([s.path for s in sources])
    stats = await Ingestor(store, workers=0).ingest_files([(s, known[s.path]) for s in sources])
    assert stats.events == 80 and stats.files_read == 40
    assert len(commits) == 1, len(commits)
    assert counting.hops == 1, counting.hops  # the reads: 128 items a hop; was 45
    rows = await store.db.execute("SELECT count(*), count(DISTINCT file_id) FROM events")
    assert rows == [(120, 40)]
    offsets = dict(await store.db.execute("SELECT path, offset FROM files"))
    assert all(offsets[str(f)] == f.stat().st_size for f in map(Path, (s.path for s in sources)))


async def test_a_live_run_whose_commit_fails_raises_and_does_not_hang(tmp_path: Path) -> None:
    """The store locked by another process's writer: the run's one commit fails after the
    busy timeout and the error reaches the caller (the worker then backs off); the
    writer task had taken the end of the batches with them and used to wait for it."""
    db = tmp_path / "helix.db"
    store = await Store.open(db, busy_ms=50)
    try:
        proj = project(tmp_path / "home")
        f = proj / f"{sid(0)}.jsonl"
        f.write_bytes(line(0, sid=sid(0)))
        src = next(iter(discover([(claude.ADAPTER, proj.parent)])))
        await Ingestor(store, workers=0).ingest_files([(src, None)])
        with f.open("ab") as fh:
            fh.write(line(1, "assistant", sid=sid(0)))
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            cursor = await store.cursor_for(str(f))
            with pytest.raises(Exception, match="locked"):
                await asyncio.wait_for(Ingestor(store, workers=0).ingest_files([(src, cursor)]), 10)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert (await store.cursor_for(str(f))) == cursor  # nothing half-written
    finally:
        await store.close()


async def test_a_live_run_with_an_event_no_row_can_be_made_of_quarantines_that_line(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small live batch is prepared on the loop: an event that cannot become a row must
    not end the run (the file would never be read again); the write prepares the batch
    again and quarantines that one line, the others are stored and the cursor moves on."""
    from helixd.store import batch, salvage

    real = batch.prepare_event

    def refuse_poison(ev: Any) -> Any:
        if "poison" in str(getattr(ev, "body", "") or ""):
            raise TypeError("no row for this event")
        return real(ev)

    monkeypatch.setattr(batch, "prepare_event", refuse_poison)
    monkeypatch.setattr(salvage, "prepare_event", refuse_poison)
    proj = project(tmp_path / "home")
    f = proj / f"{sid(0)}.jsonl"
    f.write_bytes(line(0, sid=sid(0)))
    src = next(iter(discover([(claude.ADAPTER, proj.parent)])))
    await Ingestor(store, workers=0).ingest_files([(src, None)])
    with f.open("ab") as fh:
        fh.write(line(1, text="poison", sid=sid(0)) + line(2, text="fine", sid=sid(0)))
    cursor = await store.cursor_for(str(f))
    await asyncio.wait_for(Ingestor(store, workers=0).ingest_files([(src, cursor)]), 30)
    texts = [t for (t,) in await store.db.execute("SELECT body FROM events ORDER BY seq")]
    assert "fine" in " ".join(str(t) for t in texts)
    assert not any("poison" in str(t) for t in texts)
    assert (await store.cursor_for(str(f))).offset == f.stat().st_size  # type: ignore[union-attr]
    bad = await store.db.execute("SELECT count(*) FROM bad_lines")
    assert bad == [(1,)], bad


async def test_a_live_batch_writes_its_cursor_with_its_counters_and_reuses_next_seq(
    store: Store, tmp_path: Path
) -> None:
    """Per file of a live run the writer updates the ``files`` row once (cursor and
    counters in one statement, was two) and takes the session's ``next_seq`` from the
    upsert that returned it (was a second look-up): the rows are those of before — seqs
    without gaps, counters and cursor right."""
    sources = await _ingested_then_appended(store, tmp_path, 5)
    files = [Path(s.path) for s in sources]
    statements: list[str] = []
    await store.call(lambda con: con.set_trace_callback(statements.append))
    try:
        known = await store.cursors_for([s.path for s in sources])
        await Ingestor(store, workers=0).ingest_files([(s, known[s.path]) for s in sources])
    finally:
        await store.call(lambda con: con.set_trace_callback(None))
    assert sum(s.startswith("UPDATE files") for s in statements) == len(files), statements
    assert not [s for s in statements if s.startswith("SELECT next_seq")]
    rows = await store.db.execute(
        "SELECT s.events, s.next_seq, count(e.id), min(e.seq), max(e.seq), f.lines, f.offset,"
        " f.size FROM sessions s JOIN events e ON e.session_id = s.id"
        " JOIN files f ON f.session_id = s.id GROUP BY s.id"
    )
    sizes = {f.stat().st_size for f in files}
    assert len(rows) == len(files)
    for events, next_seq, count, first, last, lines, offset, size in rows:
        assert (events, next_seq, count, first, last, lines) == (3, 3, 3, 0, 2, 3), rows
        assert offset == size and size in sizes


async def test_a_live_read_reads_the_head_of_each_file_once(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's head (its fingerprint, checked against the cursor's and stored with the
    new one) is read once per file read when it is as long as the cursor's (was twice);
    a file rewritten under the cursor is still read again from the start."""
    from helixd.ingest import fileplan

    proj = project(tmp_path / "home")
    files = [proj / f"{sid(i)}.jsonl" for i in range(3)]
    for i, f in enumerate(files):
        f.write_bytes(line(0, text="x" * 2000, sid=sid(i)))  # past the 1 KiB head
    sources = list(discover([(claude.ADAPTER, proj.parent)]))
    await Ingestor(store, workers=0).backfill(sources)
    for i, f in enumerate(files[:2]):
        with f.open("ab") as fh:
            fh.write(line(1, "assistant", sid=sid(i)))
    files[2].write_bytes(line(0, text="y" * 2000, sid=sid(2)))  # rewritten, same size
    reads: list[int] = []
    real = fileplan.head_of

    def counted(f: Any, length: int) -> bytes:
        reads.append(length)
        return real(f, length)

    monkeypatch.setattr(fileplan, "head_of", counted)
    known = await store.cursors_for([s.path for s in sources])
    stats = await Ingestor(store, workers=0).ingest_files([(s, known[s.path]) for s in sources])
    assert len(reads) == len(files), reads
    assert stats.replaced == 1 and stats.events == 3, stats
    rows = await store.db.execute("SELECT generation, offset, size FROM files ORDER BY path")
    assert [r[0] for r in rows] == [0, 0, 1]
    assert all(offset == size for _, offset, size in rows)


async def _ingested_then_appended(store: Store, tmp_path: Path, n: int) -> list[Source]:
    """``n`` Claude sessions of one line each, ingested, then two lines appended to each:
    the changed files a daemon's live run gets."""
    proj = project(tmp_path / "home")
    files = [proj / f"{sid(i)}.jsonl" for i in range(n)]
    for i, f in enumerate(files):
        f.write_bytes(line(0, sid=sid(i)))
    sources = list(discover([(claude.ADAPTER, proj.parent)]))
    await Ingestor(store, workers=0).backfill(sources)
    for i, f in enumerate(files):
        with f.open("ab") as fh:
            fh.write(line(1, "assistant", sid=sid(i)) + line(2, sid=sid(i)))
    return sources

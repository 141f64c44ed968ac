"""The writer alone: the SQL of a first ingest (the store thread, the critical path of a
backlog), measured on recorded batches so that the parse, the workers and the machine's
other load do not blur it.

``--record FILE`` ingests the corpus once (``Ingestor.backfill``, parsed inline) and keeps
every group commit's batches, prepared (rows made, raw compressed), in ``FILE`` (pickle).
Then each run replays the recorded groups into a fresh store, in the same order and
grouping, and prints the store thread's CPU (``time.thread_time``) for the commits, its
wall time and the bytes the process wrote to storage meanwhile (``/proc/self/io``: the WAL
and the checkpoints' copies into the store file); ``--max-cpu`` exits 1 above that many
seconds, ``--max-written`` above that many MB (medians of the runs).

Two experiments measure what the "not done" items of issue 12 would save before anyone
builds them (see docs/performance.md, fourth pass): ``--defer-fts memory`` holds every
full-text entry back and writes them all in one transaction at the end (one bulk pass: the
bound of what deferring can save), ``--defer-fts table`` the crash-safe form (each
transaction writes its entries into a plain pending table, the bulk pass moves them into
the index and empties it), and
``--late-indexes`` drops the ``events`` secondary indexes before the replay and builds them
after it.  Both costs (the bulk pass, the index build) are counted in the figure.

    .venv/bin/python bench/gen_corpus.py --size 200MB --agent both --out /tmp/x/c200
    .venv/bin/python bench/writer_sql.py /tmp/x/c200 --record /tmp/x/groups.pickle --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


async def record(home: Path, out: Path) -> None:
    from helixd.adapters.declared import claude, codex
    from helixd.ingest.pipeline import Ingestor, discover
    from helixd.store.database import Batch, Store

    groups: list[list[Batch]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(Path(tmp) / "rec.db") as store:
            commit_many = store.commit_many

            async def keep(batches: Sequence[Batch]) -> list[int]:
                for batch in batches:
                    batch.prepare()
                groups.append(list(batches))
                return await commit_many(batches)

            store.commit_many = keep  # type: ignore[method-assign]
            roots = [
                (claude.ADAPTER, home / ".claude" / "projects"),
                (codex.ADAPTER, home / ".codex" / "sessions"),
            ]
            await Ingestor(store, workers=0).backfill(discover(roots))
    with out.open("wb") as f:
        pickle.dump(groups, f, protocol=pickle.HIGHEST_PROTOCOL)
    print(f"recorded {len(groups)} group commits, {sum(map(len, groups))} batches -> {out}")


_EVENT_INDEXES = {
    "events_seq": "CREATE INDEX events_seq ON events (session_id, seq)",
    "events_anchor": "CREATE INDEX events_anchor ON events (session_id, akey)",
}


def written_bytes() -> int:
    """Bytes this process has caused to be written to storage so far (``/proc/self/io``)."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


async def replay(
    groups: list[list[Any]],
    pragmas: Sequence[str],
    defer_fts: str | None = None,
    late_indexes: bool = False,
) -> tuple[float, float, int, int]:
    from helixd.store.database import Store, now_ms

    with tempfile.TemporaryDirectory() as tmp:
        async with await Store.open(Path(tmp) / "w.db") as store:
            writer = store._writer
            for pragma in pragmas:  # an experiment: e.g. --pragma "wal_autocheckpoint = 0"
                await store.run(writer.con.execute, f"PRAGMA {pragma}")

            held: list[tuple[int, str]] = []
            if defer_fts:  # the experiment: the writer's flush keeps the entries aside
                search = writer.search
                con = writer.con

                def hold_back() -> None:
                    if defer_fts == "table":
                        con.executemany("INSERT INTO search_pending VALUES (?, ?)", search.pending)
                    else:
                        held.extend(search.pending)
                    search.pending = []

                search.flush = hold_back  # type: ignore[method-assign]

            def run_all() -> float:
                if defer_fts == "table":  # (not counted: a migration would make it)
                    con.execute("CREATE TABLE search_pending (id INTEGER PRIMARY KEY, text TEXT)")
                start = time.thread_time()
                if late_indexes:
                    for name in _EVENT_INDEXES:
                        writer.con.execute(f"DROP INDEX {name}")
                for group in groups:
                    writer.commit_many(group, now_ms())
                if defer_fts:  # the bulk pass
                    writer.con.execute("BEGIN IMMEDIATE")
                    if defer_fts == "table":
                        writer.con.execute(
                            "INSERT INTO search (rowid, text) SELECT id, text FROM search_pending"
                        )
                        writer.con.execute("DELETE FROM search_pending")
                    else:
                        writer.con.executemany(
                            "INSERT INTO search (rowid, text) VALUES (?, ?)", held
                        )
                    writer.con.execute("COMMIT")
                if late_indexes:
                    writer.con.execute("BEGIN IMMEDIATE")
                    for sql in _EVENT_INDEXES.values():
                        writer.con.execute(sql)
                    writer.con.execute("COMMIT")
                # what is left in the WAL is copied at the close: part of the cost
                writer.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return time.thread_time() - start

            t0, w0 = time.perf_counter(), written_bytes()
            cpu = await store.run(run_all)
            wall, written = time.perf_counter() - t0, written_bytes() - w0
        size = os.path.getsize(Path(tmp) / "w.db")
    return cpu, wall, size, written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("home", type=Path, help="a corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--record", type=Path, required=True, help="the recorded batches (pickle)")
    ap.add_argument("--again", action="store_true", help="record again even if the file exists")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pragma", action="append", default=[], help="PRAGMA to set first")
    ap.add_argument(
        "--defer-fts",
        choices=("memory", "table"),
        default=None,
        help="experiment: one full-text pass at the end (entries held in memory / a table)",
    )
    ap.add_argument(
        "--late-indexes", action="store_true", help="experiment: build events indexes after"
    )
    ap.add_argument("--max-cpu", type=float, default=None, help="exit 1 above (median, s)")
    ap.add_argument(
        "--max-written", type=float, default=None, help="exit 1 above (median, MB written)"
    )
    args = ap.parse_args()
    os.environ.setdefault("TZ", "UTC")
    if args.again or not args.record.exists():
        asyncio.run(record(args.home.resolve(), args.record))
    with args.record.open("rb") as f:
        groups = pickle.load(f)
    cpus, writes = [], []
    for n in range(args.runs):
        cpu, wall, size, written = asyncio.run(
            replay(groups, args.pragma, args.defer_fts, args.late_indexes)
        )
        cpus.append(cpu)
        writes.append(written / 1e6)
        print(
            f"run {n + 1}: store thread {cpu:.2f} s CPU, {wall:.2f} s wall,"
            f" wrote {written / 1e6:.0f} MB, store {size / 1e6:.0f} MB"
            f" (load {os.getloadavg()[0]:.1f})"
        )
    median, median_written = statistics.median(cpus), statistics.median(writes)
    print(
        f"median store-thread CPU {median:.2f} s, written {median_written:.0f} MB"
        f" over {len(cpus)} runs"
    )
    missed = False
    if args.max_cpu is not None and median > args.max_cpu:
        print(f"MISS: {median:.2f} s > {args.max_cpu} s")
        missed = True
    if args.max_written is not None and median_written > args.max_written:
        print(f"MISS: {median_written:.0f} MB written > {args.max_written} MB")
        missed = True
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

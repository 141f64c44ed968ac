"""Digest rebuilds while files are busy are spaced by their own cost (``DigestPace``) and
taken in parts, in turn (``DigestTurns``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from helixd.adapters.declared import claude
from helixd.daemon.health import FileFailures, StoreHealth
from helixd.daemon.pacing import EVERY, PART, SHARE_INVERSE, DigestPace, DigestTurns, in_turns
from helixd.daemon.scheduler import Scheduler
from helixd.daemon.storeguard import StoreGuard
from helixd.daemon.worker import Limits, Worker
from helixd.daemon.workqueue import WorkQueue
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.sources.gate import Gate
from helixd.store.database import Store, now_ms
from tests.daemon_helpers import line, project


def test_the_first_rebuild_and_one_after_a_quiet_spell_run_at_once() -> None:
    pace = DigestPace()
    assert pace.wait(0.0) == 0.0
    pace.ran(10.0, 10.05)
    assert pace.wait(100.0) == 0.0


def test_a_cheap_rebuild_waits_the_floor_of_a_second() -> None:
    pace = DigestPace()
    pace.ran(10.0, 10.01)
    assert abs(pace.wait(10.01) - (EVERY - 0.01)) < 1e-9
    assert pace.wait(11.0) == 0.0


def test_a_costly_rebuild_waits_ten_times_its_cost() -> None:
    """A rebuild of big busy sessions that took 0.6 s: the next starts 6 s after it started
    (digests take a tenth of the worker's time, the reads the rest)."""
    pace = DigestPace()
    pace.ran(10.0, 10.6)
    assert SHARE_INVERSE == 10
    assert abs(pace.wait(10.6) - 5.4) < 1e-9
    assert abs(pace.wait(15.0) - 1.0) < 1e-9
    assert pace.wait(16.0) == 0.0
    pace.ran(16.0, 16.02)  # the sessions went quiet: the pace is the floor again
    assert abs(pace.wait(16.02) - 0.98) < 1e-9


def test_turns_take_a_part_of_the_stale_sessions_round_and_round() -> None:
    """While files wait, a rebuild takes ``part`` stale sessions after the last one taken
    (wrapping round): every busy session has its turn, none waits behind all the others."""
    turns = DigestTurns()
    ids = [9, 3, 7, 1, 5]
    assert turns.pick(ids, 2) == [1, 3] and turns.left == 3
    assert turns.pick(ids, 2) == [5, 7] and turns.left == 3
    assert turns.pick(ids, 2) == [9, 1] and turns.left == 3  # round again
    assert turns.pick(ids, 2) == [3, 5]
    assert turns.pick([2, 4], 2) == [2, 4] and turns.left == 0  # all fit: all of them
    assert turns.pick(ids, None) == ids and turns.left == 0  # nothing waits: all at once


async def test_while_files_wait_the_worker_rebuilds_a_part_and_queues_the_rest(
    tmp_path: Path,
) -> None:
    """The real worker over a real store of 20 stale sessions: while a path waits in the
    queue, one rebuild takes ``PART`` sessions and queues a ``DIGESTS`` item for the rest
    (a read waits behind 8 sessions' digests, not 20); once nothing waits, the rest at
    once."""
    home, db = tmp_path / "home", tmp_path / "helix.db"
    proj = project(home)
    uids = [f"{i:08d}-4444-4000-8000-000000000000" for i in range(20)]
    for uid in uids:
        (proj / f"{uid}.jsonl").write_bytes(b"".join(line(n, sid=uid) for n in range(3)))
    gate = Gate([(claude.ADAPTER, home / ".claude" / "projects")])
    store = await Store.open(db)
    try:
        await Ingestor(store, workers=0).backfill(discover(gate))

        async def analyze(
            s: Store, max_events: int | None, pick: Callable[[list[int]], list[int]] | None
        ) -> int:
            ids = await s.sessions_to_analyze(now_ms(), 60_000, max_events)
            return await digest.analyze(s, pick(ids) if pick else ids, now_ms())

        queue = WorkQueue(debounce=0)
        worker = Worker(
            db,
            queue,
            StoreGuard(db, 5_000, lambda _reason: None),
            StoreHealth(),
            FileFailures(),
            Scheduler(),
            lambda: gate,
            lambda: Limits(1 << 20, 1 << 20, 1 << 20),
            analyze,
        )
        queue.put(str(proj / f"{uids[0]}.jsonl"))  # a file waits to be read
        await worker._digests(store)
        assert await store.run(_digested, store.con) == PART
        assert queue.statistics().pending == 2  # the path, and the digests' next part
        await worker._digests(store)
        assert await store.run(_digested, store.con) == 2 * PART
        assert await queue.get() == str(proj / f"{uids[0]}.jsonl")
        queue.done()
        await worker._digests(store)  # nothing waits now: the rest in one go
        assert await store.run(_digested, store.con) == len(uids)
    finally:
        await store.close()


def _digested(con: sqlite3.Connection) -> int:
    return int(con.execute("SELECT count(*) FROM digests").fetchone()[0])


async def test_the_scheduled_pass_goes_one_round_in_parts_while_files_wait() -> None:
    """``in_turns`` (the scheduled digest pass): 20 sessions that go stale again as soon as
    they are rebuilt (busy) — in parts of 8 while files wait: three parts, then it stops
    (one round, not "until none is stale", which never comes); nothing waiting: one go."""
    stale = list(range(100, 120))
    parts: list[list[int]] = []

    async def analyze(pick: Callable[[list[int]], list[int]]) -> int:
        taken = pick(list(stale))  # busy sessions: all of them stale again
        parts.append(taken)
        return len(taken)

    assert await in_turns(analyze, lambda: PART) == 20
    assert [len(p) for p in parts] == [8, 8, 4]
    assert sorted(i for p in parts for i in p) == stale  # every session once, in turn
    parts.clear()
    assert await in_turns(analyze, lambda: None) == 20
    assert parts == [stale]


async def test_the_scheduled_pass_reaches_a_session_stale_behind_busier_ones() -> None:
    """A session stale when the pass starts is rebuilt in that pass even when sessions ahead
    of it in id order keep going stale meanwhile (busy ones the worker's inline rebuilds had
    just taken): the round follows the sessions stale at its start, it does not count
    rebuilds (counting let the busy ones use the round up, and the big session 99 — which
    only this pass rebuilds — was passed over on every pass)."""
    busy = list(range(1, 41))
    state = {"calls": 0}
    parts: list[list[int]] = []

    async def analyze(pick: Callable[[list[int]], list[int]]) -> int:
        state["calls"] += 1
        # at the start only eight busy sessions (just appended to) and session 99 are stale;
        # from the second part on, every busy one is stale again
        now_stale = [*busy[:8], 99] if state["calls"] == 1 else [*busy, 99]
        taken = pick(now_stale)
        parts.append(taken)
        return len(taken)

    assert await in_turns(analyze, lambda: PART) == 9
    assert parts == [busy[:8], [99]]

"""The dashboard's tool figures read in one pass: calls per time slot by status equal a count
over the ``tool_calls`` facts, in any UTC offset (whole hours or not, either side of UTC),
with and without a time range, on a real store."""

from __future__ import annotations

import random
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from helixd.ingest import digest
from helixd.query import metrics, open_reader, signal_metrics
from helixd.store import signal_queries as sq
from helixd.store import tool_rollup
from helixd.store.database import Store, now_ms
from tests.agent_helpers import ingest_in_steps

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
STATUSES = ("success", "error", "rejected", "interrupted", "missing")


async def _store_with_calls(path: Path) -> list[tuple[int | None, str]]:
    store = await Store.open(path)
    await store.close()
    rng = random.Random(13)
    base = 1_763_000_000_000
    rows: list[tuple[int | None, str]] = []
    for _ in range(3000):
        ts = base + rng.randrange(-40 * DAY_MS, 40 * DAY_MS)
        rows.append((ts, rng.choice(STATUSES)))
    # edges: day boundaries, unknown times, the epoch itself
    rows += [(base - base % DAY_MS, "success"), (base - base % DAY_MS - 1, "error")]
    rows += [(None, "success"), (0, "missing"), (1, "success")]
    con = sqlite3.connect(path)
    with con:
        con.execute(
            "INSERT INTO sessions (id, uid, agent, native_id, discovered_at, messages)"
            " VALUES (1, 'claude:s', 'claude', 's', 0, 1)"
        )
        con.executemany(
            "INSERT INTO tool_calls (session_id, call_seq, ts, tool, target, status,"
            " duration_ms) VALUES (1, ?, ?, ?, '', ?, ?)",
            [(i, ts, "Bash" if i % 3 else "Read", st, i % 700) for i, (ts, st) in enumerate(rows)],
        )
        tool_rollup.refresh(con, [1])  # what the analyze pass does after writing the calls
    con.close()
    return rows


def _truth(
    rows: list[tuple[int | None, str]], lo: int, hi: int, step_s: int, offset_s: int
) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for ts, st in rows:
        if ts is not None and lo <= ts < hi:
            slot = (ts + offset_s * 1000) // (step_s * 1000)
            out[slot][st] = out[slot].get(st, 0) + 1
    return out


async def test_tool_calls_per_slot_equal_a_count_of_the_facts(tmp_path: Path) -> None:
    rows = await _store_with_calls(tmp_path / "s.db")
    con = open_reader(tmp_path / "s.db")
    try:
        timed = [ts for ts, _ in rows if ts is not None and ts > 0]
        span = (min(timed), max(timed) + 1)
        cases = [
            metrics.Scope(),
            metrics.Scope(since=span[0] + 5 * DAY_MS + 1234, until=span[0] + 20 * DAY_MS),
            metrics.Scope(since=0, until=span[0] + 3 * DAY_MS),  # the epoch, west of UTC
        ]
        for sc in cases:
            lo = sc.since if sc.since is not None else span[0]
            hi = sc.until if sc.until is not None else span[1]
            for step, step_s in (("day", 86_400), ("hour", 3_600), ("week", 604_800)):
                for offset_s in (0, 3_600, -19_800, 20_700, -36_000):
                    doc = signal_metrics.tools(con, sc, step, offset_s)
                    want = _truth(rows, lo, hi, step_s, offset_s)
                    first = (lo // 1000 + offset_s) // step_s
                    want = {s: v for s, v in want.items() if first <= s < first + 400}
                    got = {o["slot"]: o["by_status"] for o in doc["over_time"]}
                    assert got == want, (sc, step, offset_s)
                    assert [o["slot"] for o in doc["over_time"]] == sorted(want)
    finally:
        con.close()


def _rollup_matches_the_calls(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        kept = sorted(con.execute("SELECT * FROM tool_call_hours"))
        truth = sorted(con.execute(tool_rollup.SUMS.format(where="")))
        assert kept == truth
        return len(kept)
    finally:
        con.close()


async def test_tool_call_hours_equal_the_calls_on_the_real_corpus(tmp_path: Path) -> None:
    """Incremental == batch: analyzed in several passes as files arrive (and a session
    analyzed again), the rollup equals a GROUP BY over the calls; the tool figures from it
    equal those from the calls themselves."""
    store = await Store.open(tmp_path / "s.db")

    async def analyze_and_check() -> None:
        await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
        _rollup_matches_the_calls(store.path)

    try:
        await ingest_in_steps(store, tmp_path, ("claude", "codex"), 4, analyze_and_check)
        await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
        assert _rollup_matches_the_calls(store.path) > 20
    finally:
        await store.close()
    con = open_reader(tmp_path / "s.db")
    try:
        calls = con.execute(
            "SELECT t.ts, t.tool, t.status, t.duration_ms, s.agent FROM tool_calls t"
            " JOIN sessions s ON s.id = t.session_id"
        ).fetchall()
        timed = [ts for ts, *_ in calls if ts is not None and ts > 0]
        span = (min(timed), max(timed) + 1)
        mid = (span[0] + span[1]) // 2
        for sc in (
            metrics.Scope(),
            metrics.Scope(since=mid - mid % HOUR_MS, until=span[1] - span[1] % HOUR_MS + HOUR_MS),
            metrics.Scope(agents=("claude",)),
        ):
            assert sq._hourly(sc)  # the rollup answers
            mine = [
                c
                for c in calls
                if (not sc.agents or c[4] in sc.agents)
                and (sc.since is None or (c[0] is not None and c[0] >= sc.since))
                and (sc.until is None or (c[0] is not None and c[0] < sc.until))
            ]
            stats: dict[tuple[str, str], list[Any]] = {}
            for _ts, tool, status, dur, _agent in mine:
                st = stats.setdefault((tool, status), [0, 0, 0, None])
                st[0] += 1
                if dur is not None:
                    st[1] += 1
                    st[2] += dur
                    st[3] = dur if st[3] is None else max(st[3], dur)
            assert sorted(sq.tools(con, sc)) == sorted((*k, *v) for k, v in stats.items())
            lo = sc.since if sc.since is not None else span[0]
            hi = sc.until if sc.until is not None else span[1]
            for offset_s in (0, 3_600, -18_000):
                want = _truth([(c[0], c[2]) for c in mine], lo, hi, 86_400, offset_s)
                got: dict[int, dict[str, int]] = defaultdict(dict)
                for slot, status, n in sq.tools_per_slot(con, sc, lo, hi, 86_400, offset_s):
                    got[slot][status] = n
                assert got == want and got
    finally:
        con.close()


async def test_the_migration_fills_the_rollup_of_an_existing_store(tmp_path: Path) -> None:
    await _store_with_calls(tmp_path / "s.db")
    con = sqlite3.connect(tmp_path / "s.db")
    with con:  # the store as a Helix before m015 left it
        con.execute("DROP TABLE tool_call_hours")
        con.execute("DELETE FROM migrations WHERE name = 'm015_tool_call_hours'")
    con.close()
    store = await Store.open(tmp_path / "s.db")
    await store.close()
    assert _rollup_matches_the_calls(tmp_path / "s.db") > 1000

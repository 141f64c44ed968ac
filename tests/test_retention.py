"""The retention policy (spec §5.2), property-tested over random sessions, sizes, ages and
budgets; then the same plans applied to a real SQLite store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.core.retention import DAY_MS, Plan, Policy, SessionUsage, quick_plan, select_evictions
from helixd.store import evict, status_totals
from helixd.store.schema import MIGRATIONS

NOW = 1_800_000_000_000


@st.composite
def sessions(draw: st.DrawFn) -> list[SessionUsage]:
    n = draw(st.integers(0, 25))
    rows = []
    for i in range(n):
        analyzed = draw(st.booleans())
        analyzed_at = NOW - draw(st.integers(0, 90)) * DAY_MS if analyzed else None
        # some digests are stale: lines arrived after the analysis
        changed = (
            analyzed_at + draw(st.sampled_from([-1, 0, 1]))
            if analyzed_at is not None
            else NOW - draw(st.integers(0, 90)) * DAY_MS
        )
        rows.append(
            SessionUsage(
                id=i + 1,
                uid=f"claude:s{i}",
                raw_bytes=draw(st.integers(0, 5_000)),
                event_bytes=draw(st.integers(0, 2_000)),
                analyzed_at=analyzed_at,
                changed_at=changed,
                last_activity_at=NOW - draw(st.integers(0, 120)) * DAY_MS,
            )
        )
    return rows


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    soft = draw(st.integers(0, 60_000))
    return Policy(
        soft_cap=soft,
        hard_cap=soft + draw(st.integers(0, 40_000)),
        max_age_ms=draw(st.integers(1, 100)) * DAY_MS,
        distilled_cap=draw(st.integers(0, 10_000)),
        stage_payloads_first=draw(st.booleans()),
    )


def _full_plan(rows: list[SessionUsage], policy: Policy, other: int = 0) -> Plan:
    """What the caller does: plan, analyze now if asked (nothing changes here: the
    analysis 'fails'), plan again allowing the last resort."""
    plan = select_evictions(rows, NOW, policy, other_bytes=other)
    if plan.analyze_first:
        plan = select_evictions(rows, NOW, policy, other_bytes=other, analyzed_now=True)
    return plan


def _left(rows: list[SessionUsage], plan: Plan) -> dict[int, tuple[int, int]]:
    left = {r.id: (r.raw_bytes, r.event_bytes) for r in rows}
    for e in plan.evictions:
        raw, ev = left[e.session_id]
        left[e.session_id] = (0, 0 if e.stage >= 2 else ev)
    return left


@settings(max_examples=400, deadline=None)
@given(rows=sessions(), policy=policies(), other=st.integers(0, 3_000))
def test_a_plan_keeps_the_invariants(rows: list[SessionUsage], policy: Policy, other: int) -> None:
    plan = _full_plan(rows, policy, other)
    by_id = {r.id: r for r in rows}
    left = _left(rows, plan)
    total = sum(r.raw_bytes + r.event_bytes for r in rows) + other
    # the accounting adds up
    assert plan.usage_before == total
    assert plan.usage_after == sum(a + b for a, b in left.values()) + other
    assert plan.usage_before - plan.usage_after == sum(e.bytes for e in plan.evictions)
    assert all(e.bytes > 0 for e in plan.evictions)

    unanalyzed_hit = [e for e in plan.evictions if not by_id[e.session_id].analyzed]
    # no un-analyzed byte goes except through the recorded data-loss path ...
    assert unanalyzed_hit == plan.data_loss
    if plan.data_loss:
        # ... which is only taken over the hard cap, after analyzing now, and only once
        # nothing analyzed is left to drop
        assert plan.usage_before > policy.hard_cap
        assert all(left[r.id] == (0, 0) for r in rows if r.analyzed)
    # the budget pass stops at the soft cap
    budget = [e for e in plan.evictions if e.pass_ == "budget"]
    if budget:
        after_budget = plan.usage_before - sum(
            e.bytes for e in plan.evictions if e.pass_ != "overflow"
        )
        assert after_budget + budget[-1].bytes > policy.soft_cap
    # usage <= soft cap whenever the analyzed data allows it
    unanalyzed = sum(r.raw_bytes + r.event_bytes for r in rows if not r.analyzed)
    if unanalyzed + other <= policy.soft_cap:
        assert plan.usage_after <= policy.soft_cap
    # ... and <= hard cap whenever anything but the unattributed bytes allows it
    if other <= policy.hard_cap:
        assert plan.usage_after <= max(policy.hard_cap, policy.soft_cap)
    # the backstop drops only analyzed sessions past the age limit
    for e in plan.evictions:
        if e.pass_ == "backstop":
            r = by_id[e.session_id]
            assert r.analyzed and r.last_activity_at is not None
            assert NOW - r.last_activity_at > policy.max_age_ms


@settings(max_examples=200, deadline=None)
@given(rows=sessions(), policy=policies())
def test_the_budget_pass_takes_the_oldest_analysis_first(
    rows: list[SessionUsage], policy: Policy
) -> None:
    plan = select_evictions(rows, NOW, policy)
    by_id = {r.id: r for r in rows}
    for stage in (1, 2):
        order = [
            by_id[e.session_id].analyzed_at or 0
            for e in plan.evictions
            if e.pass_ == "budget" and e.stage == stage
        ]
        assert order == sorted(order)


@settings(max_examples=200, deadline=None)
@given(rows=sessions(), policy=policies())
def test_with_staging_events_go_only_once_every_candidates_raw_is_gone(
    rows: list[SessionUsage], policy: Policy
) -> None:
    plan = select_evictions(rows, NOW, policy)
    by_id = {r.id: r for r in rows}
    stages = [e.stage for e in plan.evictions if e.pass_ == "budget"]
    if not policy.stage_payloads_first:
        assert set(stages) <= {2}
        return
    assert stages == sorted(stages)
    if 2 in stages:
        left = _left(rows, plan)
        assert all(left[r.id][0] == 0 for r in rows if r.analyzed)
    assert all(by_id[e.session_id].analyzed for e in plan.evictions if e.pass_ != "overflow")


def test_over_the_hard_cap_the_plan_asks_for_analysis_first() -> None:
    rows = [
        SessionUsage(1, "claude:a", 100, 10, analyzed_at=NOW, changed_at=NOW, last_activity_at=NOW),
        SessionUsage(2, "claude:b", 900, 90, last_activity_at=NOW - 5),
        SessionUsage(3, "claude:c", 900, 90, last_activity_at=NOW - 9),
    ]
    policy = Policy(soft_cap=500, hard_cap=1100, max_age_ms=10 * DAY_MS, distilled_cap=1)
    first = select_evictions(rows, NOW, policy, distilled_bytes=5)
    assert first.analyze_first and not first.data_loss and first.tier2_over
    last = select_evictions(rows, NOW, policy, analyzed_now=True)
    # the analyzed session went first; then the oldest un-analyzed one, raw first
    assert [(e.session_id, e.pass_, e.stage) for e in last.evictions] == [
        (1, "budget", 1),
        (1, "budget", 2),
        (3, "overflow", 1),
    ]
    assert last.usage_after == 990 + 90 <= policy.hard_cap
    assert [e.session_id for e in last.data_loss] == [3]


def test_the_tier2_guard_flags_and_drops_nothing() -> None:
    rows = [SessionUsage(1, "claude:a", 10, 10, analyzed_at=NOW, changed_at=NOW)]
    plan = select_evictions(
        rows, NOW, Policy(10**9, 10**9, 10**12, distilled_cap=100), distilled_bytes=101
    )
    assert plan.tier2_over and plan.evictions == []


# -- the same plans on a real store ----------------------------------------------------------


def _make_store(path: Path, rows: list[SessionUsage]) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA auto_vacuum = INCREMENTAL")
    con.execute("PRAGMA synchronous = OFF")
    for _, sql in MIGRATIONS:
        con.executescript(sql)
    con.execute("BEGIN")
    for r in rows:
        con.execute(
            "INSERT INTO sessions (id, uid, agent, native_id, discovered_at, analyzed_at,"
            " changed_at, ended_at) VALUES (?, ?, 'claude', ?, 0, ?, ?, ?)",
            (r.id, r.uid, r.uid, r.analyzed_at, r.changed_at, r.last_activity_at),
        )
        con.execute(
            "INSERT INTO files (id, agent, path, root, dev, ino, size, mtime_ns, offset,"
            " head_hash, head_len, adapter_version, state, session_id, first_seen_at,"
            " updated_at) VALUES (?, 'claude', ?, '/', 0, ?, 0, 0, 0, x'', 0, 1, x'', ?, 0, 0)",
            (r.id, f"/f{r.id}", r.id, r.id),
        )
        if r.raw_bytes:
            con.execute(
                "INSERT INTO raw_blocks (file_id, generation, start, end, lines, data)"
                " VALUES (?, 0, 0, 1, 1, randomblob(?))",
                (r.id, r.raw_bytes * 10),
            )
        for k in range(r.event_bytes // 500):
            con.execute(
                "INSERT INTO events (session_id, seq, ekey, kind, summary, body)"
                " VALUES (?, ?, ?, 'user_msg', 's', ?)",
                (r.id, k, k, "x" * 3000),
            )
        if r.analyzed_at is not None:
            con.execute(
                "INSERT INTO digests (session_id, schema_version, built_at, provisional, json)"
                " VALUES (?, 1, 0, 0, '{}')",
                (r.id,),
            )
        con.execute(
            "INSERT INTO usage (key, session_id, rank, model, input, output, cache_read,"
            " cache_write_5m, cache_write_1h, reasoning) VALUES (?, ?, 'a', 'm', 7, 3, 0, 0,"
            " 0, 0)",
            (r.id, r.id),
        )
    con.execute("COMMIT")
    return con


def _count(con: sqlite3.Connection, sql: str) -> int:
    return int(con.execute(sql).fetchone()[0])


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=sessions(), policy=policies())
def test_applied_plans_drop_what_they_say_and_keep_tier_2(
    tmp_path_factory: pytest.TempPathFactory, rows: list[SessionUsage], policy: Policy
) -> None:
    con = _make_store(tmp_path_factory.mktemp("s") / "h.db", rows)
    measured = evict.measure(con)
    by_id = {r.id: r for r in measured["rows"]}
    scaled = Policy(
        soft_cap=policy.soft_cap * 10,
        hard_cap=policy.hard_cap * 10,
        max_age_ms=policy.max_age_ms,
        distilled_cap=policy.distilled_cap,
        stage_payloads_first=policy.stage_payloads_first,
    )
    plan = _full_plan(measured["rows"], scaled, measured["other_bytes"])
    digests = _count(con, "SELECT count(*) FROM digests")
    usage = _count(con, "SELECT coalesce(sum(input), 0) FROM usage")
    done = evict.apply(con, plan.evictions, NOW, "test")
    evict.shrink(con)
    assert done == plan.evictions
    # what the plan counted is what is gone
    remeasured = evict.measure(con)
    after = {r.id: r for r in remeasured["rows"]}
    # (other_bytes: the full-text index's own structure records, counted in Tier 1)
    kept = sum(r.raw_bytes + r.event_bytes + r.index_bytes for r in after.values())
    assert kept + remeasured["other_bytes"] == plan.usage_after
    # Tier 2 untouched
    assert _count(con, "SELECT count(*) FROM digests") == digests
    assert _count(con, "SELECT coalesce(sum(input), 0) FROM usage") == usage
    assert _count(con, "SELECT count(*) FROM sessions") == len(rows)
    # un-analyzed rows intact unless recorded as data loss
    lost = {e.session_id for e in plan.data_loss}
    assert {r[0] for r in con.execute("SELECT session_id FROM data_loss")} == lost
    for sid, row in by_id.items():
        if not row.analyzed and sid not in lost:
            assert after[sid] == row
    for e in plan.evictions:
        stage, evicted_at = con.execute(
            "SELECT evict_stage, evicted_at FROM sessions WHERE id = ?", (e.session_id,)
        ).fetchone()
        assert stage >= e.stage and evicted_at == NOW
    assert _count(con, "PRAGMA freelist_count") == 0
    # m025's running totals follow the retention pass's deletes
    assert status_totals.kept(con) == tuple(con.execute(status_totals.COUNTS).fetchone())
    con.close()


def test_quick_plan_is_the_empty_plan_select_evictions_makes_or_none() -> None:
    """``quick_plan`` (issue 12: the pass without measuring every session) answers only
    where ``select_evictions`` chooses nothing, with the same figures."""
    now = 400 * DAY_MS
    policy = Policy(soft_cap=1000, hard_cap=1500, max_age_ms=45 * DAY_MS, distilled_cap=50)
    rows = [
        SessionUsage(1, "a", 300, 200, analyzed_at=now - DAY_MS, last_activity_at=now - DAY_MS),
        SessionUsage(2, "b", 250, 100, last_activity_at=now - 2 * DAY_MS),
    ]
    total = 300 + 200 + 250 + 100 + 150  # and 150 bytes of other
    oldest = now - 2 * DAY_MS
    for soft, age_days, distilled in ((1000, 45, 10), (1000, 45, 60), (total, 45, 0)):
        p = Policy(soft, 1500, age_days * DAY_MS, 50)
        full = select_evictions(rows, now, p, distilled_bytes=distilled, other_bytes=150)
        quick = quick_plan(total, oldest, now, p, distilled_bytes=distilled)
        assert quick is not None and full.evictions == [] and not full.analyze_first
        assert (quick.usage_before, quick.usage_after, quick.distilled_bytes, quick.tier2_over) == (
            full.usage_before,
            full.usage_after,
            full.distilled_bytes,
            full.tier2_over,
        )
    assert quick_plan(total, oldest, now, Policy(total - 1, 1500, 45 * DAY_MS, 50)) is None
    assert quick_plan(total, oldest, now, Policy(2000, total - 1, 45 * DAY_MS, 50)) is None
    assert quick_plan(total, oldest, now, Policy(2000, 3000, DAY_MS, 50)) is None
    assert quick_plan(total, None, now, policy) is not None  # no session has a time


_SESSION = st.builds(
    lambda sid, raw, ev, ix, analyzed, changed, last: SessionUsage(
        id=sid,
        uid=f"u{sid}",
        raw_bytes=raw,
        event_bytes=ev,
        analyzed_at=analyzed,
        changed_at=changed,
        last_activity_at=last,
        index_bytes=ix,
    ),
    st.integers(1, 10_000),
    st.integers(0, 500),
    st.integers(0, 500),
    st.integers(0, 100),
    st.none() | st.integers(0, 100 * DAY_MS),
    st.none() | st.integers(0, 100 * DAY_MS),
    st.none() | st.integers(0, 100 * DAY_MS),
)


@settings(max_examples=400, deadline=None)
@given(
    rows=st.lists(_SESSION, max_size=12, unique_by=lambda r: r.id),
    other=st.integers(0, 300),
    soft=st.integers(0, 4000),
    hard=st.integers(0, 6000),
    age_days=st.integers(1, 90),
    distilled=st.integers(0, 100),
    payloads_first=st.booleans(),
    keeps_events=st.booleans(),
)
def test_quick_plan_never_answers_where_select_evictions_would_choose(
    rows: list[SessionUsage],
    other: int,
    soft: int,
    hard: int,
    age_days: int,
    distilled: int,
    payloads_first: bool,
    keeps_events: bool,
) -> None:
    """Any sessions, any policy: from the bounds ``evict.bounds`` reads — Tier 1's total and
    the earliest activity of the backstop's candidates (analyzed, holding what its stage
    drops) — ``quick_plan`` answers only with the plan the full measurement makes: no
    eviction, no analysis first, the same figures."""
    policy = Policy(soft, hard, age_days * DAY_MS, 50, payloads_first, keeps_events)
    now = 100 * DAY_MS
    stage = policy.backstop_stage
    candidates = [
        r.last_activity_at if r.last_activity_at is not None else r.analyzed_at
        for r in rows
        if r.analyzed and (r.raw_bytes > 0 or (stage >= 2 and r.event_bytes + r.index_bytes > 0))
    ]
    times = [t for t in candidates if t is not None]
    total = sum(r.raw_bytes + r.event_bytes + r.index_bytes for r in rows) + other
    quick = quick_plan(total, min(times) if times else None, now, policy, distilled_bytes=distilled)
    if quick is None:
        return
    full = select_evictions(rows, now, policy, distilled_bytes=distilled, other_bytes=other)
    assert full.evictions == [] and not full.analyze_first
    assert (quick.usage_before, quick.usage_after) == (full.usage_before, full.usage_after)
    assert quick.tier2_over == full.tier2_over and quick.distilled_bytes == full.distilled_bytes

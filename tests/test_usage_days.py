"""``usage_days`` (usage per UTC day x session x model, kept by triggers on ``usage_buckets``)
equals a GROUP BY over the buckets after incremental ingest of the real corpus fixtures and
after facts are deleted; the migration fills it on an existing store; and the dashboard's cost
figures, priced and summed by the store from it (or from the buckets in a zone that is not
whole days), equal those computed from the usage facts themselves."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from helixd.adapters.registry import REGISTRY
from helixd.core.pricing import bundled, cost
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.query import metrics, open_reader
from helixd.store import metrics_queries as mq
from helixd.store import signal_queries as sq
from helixd.store import usage_days
from helixd.store.database import Store, now_ms
from tests.agent_helpers import ingest_in_steps
from tests.conftest import FIXTURES

DAY_MS = 86_400_000


def _days_match_the_buckets(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        kept = sorted(con.execute("SELECT * FROM usage_days"))
        truth = sorted(con.execute(usage_days.SUMS))
        assert kept == truth
        return len(kept)
    finally:
        con.close()


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Claude and Codex fixtures ingested a few files at a time (the rollup checked after
    every pass), then one session's facts deleted (the delete trigger's path) and ingested
    again from a copy of its file."""
    import asyncio

    tmp = tmp_path_factory.mktemp("usage-days")

    async def build() -> None:
        store = await Store.open(tmp / "s.db")

        async def check() -> None:
            _days_match_the_buckets(store.path)

        try:
            await ingest_in_steps(store, tmp, ("claude", "codex"), 4, check)
            await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
        finally:
            await store.close()

    asyncio.run(build())
    return tmp / "s.db"


def test_the_rollup_equals_the_buckets_on_the_real_corpus(corpus_store: Path) -> None:
    assert _days_match_the_buckets(corpus_store) > 20
    db = corpus_store.parent / "deleted.db"
    shutil.copy(corpus_store, db)
    con = sqlite3.connect(db)
    with con:  # facts taken out one by one (usage_buckets_drop: UPDATE, then DELETE)
        (sid,) = con.execute(
            "SELECT session_id FROM usage GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
        keys = [k for (k,) in con.execute("SELECT key FROM usage WHERE session_id = ?", (sid,))]
        for k in keys[: len(keys) // 2]:
            con.execute("DELETE FROM usage WHERE key = ?", (k,))
    con.close()
    _days_match_the_buckets(db)
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM usage WHERE session_id = ?", (sid,))
    left = con.execute("SELECT count(*) FROM usage_days WHERE session_id = ?", (sid,)).fetchone()
    con.close()
    assert left == (0,)
    _days_match_the_buckets(db)


async def test_the_migration_fills_the_rollup_of_an_existing_store(corpus_store: Path) -> None:
    db = corpus_store.parent / "old.db"
    shutil.copy(corpus_store, db)
    con = sqlite3.connect(db)
    with con:  # the store as a Helix before m024 left it
        con.execute("DROP TABLE usage_days")
        for what in ("insert", "update", "delete"):
            con.execute(f"DROP TRIGGER usage_days_{what}")
        con.execute("DELETE FROM migrations WHERE name = 'm024_usage_days'")
    con.close()
    store = await Store.open(db)
    await store.close()
    assert _days_match_the_buckets(db) > 20


def _facts(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return con.execute(
        "SELECT u.ts, u.session_id, s.agent, coalesce(s.repo, ''), u.model, u.input, u.output,"
        " u.cache_read, u.cache_write_5m, u.cache_write_1h FROM usage u"
        " JOIN sessions s ON s.id = u.session_id"
    ).fetchall()


def _by(
    facts: list[tuple[Any, ...]], key: int, prices: Any, sc: mq.Scope
) -> dict[Any, tuple[int, float]]:
    """(tokens, dollars) per key of the facts in the scope, priced fact by fact."""
    out: dict[Any, list[Any]] = defaultdict(lambda: [0, 0.0])
    for f in facts:
        ts = f[0] or 0
        if sc.since is not None and ts < sc.since or sc.until is not None and ts >= sc.until:
            continue
        acc = out[f[key]]
        acc[0] += sum(f[5:10])
        acc[1] += cost(prices, f[4], f[5:10])
    return {k: (v[0], round(v[1], 6)) for k, v in out.items()}


def test_the_cost_figures_equal_the_facts(corpus_store: Path) -> None:
    prices = bundled()[1]
    con = open_reader(corpus_store)
    try:
        facts = _facts(con)
        timed = sorted(f[0] for f in facts if f[0])
        first, last = timed[0] - timed[0] % DAY_MS, timed[-1] - timed[-1] % DAY_MS + DAY_MS
        mid = (first + last) // 2 - (first + last) // 2 % DAY_MS
        for sc, offset_s in (
            (mq.Scope(), 0),
            (mq.Scope(since=mid, until=last), 0),
            (mq.Scope(since=first, until=mid + 3_600_000), 0),  # not whole days: buckets
            (mq.Scope(), 5_400),  # a zone of 1 h 30: its days from the buckets
        ):
            doc = metrics.costs(con, sc, prices, "repo", "day", offset_s, series=None)
            for name, key in (("by_agent", 2), ("by_repo", 3), ("by_model", 4)):
                got = {k: (v["total"], v["cost_usd"]) for k, v in doc[name].items()}
                want = _by(facts, key, prices, sc)
                assert got.keys() == want.keys() and want
                for k, (tokens, usd) in want.items():
                    assert got[k][0] == tokens
                    assert got[k][1] == pytest.approx(usd, abs=2e-6)
            per_session = _by(facts, 1, prices, sc)
            ranked = sorted(per_session, key=lambda k: (-per_session[k][1], -per_session[k][0]))
            tops = [t["cost_in_range_usd"] for t in doc["top_sessions"]]
            want_tops = [per_session[k][1] for k in ranked[: len(tops)]]
            assert tops == pytest.approx(want_tops, abs=2e-6) and tops
            # the chart: dollars per local day and repo
            days: dict[tuple[int, str], float] = defaultdict(float)
            for f in facts:
                ts = f[0] or 0
                if ts <= 0 or sc.since is not None and ts < sc.since:
                    continue
                if sc.until is not None and ts >= sc.until:
                    continue
                days[((ts // 1000 + offset_s) // 86_400, f[3])] += cost(prices, f[4], f[5:10])
            got_days = {
                (s["slot"], k): v["cost_usd"]
                for s in doc["over_time"]["slots"]
                for k, v in s["by"].items()
            }
            assert got_days.keys() == days.keys()
            for k, usd in days.items():
                assert got_days[k] == pytest.approx(round(usd, 6), abs=2e-6)
    finally:
        con.close()


def test_the_overview_reads_the_usage_once_and_gives_the_summary_as_summary_does(
    corpus_store: Path,
) -> None:
    prices = bundled()[1]
    con = open_reader(corpus_store)
    try:
        for sc in (mq.Scope(), mq.Scope(since=1, until=2**41)):
            summary, usage = metrics.overview(con, sc, prices, 0)
            assert summary == metrics.summary(con, sc, prices, 0) and summary["sessions"]
            assert usage == metrics.usage_series(con, sc, prices, "agent", "day", 0)
    finally:
        con.close()


def test_the_cost_chart_keeps_the_top_series_and_sums_the_rest_as_other(corpus_store: Path) -> None:
    """``series=N``: the chart holds the N repos that cost most in the range, each day as with
    every series, and one ``(other)`` series that is the sum of the rest, day by day; the
    totals by repo still hold every repo; the top sessions, ranked by the store, are the
    same at any N."""
    prices = bundled()[1]
    con = open_reader(corpus_store)
    try:
        full = metrics.costs(con, mq.Scope(), prices, "repo", "day", series=None)
        repos = list(full["by_repo"])
        assert len(repos) >= 3  # the corpus has enough repos to fold
        kept = repos[:1]
        doc = metrics.costs(con, mq.Scope(), prices, "repo", "day", series=1)
        assert doc["by_repo"] == full["by_repo"] and doc["top_sessions"] == full["top_sessions"]
        assert set(doc["over_time"]["keys"]) == {*kept, mq.OTHER}
        assert [s["slot"] for s in doc["over_time"]["slots"]] == [
            s["slot"] for s in full["over_time"]["slots"]
        ]
        for folded, whole in zip(
            doc["over_time"]["slots"], full["over_time"]["slots"], strict=True
        ):
            rest = {k: v for k, v in whole["by"].items() if k not in kept}
            for k in kept:
                assert folded["by"].get(k) == whole["by"].get(k)
            if rest:
                other = folded["by"][mq.OTHER]
                assert other["total"] == sum(v["total"] for v in rest.values())
                assert other["cost_usd"] == pytest.approx(
                    sum(v["cost_usd"] for v in rest.values()), abs=1e-5
                )
            else:
                assert mq.OTHER not in folded["by"]
    finally:
        con.close()


def test_the_cost_page_reads_the_usage_once_and_equals_a_read_per_grouping(
    corpus_store: Path,
) -> None:
    """``costs`` reads the usage rollups in one statement (the totals by agent, repo and
    model, the series and the top sessions are groupings of one priced read) when the
    series' days are UTC days, and in two when the series has a table of its own (hours, or
    the buckets in a zone of 1 h 30); each part equals its own read: the totals and the
    series as ``usage_series`` gives them (tokens exact, dollars to the float summation
    order), at every step, in zones, of a model."""
    prices = bundled()[1]
    con = open_reader(corpus_store)
    try:
        for group, step, offset_s, reads in (
            ("repo", "day", 0, 1),
            ("agent", "week", 0, 1),
            ("repo", "day", 5_400, 2),
            ("model", "hour", 3_600, 2),
        ):
            sc = mq.Scope(model="claude-sonnet-4-5") if group == "model" else mq.Scope()
            read: list[str] = []
            con.set_trace_callback(read.append)
            doc = metrics.costs(con, sc, prices, group, step, offset_s, series=None)
            con.set_trace_callback(None)
            # the metrics' reads of a rollup (``x``); the price lookup reads the models, the
            # top sessions' cards those sessions' own rows by id
            rollups = [q for q in read if re.search(r"FROM usage_(days|buckets|hours) x\b", q)]
            assert len(rollups) == reads, [q[-160:] for q in rollups]
            for name, g in (("by_agent", "agent"), ("by_repo", "repo"), ("by_model", "model")):
                want = metrics.usage_series(con, sc, prices, g, None)["totals"]
                assert list(doc[name]) == list(want) and want
                for k, v in want.items():
                    assert doc[name][k]["total"] == v["total"]
                    assert doc[name][k]["cost_usd"] == pytest.approx(v["cost_usd"], abs=2e-6)
            want_series = metrics.usage_series(con, sc, prices, group, step, offset_s)
            got = doc["over_time"]
            assert got["keys"] == want_series["keys"] and got["keys"]
            assert [s["slot"] for s in got["slots"]] == [s["slot"] for s in want_series["slots"]]
            for mine, theirs in zip(got["slots"], want_series["slots"], strict=True):
                assert mine["start"] == theirs["start"] and mine["by"].keys() == theirs["by"].keys()
                for k, v in theirs["by"].items():
                    assert mine["by"][k]["total"] == v["total"]
                    assert mine["by"][k]["cost_usd"] == pytest.approx(v["cost_usd"], abs=2e-6)
    finally:
        con.close()


def test_the_top_files_equal_one_grouping_of_every_operation(corpus_store: Path) -> None:
    """``files`` finds the top paths first, then their figures: the same rows, in the same
    order, as one GROUP BY over every operation."""
    con = open_reader(corpus_store)
    try:
        ts = sorted(t for (t,) in con.execute("SELECT ts FROM file_operations WHERE ts > 0"))
        agents = [a for (a,) in con.execute("SELECT DISTINCT agent FROM sessions")]
        for sc in (mq.Scope(), mq.Scope(since=ts[len(ts) // 2]), mq.Scope(agents=agents[:1])):
            where, params = sq._signal_scope(sc, "f")
            for limit in (3, 50):
                want = con.execute(
                    "SELECT f.file_path, max(f.language), count(*), sum(f.operation = 'write'),"
                    " count(DISTINCT f.session_id), sum(f.lines_added), sum(f.lines_removed),"
                    " sum(f.accepted = 1), sum(f.accepted = 0), max(f.ts)"
                    f" FROM file_operations f{where} GROUP BY f.file_path"
                    " ORDER BY count(*) DESC, f.file_path LIMIT ?",
                    [*params, limit],
                ).fetchall()
                assert sq.files(con, sc, limit) == want and want
    finally:
        con.close()


def test_whole_utc_days_read_the_day_rollup() -> None:
    """Which table answers: the days when range and zone are whole UTC days."""
    day = mq.Scope(since=20_000 * DAY_MS, until=20_030 * DAY_MS)
    assert "usage_days" in mq._usage_source(day, "repo", 86_400, 0)[0]
    assert "usage_days" in mq._usage_source(mq.Scope(), "session", None, 3_600)[0]
    assert "usage_buckets" in mq._usage_source(day, "repo", 86_400, 3_600)[0]
    odd = mq.Scope(since=20_000 * DAY_MS + 900_000)
    assert "usage_buckets" in mq._usage_source(odd, "repo", None, 0)[0]
    assert "usage_hours" in mq._usage_source(day, "agent", 86_400, 0)[0]


async def test_a_renormalization_rebuilds_the_rollup(tmp_path: Path) -> None:
    """Usage an older adapter version wrote with other counters, re-normalized from the raw
    lines: the rollup follows the rewritten facts and equals a fresh ingest's."""

    from helixd.adapters import Adapter, Chunk
    from helixd.core.records import Parsed
    from helixd.ingest.renormalize import renormalize

    def older(adapter: Adapter) -> Adapter:
        def parse(chunk: Chunk, state: Any) -> Parsed:
            out = adapter.parse(chunk, state)
            usage = [u._replace(input_tokens=u.input_tokens + 1000) for u in out.usage]
            return out._replace(usage=usage)

        return adapter.replace(version=adapter.version - 1, parse=parse)

    pairs = []
    for adapter in REGISTRY:
        if adapter.name in ("claude", "codex"):
            root = tmp_path / "src" / adapter.name
            shutil.copytree(FIXTURES / adapter.name, root)
            pairs.append((adapter, root))
    old_db, new_db = tmp_path / "old.db", tmp_path / "new.db"
    async with await Store.open(old_db) as store:
        await Ingestor(store).backfill(discover([(older(a), r) for a, r in pairs]))
    async with await Store.open(new_db) as store:
        await Ingestor(store).backfill(discover(pairs))

    def days(db: Path) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(db)
        try:
            return sorted(
                con.execute(
                    "SELECT d.day, s.uid, d.model, d.responses, d.input, d.output, d.cache_read"
                    " FROM usage_days d JOIN sessions s ON s.id = d.session_id"
                )
            )
        finally:
            con.close()

    assert days(old_db) != days(new_db)
    async with await Store.open(old_db) as store:
        stats = await renormalize(store, REGISTRY)
        assert stats.groups > 0
    _days_match_the_buckets(old_db)
    assert days(old_db) == days(new_db) and days(new_db)

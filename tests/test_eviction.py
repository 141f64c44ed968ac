"""Retention end to end on a real store built from the real Claude fixtures: `helixctl
evict`, the page accounting, the hard-cap path, the legacy-store conversion, and the
correlation exports (`helixctl env`, `lookup` through HELIX_STORE_DB)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.cli.main import main
from helixd.config import RetentionSettings
from helixd.core.retention import Policy, select_evictions
from helixd.ingest.eviction import evict_pass
from helixd.query.env import export_lines
from helixd.store import evict, tier1
from helixd.store.database import Store, now_ms
from tests.cli_runner import CliRunner, Result
from tests.conftest import KEEP_FIXTURES_DAYS, REPO, cli_env, copy_claude_fixtures


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A store with every Claude fixture ingested and analyzed (built once)."""
    home = tmp_path_factory.mktemp("home")
    (home / ".claude" / "projects").mkdir(parents=True)
    copy_claude_fixtures(home)
    db = tmp_path_factory.mktemp("tpl") / "helix.db"
    subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest", "--json"],
        env=cli_env(home, db),
        check=True,
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    return home, db


@pytest.fixture
def db(template: tuple[Path, Path], tmp_path: Path) -> Path:
    copy = tmp_path / "store" / "helix.db"
    copy.parent.mkdir()
    shutil.copy(template[1], copy)
    return copy


Cli = Callable[..., Result]


@pytest.fixture
def cli(db: Path, tmp_path: Path) -> Cli:
    """`helixctl` in process (the real commands) against ``db``."""

    def run(*argv: str, **extra: str) -> Result:
        env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("HELIX_")}
        env.update(
            HELIX_STORE_DB=str(db),
            XDG_CONFIG_HOME=str(tmp_path / "cfg"),
            HELIX_RETENTION__RAW_MAX_AGE_DAYS=KEEP_FIXTURES_DAYS,
        )
        env.update(extra)
        return CliRunner().invoke(main, list(argv), env=env, catch_exceptions=False)

    return run


def q(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


USAGE = "SELECT count(*), sum(input), sum(output), sum(cache_read), sum(cache_write_5m) FROM usage"
TINY = {"HELIX_RETENTION__RAW_SOFT_CAP_BYTES": "1", "HELIX_RETENTION__RAW_HARD_CAP_BYTES": "1"}


def test_a_tiny_budget_evicts_everything_analyzed_and_keeps_tier_2(db: Path, cli: Cli) -> None:
    usage = q(db, USAGE)
    digests = dict(q(db, "SELECT session_id, json FROM digests"))
    uids = [u for (u,) in q(db, "SELECT uid FROM sessions WHERE analyzed_at IS NOT NULL")]
    assert len(digests) == len(uids) >= 30

    dry = cli("evict", "--dry-run", "--json", **TINY)
    assert dry.exit_code == 0, dry.output
    plan = orjson.loads(dry.stdout)
    assert plan["dry_run"] and plan["evictions"] and plan["data_loss"] == []
    assert q(db, "SELECT count(*) FROM sessions WHERE evicted_at IS NOT NULL") == [(0,)]

    size_before = db.stat().st_size
    run = cli("evict", "--json", **TINY)
    assert run.exit_code == 0, run.output
    done = orjson.loads(run.stdout)
    assert done["applied"] == len(plan["evictions"])
    assert done["bytes_freed"] == plan["bytes_planned"] > 0
    # nearly all the file was freed: a VACUUM (costs what is left) rather than moving pages
    assert done["data_loss"] == [] and done["vacuum"] == "vacuum"
    assert q(db, "PRAGMA auto_vacuum") == [(2,)]
    # the file really shrank, by about what was counted
    assert done["file_bytes_after"] == db.stat().st_size < size_before
    assert size_before - db.stat().st_size >= 0.7 * done["bytes_freed"]
    # Tier 1 is gone, Tier 2 is whole
    assert q(db, "SELECT count(*) FROM raw_blocks WHERE file_id IN"
             " (SELECT id FROM files WHERE session_id IS NOT NULL)") == [(0,)]  # fmt: skip
    assert q(db, "SELECT count(*) FROM events") == [(0,)]
    assert q(db, USAGE) == usage
    assert dict(q(db, "SELECT session_id, json FROM digests")) == digests
    # every session that held Tier 1 rows is marked (the others had nothing to drop)
    assert q(db, "SELECT count(*) FROM sessions WHERE events > 0 AND"
             " (evicted_at IS NULL OR evict_stage != 2)") == [(0,)]  # fmt: skip
    assert q(db, "SELECT count(*) FROM sessions WHERE evict_stage = 2")[0][0] >= 20
    # every digest is still looked up
    for uid in uids:
        found = cli("lookup", uid, "--json")
        assert found.exit_code == 0, (uid, found.output)
        assert orjson.loads(found.stdout)["session_uid"] == uid
    # the sessions list still shows them
    listed = orjson.loads(cli("sessions", "--all", "--limit", "1000", "--json").stdout)
    assert {r["uid"] for r in listed} >= set(uids)
    # a second pass has nothing left to do
    again = orjson.loads(cli("evict", "--json", **TINY).stdout)
    assert again["evictions"] == [] and again["vacuum"] is None


def test_stage_one_drops_raw_blocks_and_keeps_the_conversation(db: Path, cli: Cli) -> None:
    events = q(db, "SELECT count(*) FROM events")
    # a budget just under the usage: the raw blocks of the oldest analyses go, no events
    usage = orjson.loads(cli("evict", "--dry-run", "--json").stdout)["usage_before"]
    raw = q(db, "SELECT sum(length(data)) FROM raw_blocks")[0][0]
    soft = str(usage - raw // 2)
    out = orjson.loads(cli("evict", "--json", HELIX_RETENTION__RAW_SOFT_CAP_BYTES=soft).stdout)
    assert out["evictions"] and {e["stage"] for e in out["evictions"]} == {1}
    assert out["vacuum"] == "incremental_vacuum"
    assert out["file_bytes_after"] < out["file_bytes_before"]
    assert out["usage_after"] <= int(soft)
    assert q(db, "SELECT count(*) FROM events") == events
    assert q(db, "SELECT count(*) FROM raw_blocks")[0][0] > 0
    assert q(db, "SELECT DISTINCT evict_stage FROM sessions WHERE evicted_at IS NOT NULL") == [(1,)]
    # with staging off, whole sessions go at once
    out = orjson.loads(
        cli(
            "evict",
            "--json",
            HELIX_RETENTION__RAW_SOFT_CAP_BYTES=str(int(soft) // 2),
            HELIX_RETENTION__STAGE_PAYLOADS_FIRST="false",
        ).stdout
    )
    assert out["evictions"] and {e["stage"] for e in out["evictions"]} == {2}


AGED = {"HELIX_RETENTION__RAW_MAX_AGE_DAYS": "45"}


def test_the_old_analyzed_tier_1_goes_by_age_alone(db: Path, cli: Cli) -> None:
    # the fixtures are months old; with an ample budget only the backstop acts, and takes
    # the whole Tier 1 of each session as spec §5.2 says (events and index entries too)
    kept = orjson.loads(
        cli(
            "evict", "--dry-run", "--json", HELIX_RETENTION__BACKSTOP_KEEPS_EVENTS="true", **AGED
        ).stdout
    )
    assert kept["evictions"] and {(e["pass"], e["stage"]) for e in kept["evictions"]} == {
        ("backstop", 1)
    }
    out = orjson.loads(cli("evict", "--json", **AGED).stdout)
    assert out["evictions"] and {(e["pass"], e["stage"]) for e in out["evictions"]} == {
        ("backstop", 2)
    }
    gone = "(SELECT id FROM sessions WHERE evict_stage = 2)"
    assert q(db, f"SELECT count(*) FROM sessions WHERE id IN {gone}")[0][0] >= 20
    assert q(db, f"SELECT count(*) FROM events WHERE session_id IN {gone}") == [(0,)]
    assert q(db, f"SELECT count(*) FROM search_docs WHERE session_id IN {gone}") == [(0,)]
    young = orjson.loads(cli("evict", "--dry-run", "--json").stdout)
    assert young["evictions"] == []


async def test_what_is_counted_is_what_a_delete_frees(db: Path) -> None:
    store = await Store.open(db)
    try:
        usage = await store.retention_usage()
        everything = Policy(soft_cap=0, hard_cap=0, max_age_ms=10**15, distilled_cap=10**12)
        plan = select_evictions(
            usage["rows"], now_ms(), everything, other_bytes=usage["other_bytes"], analyzed_now=True
        )
        assert plan.usage_after == usage["other_bytes"]
        before = await store.run(evict.freelist_bytes, store.con)
        await store.evict(plan.evictions, now_ms())
        freed = await store.run(evict.freelist_bytes, store.con) - before
    finally:
        await store.close()
    counted = plan.bytes_freed
    # within a quarter on this small store (page slack is proportionally larger here)
    assert 0.75 * freed <= counted <= 1.25 * freed, (counted, freed)


async def _analyze_all(store: Store) -> None:
    from helixd.ingest import digest

    now = now_ms()
    await digest.analyze(store, await store.session_ids_changed_since_analysis(), now)


async def test_hard_cap_analyze_now_then_budget(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("UPDATE sessions SET analyzed_at = NULL")
    con.commit()
    con.close()
    digests = q(db, "SELECT count(*) FROM digests")
    tiny = RetentionSettings(raw_soft_cap_bytes=1, raw_hard_cap_bytes=1)
    async with await Store.open(db) as store:
        out = await evict_pass(store, tiny, now_ms(), lambda: _analyze_all(store))
    assert out["analyze_first"] and out["analyzed_now"] and out["data_loss"] == []
    assert out["evictions"] and {e["pass"] for e in out["evictions"]} <= {"backstop", "budget"}
    assert q(db, "SELECT count(*) FROM data_loss") == [(0,)]
    assert q(db, "SELECT count(*) FROM digests") == digests


def test_hard_cap_when_analysis_fails_loses_the_oldest_and_records_it(db: Path, cli: Cli) -> None:
    con = sqlite3.connect(db)
    con.execute("UPDATE sessions SET analyzed_at = NULL")
    con.commit()
    con.close()
    usage = q(db, USAGE)

    async def broken() -> None:
        raise RuntimeError("analysis is down")

    tiny = RetentionSettings(raw_soft_cap_bytes=1, raw_hard_cap_bytes=1)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with await Store.open(db) as store:
            return await evict_pass(store, tiny, now_ms(), broken), await store.retention_log()

    out, log = asyncio.run(run())
    assert out["analyze_error"] == "RuntimeError: analysis is down"
    assert out["data_loss"] and all(e["pass"] == "overflow" for e in out["evictions"])
    lost = q(db, "SELECT uid, bytes, reason FROM data_loss")
    assert len(lost) == len(out["data_loss"]) == log["data_loss"]
    assert all("hard cap" in reason for _, _, reason in lost)
    assert q(db, USAGE) == usage
    # status shows it
    status = cli("status", "--json")
    assert orjson.loads(status.stdout)["store"]["data_loss"]["sessions"] == len(lost)
    assert "DATA LOSS" in cli("status").stdout


async def test_a_store_made_before_incremental_vacuum_is_converted_once(db: Path) -> None:
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA auto_vacuum = NONE")
    con.execute("VACUUM")
    assert con.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    con.close()
    before = db.stat().st_size
    tiny = RetentionSettings(raw_soft_cap_bytes=1, raw_hard_cap_bytes=1)
    async with await Store.open(db) as store:
        out = await evict_pass(store, tiny, now_ms(), None)
    assert out["vacuum"].startswith("vacuum")
    assert db.stat().st_size < before
    assert q(db, "PRAGMA auto_vacuum") == [(2,)]


def test_new_stores_use_incremental_auto_vacuum(db: Path) -> None:
    assert q(db, "PRAGMA auto_vacuum") == [(2,)]


def test_env_prints_the_correlation_exports(db: Path, cli: Cli) -> None:
    uid, digest = next(
        (u, orjson.loads(j))
        for u, j in q(
            db,
            "SELECT s.uid, d.json FROM sessions s JOIN digests d ON d.session_id"
            " = s.id WHERE s.messages > 0 ORDER BY s.uid",
        )  # fmt: skip
    )
    out = cli("env", uid)
    assert out.exit_code == 0, out.output
    lines = dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines())
    assert lines["HELIX_SESSION_UID"] == uid
    assert lines["HELIX_FLAVOR"] == "claude"
    tokens = digest["cost"]["input_tokens"] + digest["cost"]["output_tokens"]
    assert int(lines["HELIX_TOKENS"]) == tokens > 0
    assert lines["HELIX_STORE_DB"] == str(db.resolve())
    assert 0.0 <= float(lines["HELIX_INFRA_OVERHEAD_SHARE"]) <= 1.0
    # the lines are shell: sourcing them sets the variables
    shell = subprocess.run(
        ["sh", "-c", out.stdout + '\nprintf %s "$HELIX_SESSION_UID|$HELIX_REPO"'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout == f"{uid}|{digest['repo'] or ''}"
    assert cli("env", "claude:no-such-session").exit_code == 1


def test_the_infra_share_is_the_mcp_share_of_tool_calls(tmp_path: Path) -> None:
    digest = {
        "session_uid": "claude:x",
        "repo": "my repo",
        "flavor": "claude",
        "cost": {"input_tokens": 100, "output_tokens": 25},
        "tool_histogram": {"Bash": 5, "mcp__github__get_issue": 2, "mcp__db__q": 1, "Read": 0},
    }
    lines = export_lines(digest, tmp_path / "x.db")
    assert "export HELIX_INFRA_OVERHEAD_SHARE=0.375" in lines
    assert "export HELIX_TOKENS=125" in lines
    assert "export HELIX_REPO='my repo'" in lines
    assert export_lines({**digest, "tool_histogram": {}}, tmp_path / "x.db")[4].endswith("=0.0")


def test_the_infra_share_counts_the_agents_plumbing_too(tmp_path: Path) -> None:
    """Spec §11.1: the infra bucket is MCP and plumbing (plans, to-do lists, tool discovery,
    background-shell polling), not only ``mcp__*`` tools."""
    digest = {
        "session_uid": "claude:x",
        "cost": {},
        "tool_histogram": {"Bash": 4, "Edit": 2, "TodoWrite": 2, "mcp__gh__issue": 1,
                           "ToolSearch": 1, "update_plan": 0},
    }  # fmt: skip
    assert "export HELIX_INFRA_OVERHEAD_SHARE=0.4" in export_lines(digest, tmp_path / "x.db")


def test_lookup_reads_the_store_named_by_helix_store_db(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    home, db = template
    uid = q(db, "SELECT s.uid FROM sessions s JOIN digests d ON d.session_id = s.id LIMIT 1")[0][0]
    # a config file naming another store: the environment variable wins
    config = home / ".config" / "helix" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[store]\ndb = "{tmp_path / "elsewhere.db"}"\n')

    def lookup(store: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "helixd.cli.main", "lookup", uid, "--json"],
            env=cli_env(home, store),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )

    try:
        found = lookup(db)
        assert found.returncode == 0, found.stderr
        assert orjson.loads(found.stdout)["session_uid"] == uid
        missing = lookup(tmp_path / "nowhere" / "helix.db")
        assert missing.returncode == 3 and "nowhere" in missing.stderr
    finally:
        config.unlink()


def test_status_and_evict_count_the_raw_tier_alike(db: Path, cli: Cli) -> None:
    """Issue 14: ``status`` showed the compressed raw bytes, ``evict`` raw blocks + events
    (what the budgets cap); both now show the latter, before and after a pass."""
    for _ in range(2):
        status = orjson.loads(cli("status", "--json").stdout)
        plan = orjson.loads(cli("evict", "--dry-run", "--json").stdout)
        assert status["retention"]["raw_bytes"] == plan["usage_before"] > 0
        tier1 = status["store"]["tier1"]
        parts = ("raw_blocks_bytes", "events_bytes", "index_bytes")
        assert tier1["bytes"] == sum(tier1[k] for k in parts)
        done = cli("evict", "--json", HELIX_RETENTION__RAW_SOFT_CAP_BYTES="300KiB")
        assert done.exit_code == 0, done.output
    after = orjson.loads(cli("status", "--json").stdout)["retention"]["raw_bytes"]
    assert after == orjson.loads(cli("evict", "--dry-run", "--json").stdout)["usage_before"]
    assert after <= 300 * 1024


def _only_in(db: Path, cli: Cli) -> tuple[str, str]:
    """A word of some session's prompt that no thinking block holds (thinking text is
    index-only, so eviction can make its entries unreachable but not delete them)."""
    for uid, body in q(
        db,
        "SELECT s.uid, e.body FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE e.kind = 'user_msg' AND length(e.body) > 40 ORDER BY e.id",
    ):
        for word in sorted(set(re.findall(r"[a-z]{9,}", body.lower()))):
            hits = orjson.loads(cli("search", word, "--json", "--limit", "200").stdout)
            if hits and all(h["kind"] != "thinking" for h in hits):
                return uid, word
    raise AssertionError("no prompt word found")


def _vocab(db: Path, term: str) -> int:
    con = sqlite3.connect(db)
    try:
        con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, search, 'row')")
        return int(con.execute("SELECT count(*) FROM temp.v WHERE term = ?", (term,)).fetchone()[0])
    finally:
        con.close()


def test_eviction_takes_the_index_entries_with_the_events(db: Path, cli: Cli) -> None:
    """Design spec §9: eviction is a privacy bound.  After a pass that takes sessions to
    stage 2, their text is no longer found, nor in the index's own vocabulary; `evict` and
    `status` count the index in Tier 1."""
    uid, word = _only_in(db, cli)
    assert _vocab(db, word) == 1
    status = orjson.loads(cli("status", "--json").stdout)
    tier1 = status["store"]["tier1"]
    assert tier1["index_bytes"] > 0
    assert (
        tier1["bytes"] == tier1["raw_blocks_bytes"] + tier1["events_bytes"] + tier1["index_bytes"]
    )
    plan = orjson.loads(cli("evict", "--dry-run", "--json").stdout)
    assert plan["index_bytes_before"] == tier1["index_bytes"]
    assert plan["usage_before"] == status["retention"]["raw_bytes"]
    assert "full-text index" in cli("status").stdout
    assert "full-text index" in cli("evict", "--dry-run").stdout

    out = orjson.loads(cli("evict", "--json", **TINY).stdout)
    assert {e["stage"] for e in out["evictions"] if e["uid"] == uid} >= {2}
    assert out["index_bytes_after"] < out["index_bytes_before"]
    assert orjson.loads(cli("search", word, "--json").stdout) == []
    assert _vocab(db, word) == 0  # deleted, and merged away: not only unreachable
    assert q(db, "SELECT count(*) FROM search_docs WHERE session_id IN"
             " (SELECT id FROM sessions WHERE evict_stage = 2)") == [(0,)]  # fmt: skip


def test_stage_one_keeps_the_text_searchable(db: Path, cli: Cli) -> None:
    uid, word = _only_in(db, cli)
    keep = {**AGED, "HELIX_RETENTION__BACKSTOP_KEEPS_EVENTS": "true"}
    out = orjson.loads(cli("evict", "--json", **keep).stdout)
    assert {e["stage"] for e in out["evictions"]} == {1}
    hits = orjson.loads(cli("search", word, "--json").stdout)
    assert hits and {h["session_uid"] for h in hits} >= {uid}
    assert _vocab(db, word) == 1


@pytest.mark.parametrize(
    "argv", [("-m", "helixd.cli.main", "ingest", "--json"), ("-m", "helixd.daemon.app", "--once")]
)
def test_a_one_shot_sweep_ends_with_the_retention_pass(
    template: tuple[Path, Path], tmp_path: Path, argv: tuple[str, ...]
) -> None:
    """Design spec §8: a sweep is discover → normalize → analyze → evict, so a cron user's
    store is bounded; `--no-evict` skips the pass."""
    home, _ = template

    def sweep(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv, *extra],
            env=cli_env(home, db, **AGED),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            check=True,
        )

    kept = tmp_path / "kept.db"
    sweep(kept, "--no-evict")
    assert q(kept, "SELECT count(*) FROM sessions WHERE evicted_at IS NOT NULL") == [(0,)]
    swept = tmp_path / "swept.db"
    out = sweep(swept)
    evicted = q(swept, "SELECT count(*) FROM sessions WHERE evict_stage = 2")[0][0]
    assert evicted >= 20  # the fixtures are older than the 45-day backstop
    assert q(swept, "SELECT count(*) FROM evictions WHERE pass = 'backstop'")[0][0] == evicted
    if "--json" in argv:
        summary = orjson.loads(out.stdout)["eviction"]
        assert summary["applied"] == evicted and summary["bytes_freed"] > 0
    assert q(swept, "SELECT count(*) FROM digests") == q(kept, "SELECT count(*) FROM digests")


def test_the_sweep_summary_says_what_the_pass_did(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    home, _ = template
    out = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest"],
        env=cli_env(home, tmp_path / "h.db", **AGED),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    assert re.search(r"retention: \d+ sessions evicted, [\d.,]+ MB freed; Tier 1", out.stdout)


async def test_get_digest_by_uid_async_and_sync(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec §11.2: ``Store.get_digest(session_uid)`` and the read-only sync call for
    consumers holding only ``HELIX_STORE_DB`` give the digest the analyze pass wrote."""
    from helixd.query.digests import get_digest

    uid, raw = q(db, "SELECT s.uid, d.json FROM sessions s JOIN digests d ON d.session_id = s.id")[
        0
    ]
    async with await Store.open(db) as store:
        assert await store.get_digest(uid) == orjson.loads(raw)
        assert await store.get_digest("claude:no-such") is None
        assert await store.get_digest(uid[:12]) is None  # a uid, not a prefix
    assert get_digest(uid, db) == orjson.loads(raw)
    assert isinstance(orjson.loads(raw)["domain"], str)
    monkeypatch.setenv("HELIX_STORE_DB", str(db))
    assert get_digest(uid) == orjson.loads(raw)


def _events_scanned(con: sqlite3.Connection) -> int:
    """The events' share of Tier 1 counted row by row (what the running total must equal)."""
    return int(con.execute(tier1._TIER1).fetchone()[1])


def test_the_events_share_of_tier1_is_a_running_total_kept_in_step(db: Path, cli: Cli) -> None:
    """Issue 12: `status` reads the events' Tier 1 bytes from one row kept in step (not a
    scan of every event): the writer's inserts (the ingest that built the store; m027,
    ``tests/test_event_totals.py``), m014's triggers for rewrites and deletes; the figure
    stays the scan's through those, an eviction pass and on a store not migrated yet."""
    con = sqlite3.connect(db, isolation_level=None)
    try:
        statements: list[str] = []
        con.set_trace_callback(statements.append)
        _, events, _ = tier1.tier1_bytes(con)
        con.set_trace_callback(None)
        assert not [s for s in statements if "FROM events" in s], statements
        assert events == _events_scanned(con) > 0
        con.execute("BEGIN")
        con.execute("UPDATE events SET summary = summary || 'é€', body = NULL WHERE id % 3 = 0")
        con.execute("UPDATE events SET tokens = tokens + 1 WHERE id % 5 = 0")  # not counted
        con.execute("DELETE FROM events WHERE id % 7 = 0")
        con.execute("COMMIT")
        assert tier1.tier1_bytes(con)[1] == _events_scanned(con) != events
    finally:
        con.close()
    done = cli("evict", "--json", HELIX_RETENTION__RAW_SOFT_CAP_BYTES="300KiB")
    assert done.exit_code == 0, done.output
    con = sqlite3.connect(db, isolation_level=None)
    try:
        after = tier1.tier1_bytes(con)
        assert after[1] == _events_scanned(con)
        status = orjson.loads(cli("status", "--json").stdout)["store"]["tier1"]
        assert status["events_bytes"] == after[1]
        con.execute("DROP TABLE event_totals")  # a store an older Helix wrote: the scan
        assert tier1.tier1_bytes(con) == after
    finally:
        con.close()


async def _pass_traced(db: Path, retention: RetentionSettings) -> tuple[dict[str, Any], list[str]]:
    """A dry-run pass with the statements it ran on the store's connection."""
    statements: list[str] = []
    async with await Store.open(db) as store:
        await store.run(store.con.set_trace_callback, statements.append)
        out = await evict_pass(store, retention, now_ms(), None, dry_run=True)
        await store.run(store.con.set_trace_callback, None)
    return out, statements


def _per_session_scans(statements: list[str]) -> list[str]:
    """``measure``'s sums per session (the quick path's index probes are not these)."""
    return [
        s for s in statements if "GROUP BY" in s and ("FROM events" in s or "FROM raw_blocks" in s)
    ]


async def test_a_pass_with_nothing_to_evict_answers_from_the_totals_with_the_same_summary(
    db: Path,
) -> None:
    """Issue 12: within both caps and with no session past the age, the pass reads the
    running totals and the sessions' times, not every event and raw block (``measure``),
    and says what the full measurement says; one byte over the soft cap, or one session
    past the age, and it measures and evicts as before."""
    con = sqlite3.connect(db)
    total = sum(tier1.tier1_bytes(con))
    con.close()
    young = {"raw_max_age_days": 100_000}
    at_cap = RetentionSettings(raw_soft_cap_bytes=total, **young)
    quick, statements = await _pass_traced(db, at_cap)
    assert not _per_session_scans(statements), statements
    async with await Store.open(db) as store:
        usage = await store.retention_usage()
    full = select_evictions(
        usage["rows"],
        now_ms(),
        Policy.from_settings(at_cap),
        distilled_bytes=usage["distilled_bytes"],
        other_bytes=usage["other_bytes"],
    )
    assert full.evictions == [] and not full.analyze_first
    assert quick["evictions"] == [] and not quick["analyze_first"]
    assert quick["usage_before"] == quick["usage_after"] == full.usage_before == total
    assert quick["index_bytes_before"] == usage["index_bytes"]
    assert quick["distilled_bytes"] == usage["distilled_bytes"] > 0
    over, statements = await _pass_traced(
        db, RetentionSettings(raw_soft_cap_bytes=total - 1, **young)
    )
    assert _per_session_scans(statements) and over["evictions"]
    assert over["usage_before"] == total
    aged, statements = await _pass_traced(db, RetentionSettings(raw_max_age_days=45))
    assert _per_session_scans(statements)
    assert {e["pass"] for e in aged["evictions"]} == {"backstop"}
    # once the backstop has taken them, the sessions it emptied keep their old times but
    # are no longer its candidates: the next pass with nothing to evict is quick again
    async with await Store.open(db) as store:
        done = await evict_pass(store, RetentionSettings(raw_max_age_days=45), now_ms(), None)
    assert {e["pass"] for e in done["evictions"]} == {"backstop"}
    again, statements = await _pass_traced(db, RetentionSettings(raw_max_age_days=45))
    assert again["evictions"] == [] and not _per_session_scans(statements), statements

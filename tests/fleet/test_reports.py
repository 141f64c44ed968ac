"""``report --fleet`` and ``stats --fleet``: two machines' stores pushed into one database give
reports equal to the sum of the machines' own, in the same shapes, split by machine and user."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import REPO, cli_env
from tests.fleet.helpers import helixctl_on, push_once, target

TOKENS = (
    "inputTokens",
    "outputTokens",
    "cacheCreationTokens",
    "cacheReadTokens",
    "reasoningOutputTokens",
    "totalTokens",
)


def ctl(db: Path, *args: str, **env: str) -> Any:
    proc = helixctl_on(db, *args, "--json", **env)
    assert proc.returncode == 0, proc.stderr
    return orjson.loads(proc.stdout)


@pytest.fixture
def two_machines(make_store: Any, pg_db: str) -> tuple[Path, Path, str]:
    a, b = make_store("claude", "a"), make_store("both", "b")
    asyncio.run(push_once(a, target(pg_db, "laptop", user="alice")))
    asyncio.run(push_once(b, target(pg_db, "ci-runner", user="bot")))
    return a, b, pg_db


def _add(x: dict[str, Any], y: dict[str, Any]) -> dict[str, Any]:
    return {k: x.get(k, 0) + y.get(k, 0) for k in (*TOKENS, "totalCost")}


def _tokens(e: dict[str, Any], cost: str = "totalCost") -> dict[str, Any]:
    return {**{k: e[k] for k in TOKENS}, "totalCost": pytest.approx(e[cost])}


def test_fleet_daily_and_monthly_reports_are_the_sum_of_the_machines(
    two_machines: tuple[Path, Path, str],
) -> None:
    a, b, dsn = two_machines
    for period, key in (("daily", "date"), ("monthly", "month")):
        mine = ctl(a, "report", period, "-z", "UTC")
        theirs = ctl(b, "report", period, "-z", "UTC")
        fleet = ctl(a, "report", period, "-z", "UTC", "--fleet", HELIX_FLEET__DSN=dsn)
        assert _tokens(fleet["totals"]) == _add(mine["totals"], theirs["totals"])
        by_a = {e[key]: e for e in mine[period]}
        by_b = {e[key]: e for e in theirs[period]}
        assert {e[key] for e in fleet[period]} == by_a.keys() | by_b.keys()
        for e in fleet[period]:
            ours = [x for x in (by_a.get(e[key]), by_b.get(e[key])) if x]
            total = ours[0] if len(ours) == 1 else _add(*ours)
            assert _tokens(e) == {k: total[k] for k in (*TOKENS, "totalCost")}, e[key]
            split = {m["machine"]: m for m in e["machineBreakdowns"]}
            for name, local in (("laptop", by_a), ("ci-runner", by_b)):
                if e[key] in local:
                    assert _tokens(split[name], "cost") == _tokens(local[e[key]])
                    assert split[name]["user"] == {"laptop": "alice", "ci-runner": "bot"}[name]
            assert e["agents"] == sorted({ag for x in ours for ag in x["agents"]})
        users = {u["user"]: u for u in fleet["users"]}
        assert _tokens(users["alice"], "cost") == _tokens(mine["totals"])
        assert _tokens(users["bot"], "cost") == _tokens(theirs["totals"])


def test_fleet_session_report_lists_each_machines_sessions(
    two_machines: tuple[Path, Path, str],
) -> None:
    a, b, dsn = two_machines
    mine = ctl(a, "report", "session")
    theirs = ctl(b, "report", "session")
    fleet = ctl(a, "report", "session", "--fleet", HELIX_FLEET__DSN=dsn)
    assert len(fleet["sessions"]) == len(mine["sessions"]) + len(theirs["sessions"])
    got = {(e["machine"], e["sessionId"]): e for e in fleet["sessions"]}
    for name, doc in (("laptop", mine), ("ci-runner", theirs)):
        for e in doc["sessions"]:
            f = got[(name, e["sessionId"])]
            assert _tokens(f) == _tokens(e)
            assert (f["agent"], f["projectPath"], f["lastActivity"]) == (
                e["agent"],
                e["projectPath"],
                e["lastActivity"],
            )
    only_a = ctl(a, "report", "session", "--fleet", "--machine", "laptop", HELIX_FLEET__DSN=dsn)
    assert _tokens(only_a["totals"]) == _tokens(mine["totals"])
    only_bot = ctl(a, "report", "daily", "--fleet", "--user", "bot", HELIX_FLEET__DSN=dsn)
    their_days = ctl(b, "report", "daily")  # (days leave undated usage apart; sessions do not)
    assert _tokens(only_bot["totals"]) == _tokens(their_days["totals"])
    assert only_bot.get("undated", {}).get("inputTokens") == (
        their_days.get("undated", {}).get("inputTokens")
    )


def test_fleet_stats_are_the_sum_of_the_machines(two_machines: tuple[Path, Path, str]) -> None:
    a, b, dsn = two_machines
    mine, theirs = ctl(a, "stats"), ctl(b, "stats")
    fleet = ctl(a, "stats", "--fleet", "--top", "1000", HELIX_FLEET__DSN=dsn)
    for dim in ("by_agent", "by_model"):
        for key in mine[dim].keys() | theirs[dim].keys():
            x, y = mine[dim].get(key, {}), theirs[dim].get(key, {})
            f = fleet[dim][key]
            assert f["sessions"] == x.get("sessions", 0) + y.get("sessions", 0), (dim, key)
            assert f["tokens"] == x.get("tokens", 0) + y.get("tokens", 0), (dim, key)
            assert f["cost"] == pytest.approx(x.get("cost", 0) + y.get("cost", 0))
    assert fleet["by_machine"]["laptop"]["tokens"] == sum(
        v["tokens"] for v in mine["by_agent"].values()
    )
    assert fleet["by_user"]["bot"]["sessions"] == sum(
        v["sessions"] for v in theirs["by_agent"].values()
    )
    calls = {t["tool"]: t["calls"] for t in fleet["tools"]}
    for t in mine["tools"] + theirs["tools"]:
        calls[t["tool"]] -= t["calls"]
    assert set(calls.values()) == {0}
    for fw, v in fleet["tests"].items():
        x, y = mine["tests"].get(fw, {}), theirs["tests"].get(fw, {})
        assert v["runs"] == x.get("runs", 0) + y.get("runs", 0)
    ie = fleet["interventions_and_errors"]
    for k in ("interventions", "errors", "sessions_with_any"):
        assert ie[k] == mine["interventions_and_errors"][k] + theirs["interventions_and_errors"][k]
    assert {r["machine"] for r in ie["top"]} <= {"laptop", "ci-runner"}


def test_fleet_text_output_shows_machines_and_users(two_machines: tuple[Path, Path, str]) -> None:
    a, _, dsn = two_machines
    proc = helixctl_on(a, "report", "monthly", "--fleet", "--breakdown", HELIX_FLEET__DSN=dsn)
    assert proc.returncode == 0, proc.stderr
    assert "By machine" in proc.stdout and "ci-runner" in proc.stdout
    assert "laptop (alice)" in proc.stdout and "By user" in proc.stdout
    stats = helixctl_on(a, "stats", "--fleet", HELIX_FLEET__DSN=dsn)
    assert stats.returncode == 0 and "By machine" in stats.stdout and "By user" in stats.stdout


def test_fleet_reports_need_a_reachable_fleet(make_store: Any, pg_server: Any) -> None:
    db = make_store("claude")
    env = cli_env(db.parent, db)
    run = [sys.executable, "-m", "helixd.cli.main"]
    no_dsn = subprocess.run(
        [*run, "report", "daily", "--fleet"], env=env, capture_output=True, text=True, cwd=REPO
    )
    assert no_dsn.returncode == 2 and "no fleet database configured" in no_dsn.stderr
    empty = pg_server.dsn("postgres")  # reachable, but no Helix schema in it
    proc = subprocess.run(
        [*run, "stats", "--fleet"],
        env={**env, "HELIX_FLEET__DSN": empty},
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 3 and "no Helix fleet schema" in proc.stderr
    nowhere = subprocess.run(
        [*run, "report", "daily", "--fleet"],
        env={**env, "HELIX_FLEET__DSN": "host=/nonexistent dbname=x"},
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert nowhere.returncode == 3 and "cannot connect" in nowhere.stderr
    mixed = subprocess.run(
        [*run, "report", "daily", "--machine", "x"],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert mixed.returncode == 2 and "--fleet" in mixed.stderr


def test_the_cost_agents_recorded_reaches_the_fleet_and_prices_its_reports(
    make_store: Any, pg_db: str
) -> None:
    """Pi records the dollars of each response: the usage facts and buckets carry them to the
    server (m016's columns, p003), and a fleet report prices them as the machine's own
    report does (``--cost auto``: recorded where present)."""
    from tests.fleet.helpers import tier2_local, tier2_server

    db = make_store("pi", "p")
    recorded = [r[-1] for r in tier2_local(db)["usage"] if r[-1] is not None]
    assert recorded and sum(recorded) > 0
    asyncio.run(push_once(db, target(pg_db, "laptop", user="alice")))
    assert tier2_server(pg_db, "laptop") == tier2_local(db)
    local = ctl(db, "report", "monthly", "-z", "UTC")
    fleet = ctl(db, "report", "monthly", "-z", "UTC", "--fleet", HELIX_FLEET__DSN=pg_db)
    assert fleet["totals"]["totalCost"] == pytest.approx(local["totals"]["totalCost"])
    calculated = ctl(db, "report", "monthly", "-z", "UTC", "--cost", "calculate")
    assert local["totals"]["totalCost"] != pytest.approx(calculated["totals"]["totalCost"])


def test_a_fleet_database_behind_this_helix_is_refused_with_one_line(
    make_store: Any, pg_db: str
) -> None:
    """A reader upgraded before the server was migrated (a reader's role may not migrate):
    `report --fleet` and `stats --fleet` exit 3 and say which migrations are missing, instead
    of failing on a column the older schema lacks."""
    from tests.fleet.helpers import server

    db = make_store("claude", "a")
    asyncio.run(push_once(db, target(pg_db, "laptop", user="alice")))
    server(pg_db, "DELETE FROM helix.migrations WHERE name = 'p003_recorded_cost'")
    server(pg_db, "ALTER TABLE helix.usage_buckets DROP COLUMN costed")  # as p002 left it
    env = {**cli_env(db.parent, db), "HELIX_FLEET__DSN": pg_db}
    for args in (["report", "daily", "--fleet"], ["stats", "--fleet"]):
        proc = subprocess.run(
            [sys.executable, "-m", "helixd.cli.main", *args],
            env=env, capture_output=True, text=True, cwd=REPO, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 3, proc.stderr
        assert "p003_recorded_cost" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1

"""Issue 16: the dollars agents record themselves (Pi ``usage.cost.total``, Cline SDK
``metrics.cost`` and classic ``api_req_started`` ``cost``, Crush / legacy OpenCode session
``cost``, Aider's ``Cost: $x message``) reach the store's usage facts and rollups.  The
totals are checked against sums computed straight from the real fixture files (json,
sqlite3 on a copy, a regex), never from Helix's own parsing."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters import Adapter, adapter_named
from helixd.adapters.base import Chunk, FileContext
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.renormalize import renormalize
from helixd.store.database import Store
from helixd.store.schema import MIGRATIONS
from tests.conftest import FIXTURES, RunCli, copy_claude_fixtures


def stored_costs(db: Path) -> dict[str, tuple[float, int]]:
    """``{agent: (sum of recorded dollars, facts carrying one)}`` from the usage rows, with
    the rollups checked equal to the rows, cost and ``costed`` included."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT s.agent, total(u.recorded_cost_usd), count(u.recorded_cost_usd) FROM usage u"
            " JOIN sessions s ON s.id = u.session_id GROUP BY 1"
        ).fetchall()
        truth = con.execute(
            "SELECT coalesce(ts, 0) / 900000, session_id, model, count(*),"
            " round(sum(recorded_cost_usd), 9), count(recorded_cost_usd) FROM usage"
            " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ).fetchall()
        kept = con.execute(
            "SELECT bucket, session_id, model, responses, round(recorded_cost_usd, 9), costed"
            " FROM usage_buckets ORDER BY 1, 2, 3"
        ).fetchall()
        assert kept == truth
        hours = con.execute(
            "SELECT coalesce(u.ts, 0) / 3600000, s.agent, u.model, count(*),"
            " round(sum(u.recorded_cost_usd), 9), count(u.recorded_cost_usd)"
            " FROM usage u JOIN sessions s ON s.id = u.session_id GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ).fetchall()
        kept_h = con.execute(
            "SELECT hour, agent, model, responses, round(recorded_cost_usd, 9), costed"
            " FROM usage_hours ORDER BY 1, 2, 3"
        ).fetchall()
        assert kept_h == hours
        return {agent: (total, n) for agent, total, n in rows}
    finally:
        con.close()


def pi_truth(root: Path) -> tuple[float, int]:
    seen: dict[str, float] = {}
    for path in root.rglob("*.jsonl"):
        for i, line in enumerate(path.read_text().splitlines()):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            msg = obj.get("message") if isinstance(obj, dict) else None
            if obj.get("type") != "message" or not isinstance(msg, dict):
                continue
            usage = msg.get("usage") or {}
            cost = (usage.get("cost") or {}).get("total") if isinstance(usage, dict) else None
            spent = any(usage.get(k) for k in ("input", "output", "cacheRead", "cacheWrite"))
            if spent and isinstance(cost, int | float) and cost > 0:
                seen[f"{path}:{i}"] = cost
    return sum(seen.values()), len(seen)


def cline_truth(root: Path) -> tuple[float, int]:
    costs = []
    for path in root.rglob("*.messages.json"):
        for m in json.loads(path.read_text())["messages"]:
            cost = (m.get("metrics") or {}).get("cost")
            if isinstance(cost, int | float) and cost > 0:
                costs.append(cost)
    return sum(costs), len(costs)


def crush_truth(projects: Path, name: str) -> tuple[float, int]:
    total, n = 0.0, 0
    for db in projects.rglob(name):
        copy = db.parent / f"copy-{db.name}"  # a copy: never write to the agent's database
        shutil.copy(db, copy)
        if db.with_name(db.name + "-wal").exists():
            shutil.copy(db.with_name(db.name + "-wal"), copy.with_name(copy.name + "-wal"))
        con = sqlite3.connect(copy)
        try:
            for cost, p, c in con.execute(
                "SELECT cost, prompt_tokens, completion_tokens FROM sessions"
            ):
                if (p or c) and cost and cost > 0:
                    total, n = total + cost, n + 1
        finally:
            con.close()
        for f in copy.parent.glob(f"copy-{db.name}*"):
            f.unlink()
    return total, n


def aider_truth(projects: Path) -> tuple[float, int]:
    costs = [
        float(m.group(1))
        for path in projects.rglob(".aider.chat.history.md")
        for m in re.finditer(r"^> Tokens: .*Cost: \$([\d.]+) message", path.read_text(), re.M)
    ]
    return sum(costs), len(costs)


async def ingest_all(store: Store, pairs: list[tuple[Adapter, Path]]) -> None:
    await Ingestor(store).backfill(discover(pairs))


async def test_recorded_costs_equal_the_sums_in_the_files(tmp_path: Path) -> None:
    pi_root = tmp_path / "pi"
    shutil.copytree(FIXTURES / "pi", pi_root, ignore=shutil.ignore_patterns("*.md"))
    cline_root = tmp_path / "cline"
    shutil.copytree(
        FIXTURES / "cline-cli" / "1784094124598_rruoq", cline_root / "1784094124598_rruoq"
    )
    pairs: list[tuple[Adapter, Path]] = [
        (adapter_named("pi"), pi_root),
        (adapter_named("cline-cli"), cline_root),
    ]
    for agent, fixture in (("crush", "crush"), ("opencode_go", "opencode_go"), ("aider", "aider")):
        for project in sorted((FIXTURES / fixture).iterdir()):
            if project.is_dir():
                shutil.copytree(project, tmp_path / agent / project.name)
                pairs.append((adapter_named(agent), tmp_path / agent / project.name))
    truth = {
        "pi": pi_truth(pi_root),
        "cline-cli": cline_truth(cline_root),
        "crush": crush_truth(tmp_path / "crush", "crush.db"),
        "opencode_go": crush_truth(tmp_path / "opencode_go", "opencode.db"),
        "aider": aider_truth(tmp_path / "aider"),
    }
    assert all(n > 0 for _, n in truth.values()), truth  # every agent has recorded costs
    store = await Store.open(tmp_path / "store" / "helix.db")
    try:
        await ingest_all(store, pairs)
        got = stored_costs(store.path)
        await ingest_all(store, pairs)  # idempotent: nothing read twice
        assert stored_costs(store.path) == got
    finally:
        await store.close()
    for agent, (total, n) in truth.items():
        assert got[agent][1] == n, agent
        assert got[agent][0] == pytest.approx(total, rel=1e-9), agent


def test_classic_cline_api_req_cost_and_a_zero_cost_is_not_recorded() -> None:
    adapter = adapter_named("cline_vscode")
    rel = "test-task-1/ui_messages.json"
    path = FIXTURES / "cline_vscode" / rel
    parsed = adapter.parse(Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {})
    # the three api_req_started texts: cost 0.001, 0.002, 0.003
    assert [u.recorded_cost_usd for u in parsed.usage] == [0.001, 0.002, 0.003]
    line = (
        b'{"type":"message","id":"m1","timestamp":"2026-01-01T00:00:00Z","message":{"role":'
        b'"assistant","model":"m","content":[],"usage":{"input":5,"output":1,"cost":{"total":0}}}}\n'
    )
    pi = adapter_named("pi")
    rel = "--tmp--/2026-01-01T00-00-00-000Z_0000.jsonl"
    got = pi.parse(Chunk(line, 0, True, FileContext(f"/r/{rel}", rel)), {})
    assert [u.recorded_cost_usd for u in got.usage] == [None]  # 0: the agent had no price


def test_a_cost_that_is_not_a_number_is_a_bad_line_not_a_crash() -> None:
    line = (
        b'{"type":"message","id":"m1","timestamp":"2026-01-01T00:00:00Z","message":{"role":'
        b'"assistant","model":"m","content":[],"usage":{"input":5,"output":1,'
        b'"cost":{"total":"lots"}}}}\n'
    )
    pi = adapter_named("pi")
    rel = "--tmp--/2026-01-01T00-00-00-000Z_0000.jsonl"
    got = pi.parse(Chunk(line, 0, True, FileContext(f"/r/{rel}", rel)), {})
    assert got.usage == [] and len(got.bad) == 1 and "usage.cost.total" in got.bad[0].reason


def _json(helixctl: RunCli, *args: str) -> Any:
    return orjson.loads(helixctl(*args, "--json").stdout)


def test_reports_and_lookup_use_the_recorded_cost_by_mode(helixctl: RunCli, home: Path) -> None:
    """``--cost auto|calculate|recorded`` on report, lookup, sessions and tokens: auto takes
    the agent's recorded dollars (Pi) and prices the rest from the table (Claude); each row
    says which source priced it.  Aider's usage is marked approximate."""
    pi_root = home / ".pi" / "agent" / "sessions"
    shutil.copytree(FIXTURES / "pi", pi_root, ignore=shutil.ignore_patterns("*.md"))
    copy_claude_fixtures(home)
    aider = home / "work" / "aider"
    shutil.copytree(FIXTURES / "aider" / "Aquaticat__Monochromatic", aider)
    extra = {"HELIX_AGENTS__AIDER__ROOTS": orjson.dumps([str(aider)]).decode()}
    helixctl("ingest", **extra)
    pi_total, _ = pi_truth(pi_root)

    recorded = _json(helixctl, "report", "session", "--cost", "recorded", "--agent", "pi")
    assert recorded["costMode"] == "recorded"
    assert recorded["totals"]["totalCost"] == pytest.approx(pi_total, rel=1e-9)
    assert {s["costSource"] for s in recorded["sessions"]} == {"recorded"}
    calculated = _json(helixctl, "report", "session", "--cost", "calculate", "--agent", "pi")
    assert {s["costSource"] for s in calculated["sessions"]} == {"table"}
    assert calculated["totals"]["totalCost"] != pytest.approx(pi_total, rel=1e-6)
    auto = _json(helixctl, "report", "daily", "-z", "UTC")  # every agent, the default mode
    sources = {b["costSource"] for e in auto["daily"] for b in e["modelBreakdowns"]}
    assert sources == {"recorded", "table"}  # Pi's and Aider's recorded, Claude's priced
    by_agent = _json(helixctl, "report", "daily", "-z", "UTC", "--agent", "pi")
    assert by_agent["totals"]["totalCost"] == pytest.approx(pi_total, rel=1e-9)
    claude = _json(helixctl, "report", "daily", "--agent", "claude")
    claude_calc = _json(helixctl, "report", "daily", "--agent", "claude", "--cost", "calculate")
    assert claude["totals"]["totalCost"] == claude_calc["totals"]["totalCost"] > 0
    assert (
        _json(helixctl, "report", "daily", "--agent", "claude", "--cost", "recorded")["totals"][
            "totalCost"
        ]
        == 0
    )
    assert "row" in helixctl("report", "daily", "--agent", "pi").stdout.split("Cost (--cost")[1]

    uid = "pi:019e963d-6bd6-7ade-8a49-256ac3391bdd"  # one response, cost.total 0.002435
    d = _json(helixctl, "lookup", uid)
    assert d["cost"]["usd"] == 0.002435 and d["cost"]["usd_source"] == "recorded"
    assert "cost $0.0024 (recorded by the agent)" in helixctl("lookup", uid).stdout
    calc = _json(helixctl, "lookup", uid, "--cost", "calculate")
    assert calc["cost"]["usd_source"] == "table" and calc["cost_mode"] == "calculate"
    assert "(prices of " in helixctl("lookup", uid, "--cost", "calculate").stdout
    listed = {s["uid"]: s for s in _json(helixctl, "sessions", "--all", "--cost", "recorded")}
    assert listed[uid]["cost_usd"] == 0.002435
    assert all(s["cost_usd"] == 0 for u, s in listed.items() if u.startswith("claude:"))

    aider_uid = next(u for u in listed if u.startswith("aider:") and listed[u]["tokens"])
    a = _json(helixctl, "lookup", aider_uid)
    assert a["usage_approximate"] and "rounded" in a["usage_approximate"]
    assert (
        "(approximate: Aider prints its token counts rounded"
        in helixctl("lookup", aider_uid).stdout
    )
    assert _json(helixctl, "lookup", uid)["usage_approximate"] is None


def _without_costs(adapter: Adapter) -> Adapter:
    """The adapter as its version before issue 16 behaved: no recorded cost."""

    def parse(chunk: Chunk, state: Any) -> Any:
        out = adapter.parse(chunk, state)
        return out._replace(usage=[u._replace(recorded_cost_usd=None) for u in out.usage])

    return adapter.replace(version=adapter.version - 1, parse=parse)


async def test_renormalization_fills_the_recorded_cost_of_rows_stored_before(
    tmp_path: Path,
) -> None:
    pi = adapter_named("pi")
    root = tmp_path / "pi"
    shutil.copytree(FIXTURES / "pi", root, ignore=shutil.ignore_patterns("*.md"))
    store = await Store.open(tmp_path / "store" / "helix.db")
    try:
        await ingest_all(store, [(_without_costs(pi), root)])
        assert stored_costs(store.path)["pi"] == (0.0, 0)  # NULL everywhere, rollups too
        await renormalize(store, [pi])
        total, n = stored_costs(store.path)["pi"]
    finally:
        await store.close()
    assert (total, n) == (pytest.approx(pi_truth(root)[0], rel=1e-9), pi_truth(root)[1])


async def test_m016_adds_the_columns_to_an_older_store_and_keeps_every_row(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " applied_at INTEGER NOT NULL)"
    )
    for name, sql in MIGRATIONS:
        if name == "m016_recorded_cost":
            break
        con.executescript(sql)
        con.execute("INSERT INTO migrations (name, applied_at) VALUES (?, 0)", (name,))
    con.execute(
        "INSERT INTO sessions (id, uid, agent, native_id, discovered_at)"
        " VALUES (1, 'pi:s', 'pi', 's', 0)"
    )
    for key in (1, 2):
        con.execute(
            "INSERT INTO usage (key, session_id, rank, ts, model, input, output, cache_read,"
            " cache_write_5m, cache_write_1h, reasoning)"
            " VALUES (?, 1, '', 0, 'm', 10, 1, 0, 0, 0, 0)",
            (key,),
        )
    con.execute("INSERT INTO usage_buckets VALUES (0, 1, 'm', 2, 20, 2, 0, 0, 0, 0)")
    con.execute("INSERT INTO usage_hours VALUES (0, 'pi', 'm', 2, 20, 2, 0, 0, 0, 0)")
    con.commit()
    con.close()
    store = await Store.open(db)  # migrates
    await store.close()
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT key, input, recorded_cost_usd FROM usage ORDER BY key")
        assert rows.fetchall() == [(1, 10, None), (2, 10, None)]
        got = "SELECT responses, input, recorded_cost_usd, costed FROM usage_buckets"
        assert con.execute(got).fetchall() == [(2, 20, None, 0)]
        con.execute("DELETE FROM usage WHERE key = 1")  # the new delete trigger
        assert con.execute(got).fetchall() == [(1, 10, None, 0)]
        hours = "SELECT responses, recorded_cost_usd, costed FROM usage_hours"
        assert con.execute(hours).fetchall() == [(1, None, 0)]
    finally:
        con.close()

"""The analytics view: sessions and spend by agent, repo and model; tool success rates;
most-edited files; test runs by framework; interventions and errors per session."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from helixd.core.testcommands import test_runner
from helixd.core.timeparse import iso
from helixd.core.usage_report import cost
from helixd.store import queries

if TYPE_CHECKING:
    from helixd.core.pricing import Prices


def _spend() -> dict[str, Any]:
    return {"sessions": 0, "tokens": 0, "cost": 0.0}


def _tools(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out = []
    for t, n, e, rj, it, nr in rows:
        e, rj, it, nr = e or 0, rj or 0, it or 0, nr or 0
        answered = n - nr  # calls whose result was recorded
        out.append(
            {
                "tool": t,
                "calls": n,
                "errors": e,
                "rejected": rj,
                "interrupted": it,
                "no_result": nr,
                "success_rate": round((answered - e - rj - it) / answered, 4) if answered else None,
            }
        )
    return out


def _tests(rows: list[tuple[Any, ...]]) -> dict[str, dict[str, Any]]:
    tests: dict[str, dict[str, Any]] = {}
    zero = dict.fromkeys(("runs", "passed", "failed", "tests_passed", "tests_failed"), 0)
    for framework, command, status, t_pass, t_fail, t_skip in rows:
        name = framework or test_runner(command or "") or "other"
        fw = tests.setdefault(name, {**zero, "tests_skipped": 0})
        fw["runs"] += 1
        if status == "passed":
            fw["passed"] += 1
        elif status in ("failed", "error"):
            fw["failed"] += 1
        fw["tests_passed"] += t_pass or 0
        fw["tests_failed"] += t_fail or 0
        fw["tests_skipped"] += t_skip or 0
    for v in tests.values():
        decided = v["passed"] + v["failed"]
        v["pass_rate"] = round(v["passed"] / decided, 4) if decided else None
    return tests


def stats(con: sqlite3.Connection, since: int | None, top: int, prices: Prices) -> dict[str, Any]:
    raw = queries.stats(con, since, top)
    by: dict[str, dict[str, dict[str, Any]]] = {"agent": {}, "repo": {}, "model": {}}
    for agent, repo, n in raw["sessions"]:
        for dim, key in (("agent", agent), ("repo", repo or "-")):
            by[dim].setdefault(key, _spend())["sessions"] += n
    for agent, repo, model, *c in raw["usage"]:
        usd = cost(prices, model, c)
        total = sum(c[:5])
        for dim, key in (("agent", agent), ("repo", repo or "-"), ("model", model)):
            s = by[dim].setdefault(key, _spend())
            s["tokens"] += total
            s["cost"] += usd
    for model, n in raw["model_sessions"]:
        by["model"].setdefault(model, _spend())["sessions"] = n
    per_session = sorted(raw["per_session"], key=lambda r: -(r[1] + r[2]))
    return {
        "since": iso(since),
        "by_agent": by["agent"],
        "by_repo": dict(sorted(by["repo"].items(), key=lambda kv: -kv[1]["cost"])[:top]),
        "by_model": by["model"],
        "tools": _tools(raw["tools"]),
        "files": [
            {"path": p, "edits": n, "sessions": s, "lines_added": a, "lines_removed": r}
            for p, n, s, a, r in raw["files"]
        ],
        "tests": _tests(raw["tests"]),
        "interventions_and_errors": {
            "sessions_with_any": len(per_session),
            "interventions": sum(r[1] for r in per_session),
            "errors": sum(r[2] for r in per_session),
            "top": [
                {"session_uid": u, "interventions": i, "errors": e} for u, i, e in per_session[:top]
            ],
        },
    }

"""The analytics view: sessions and spend by agent, repo and model; tool success rates;
most-edited files; test runs by framework; interventions and errors per session."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from helixd.core.testcommands import test_runner
from helixd.core.timeparse import iso
from helixd.core.usage_report import cost
from helixd.store import stats_queries

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
    return shape(stats_queries.stats(con, since, top), since, top, prices)


def shape(
    raw: Mapping[str, Any],
    since: int | None,
    top: int,
    prices: Prices,
    machine_of: Callable[[Any], tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The stats document from the rows ``stats_queries.stats`` returns.  With ``machine_of`` (the
    fleet's rows: a machine id after the dimensions of ``sessions`` and ``usage`` and after the
    counts of ``per_session``, named ``(machine, user)`` by it) also ``by_machine`` and
    ``by_user``, and each session of the top list names its machine."""
    fleet = machine_of is not None
    dims = ("agent", "repo", "model", *(("machine", "user") if fleet else ()))
    by: dict[str, dict[str, dict[str, Any]]] = {d: {} for d in dims}

    def where(agent: str, repo: str | None, rest: list[Any]) -> list[tuple[str, str]]:
        keys = [("agent", agent), ("repo", repo or "-")]
        if machine_of is not None:
            label, user = machine_of(rest[0])
            keys += [("machine", label), ("user", user)]
        return keys

    for agent, repo, *rest in raw["sessions"]:
        for dim, key in where(agent, repo, rest):
            by[dim].setdefault(key, _spend())["sessions"] += rest[-1]
    for agent, repo, model, *rest in raw["usage"]:
        c = rest[1:] if fleet else rest
        usd = cost(prices, model, c)
        total = sum(c[:5])
        for dim, key in [*where(agent, repo, rest), ("model", model)]:
            s = by[dim].setdefault(key, _spend())
            s["tokens"] += total
            s["cost"] += usd
    for model, n in raw["model_sessions"]:
        by["model"].setdefault(model, _spend())["sessions"] = n
    per_session = sorted(raw["per_session"], key=lambda r: -(r[1] + r[2]))
    doc = {
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
                {
                    "session_uid": r[0],
                    "interventions": r[1],
                    "errors": r[2],
                    **({"machine": machine_of(r[3])[0]} if machine_of else {}),
                }
                for r in per_session[:top]
            ],
        },
    }
    if fleet:
        doc["by_machine"] = by["machine"]
        doc["by_user"] = by["user"]
    return doc

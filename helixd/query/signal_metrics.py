"""The dashboard's questions about the Tier 2 signals: how the tools fare (success,
duration), which files are edited and whether the edits were accepted, how the tests go.

Each function reads the signal tables and their rollup (``tool_call_hours``) only
(``store/signal_queries.py``), so its cost does not grow with the events stored.  Time slots
are days (or hours, weeks) in a fixed UTC offset ``offset_s`` the face chooses (the page's
zone).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any, Final

from helixd.core.timeparse import iso
from helixd.query.metric_units import STEPS, rate, slot_start
from helixd.store import signal_queries as sq
from helixd.store.metrics_queries import Scope

__all__ = ["Scope", "acceptance", "files", "test_summary", "tests", "tools"]

_OK: Final = "success"


MAX_SLOTS: Final = 400


def _slots(lo: int, hi: int, step_s: int, offset_s: int) -> list[int]:
    first = (lo // 1000 + offset_s) // step_s
    last = (hi // 1000 + offset_s) // step_s
    return list(range(first, min(last, first + MAX_SLOTS - 1) + 1))


def tools(
    con: sqlite3.Connection,
    sc: Scope,
    step: str | None = None,
    offset_s: int = 0,
    percentiles: bool = True,
) -> dict[str, Any]:
    """Per tool: calls, results by status, success rate (of calls with a result), and
    duration p50 / p95 (exact: an offset into the duration index; with ``percentiles``) /
    mean / max; totals; calls per slot by status with ``step``."""
    per: dict[str, dict[str, Any]] = {}
    for tool, status, n, known, total_ms, max_ms in sq.tools(con, sc):
        t = per.setdefault(
            tool, {"tool": tool, "calls": 0, "by_status": {}, "timed": 0, "_sum": 0, "max_ms": None}
        )
        t["calls"] += n
        t["by_status"][status] = t["by_status"].get(status, 0) + n
        if known:
            t["timed"] += known
            t["_sum"] += total_ms or 0
            t["max_ms"] = max(t["max_ms"] or 0, max_ms or 0)
    rows = []
    all_status: dict[str, int] = {}
    for tool, t in per.items():
        answered = t["calls"] - t["by_status"].get("missing", 0)
        known, total_ms = t["timed"], t.pop("_sum")
        for st, n in t["by_status"].items():
            all_status[st] = all_status.get(st, 0) + n
        rows.append(
            t
            | {
                "success_rate": rate(t["by_status"].get(_OK, 0), answered),
                "errors": t["by_status"].get("error", 0),
                "p50_ms": sq.duration_at(con, sc, tool, (known - 1) // 2)
                if known and percentiles
                else None,
                "p95_ms": sq.duration_at(con, sc, tool, int(0.95 * (known - 1)))
                if known and percentiles
                else None,
                "mean_ms": round(total_ms / known) if known else None,
            }
        )
    rows.sort(key=lambda r: (-r["calls"], r["tool"]))
    calls = sum(all_status.values())
    answered = calls - all_status.get("missing", 0)
    doc: dict[str, Any] = {
        "tools": rows,
        "total": {
            "calls": calls,
            "by_status": dict(sorted(all_status.items())),
            "success_rate": rate(all_status.get(_OK, 0), answered),
        },
    }
    if step:
        step_s = STEPS[step]
        span = sq.tool_span(con)
        lo = sc.since if sc.since is not None else span[0] if span else None
        hi = sc.until if sc.until is not None else span[1] + 1 if span else None
        over: list[dict[str, Any]] = []
        if lo is not None and hi is not None and calls:
            shown = _slots(lo, hi, step_s, offset_s)
            per_slot: dict[int, dict[str, int]] = defaultdict(dict)
            for slot, status, n in sq.tools_per_slot(con, sc, lo, hi, step_s, offset_s):
                if shown[0] <= slot <= shown[-1]:
                    per_slot[slot][status] = n
            for slot in sorted(per_slot):
                start = (slot * step_s - offset_s) * 1000
                over.append({"slot": slot, "start": iso(start), "by_status": per_slot[slot]})
        doc["over_time"] = over
    return doc


def files(
    con: sqlite3.Connection, sc: Scope, limit: int = 50, step: str = "week", offset_s: int = 0
) -> dict[str, Any]:
    """The most operated-on files (operations, sessions, lines, acceptance) and, for the
    heatmap, their operations per slot."""
    step_s = STEPS[step]
    rows = [
        {
            "path": p,
            "language": lang,
            "operations": n,
            "writes": w or 0,
            "edits": n - (w or 0),
            "sessions": s,
            "lines_added": a or 0,
            "lines_removed": r or 0,
            "accepted": acc or 0,
            "rejected": rej or 0,
            "acceptance_rate": rate(acc or 0, (acc or 0) + (rej or 0)),
            "last_at": iso(last),
        }
        for p, lang, n, w, s, a, r, acc, rej, last in sq.files(con, sc, limit)
    ]
    cells: dict[str, dict[int, int]] = defaultdict(dict)
    for path, slot, n in sq.file_slots(con, sc, [r["path"] for r in rows], step_s, offset_s):
        cells[path][slot] = n
    all_slots = sorted({s for c in cells.values() for s in c})
    return {
        "files": rows,
        "heatmap": {
            "step": step,
            "slots": [{"slot": s, "start": slot_start(s, step_s, offset_s)} for s in all_slots],
            "cells": {p: {str(k): v for k, v in c.items()} for p, c in cells.items()},
        },
    }


def acceptance(con: sqlite3.Connection, sc: Scope) -> dict[str, Any]:
    """Edits and writes by language: how many, how many the user accepted or rejected, the
    acceptance rate (of those decided), lines added / removed."""
    langs: dict[str, dict[str, Any]] = {}
    for lang, op, n, acc, rej, added, removed in sq.acceptance(con, sc):
        d = langs.setdefault(
            lang or "other",
            {"language": lang or "other", "operations": 0, "edits": 0, "writes": 0,
             "accepted": 0, "rejected": 0, "lines_added": 0, "lines_removed": 0},
        )  # fmt: skip
        d["operations"] += n
        d["writes" if op == "write" else "edits"] += n
        d["accepted"] += acc or 0
        d["rejected"] += rej or 0
        d["lines_added"] += added or 0
        d["lines_removed"] += removed or 0
    rows = sorted(langs.values(), key=lambda d: (-d["operations"], d["language"]))
    for d in rows:
        d["acceptance_rate"] = rate(d["accepted"], d["accepted"] + d["rejected"])
    acc = sum(d["accepted"] for d in rows)
    rej = sum(d["rejected"] for d in rows)
    return {
        "by_language": rows,
        "total": {
            "operations": sum(d["operations"] for d in rows),
            "accepted": acc,
            "rejected": rej,
            "acceptance_rate": rate(acc, acc + rej),
        },
    }


def _runner(framework: str | None, command: str | None) -> str:
    from helixd.core.testcommands import test_runner

    return framework or test_runner(command or "") or "other"


_DECIDED: Final = {"passed": "passed", "failed": "failed", "error": "failed"}


def test_summary(con: sqlite3.Connection, sc: Scope) -> dict[str, Any]:
    runs = passed = failed = 0
    for _slot, _fw, _cmd, status, n, *_ in sq.test_totals(con, sc, None):
        runs += n
        passed += n if status == "passed" else 0
        failed += n if _DECIDED.get(status) == "failed" else 0
    return {
        "runs": runs,
        "passed": passed,
        "failed": failed,
        "pass_rate": rate(passed, passed + failed),
    }


def tests(
    con: sqlite3.Connection,
    sc: Scope,
    limit: int = 50,
    offset: int = 0,
    step: str = "day",
    offset_s: int = 0,
) -> dict[str, Any]:
    """Test runs newest first (each pointing at its session and event), runs per slot by
    outcome (the trend), and totals per framework."""
    step_s = STEPS[step]
    trend: dict[int, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "other": 0})
    frameworks: dict[str, dict[str, Any]] = {}
    for slot, fw, command, status, n, t_pass, t_fail, t_skip in sq.test_totals(
        con, sc, step_s, offset_s
    ):
        outcome = _DECIDED.get(status, "other")
        trend[slot][outcome] += n
        f = frameworks.setdefault(
            _runner(fw, command),
            {"runs": 0, "passed": 0, "failed": 0, "other": 0, "tests_passed": 0,
             "tests_failed": 0, "tests_skipped": 0},
        )  # fmt: skip
        f["runs"] += n
        f[outcome] += n
        f["tests_passed"] += t_pass or 0
        f["tests_failed"] += t_fail or 0
        f["tests_skipped"] += t_skip or 0
    for f in frameworks.values():
        f["pass_rate"] = rate(f["passed"], f["passed"] + f["failed"])
    runs = [
        {
            "session_uid": uid,
            "seq": seq,
            "timestamp": iso(ts),
            "command": command,
            "framework": _runner(fw, command),
            "passed": p,
            "failed": f,
            "skipped": s,
            "status": status,
            "duration_ms": dur,
            "repo": repo,
            "agent": agent,
        }
        for uid, seq, ts, command, fw, p, f, s, status, dur, repo, agent in sq.test_runs(
            con, sc, limit, offset
        )
    ]
    return {
        "runs": runs,
        "trend": [
            {"slot": s, "start": slot_start(s, step_s, offset_s), **trend[s]} for s in sorted(trend)
        ],
        "by_framework": dict(sorted(frameworks.items(), key=lambda kv: -kv[1]["runs"])),
        "total": test_summary(con, sc),
    }

"""Read queries of the dashboard's signal metrics: tool calls (counts from
``tool_call_hours`` when the range and zone are whole hours, exact percentiles from the
(tool, duration) index), file operations, edit acceptance, test runs.

Each reads a Tier 2 signal table by its ``ts`` index (or the tools' hourly rollup), joined to
``sessions`` (a few thousand rows) for the agent and repo, never the events.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

from helixd.store.metrics_queries import HOUR_MS, Scope
from helixd.store.queries import session_filter


def _signal_scope(sc: Scope, alias: str, time_col: str = "ts") -> tuple[str, list[Any]]:
    """`` WHERE …`` of a signal table's rows in the scope (the session filter as a
    subquery, so that the table's own indexes still serve)."""
    where: list[str] = []
    params: list[Any] = []
    if sc.since is not None:
        where.append(f"{alias}.{time_col} >= ?")
        params.append(sc.since)
    if sc.until is not None:
        where.append(f"{alias}.{time_col} < ?")
        params.append(sc.until)
    sess: list[str] = []
    sess_params: list[Any] = []
    session_filter(sess, sess_params, sc.agents, sc.repo)
    if sess:
        where.append(
            f"{alias}.session_id IN (SELECT s.id FROM sessions s WHERE {' AND '.join(sess)})"
        )
        params.extend(sess_params)
    return (" WHERE " + " AND ".join(where) if where else ""), params


TOOL_STATUSES: Final = ("success", "error", "rejected", "interrupted", "missing")


def _hourly(sc: Scope, offset_s: int = 0) -> bool:
    """Whether ``tool_call_hours`` answers exactly: whole hours (bounds after the epoch, the
    offset)."""
    return offset_s % 3600 == 0 and all(
        t is None or (t > 0 and t % HOUR_MS == 0) for t in (sc.since, sc.until)
    )


def _hour_scope(sc: Scope, timed_only: bool) -> tuple[str, list[Any]]:
    """`` WHERE …`` of the ``tool_call_hours r`` rows in the (whole-hour) scope; with
    ``timed_only``, only calls with a time after the epoch (hours >= 0)."""
    where: list[str] = []
    params: list[Any] = []
    if sc.since is not None or timed_only:
        where.append("r.hour >= ?")
        params.append(0 if sc.since is None else sc.since // HOUR_MS)
    if sc.until is not None:
        where.append("r.hour < ?")
        params.append(sc.until // HOUR_MS)
    sess: list[str] = []
    sess_params: list[Any] = []
    session_filter(sess, sess_params, sc.agents, sc.repo)
    if sess:
        where.append(f"r.session_id IN (SELECT s.id FROM sessions s WHERE {' AND '.join(sess)})")
        params.extend(sess_params)
    return (" WHERE " + " AND ".join(where) if where else ""), params


def tools(con: sqlite3.Connection, sc: Scope) -> list[tuple[Any, ...]]:
    """``(tool, status, calls, calls timed, sum of durations, max duration)``: from
    ``tool_call_hours`` when the scope is whole hours, else from the calls."""
    if _hourly(sc):
        where, params = _hour_scope(sc, timed_only=False)
        return con.execute(
            "SELECT r.tool, r.status, sum(r.calls), sum(r.timed), sum(r.sum_ms), max(r.max_ms)"
            f" FROM tool_call_hours r{where} GROUP BY r.tool, r.status",
            params,
        ).fetchall()
    where, params = _signal_scope(sc, "t")
    return con.execute(
        "SELECT t.tool, t.status, count(*), count(t.duration_ms), sum(t.duration_ms),"
        f" max(t.duration_ms) FROM tool_calls t INDEXED BY tool_calls_stats{where}"
        " GROUP BY t.tool, t.status",
        params,
    ).fetchall()


def duration_at(con: sqlite3.Connection, sc: Scope, tool: str, rank: int) -> int | None:
    """The ``rank``-th smallest duration (0-based) of the tool's timed calls in the scope:
    an offset walk of the (tool, duration) index."""
    where, params = _signal_scope(sc, "t")
    cond = where.replace(" WHERE ", " AND ", 1)
    row = con.execute(
        "SELECT t.duration_ms FROM tool_calls t INDEXED BY tool_calls_durations"
        f" WHERE t.tool = ? AND t.duration_ms IS NOT NULL{cond}"
        " ORDER BY t.duration_ms LIMIT 1 OFFSET ?",
        [tool, *params, int(rank)],
    ).fetchone()
    return None if row is None else int(row[0])


def tool_span(con: sqlite3.Connection) -> tuple[int, int] | None:
    """The first and last tool call time (ms): one seek at each end of the ts index."""
    first = con.execute("SELECT ts FROM tool_calls WHERE ts > 0 ORDER BY ts LIMIT 1").fetchone()
    if first is None:
        return None
    last = con.execute("SELECT ts FROM tool_calls WHERE ts > 0 ORDER BY ts DESC LIMIT 1").fetchone()
    return int(first[0]), int(last[0])


def tools_per_slot(
    con: sqlite3.Connection, sc: Scope, lo: int, hi: int, step_s: int, offset_s: int = 0
) -> list[tuple[int, str, int]]:
    """``(slot, status, calls)`` per time slot of the calls in the scope, in ``[lo, hi)``
    (ms: the scope's bounds, else the first and last call's time).  From
    ``tool_call_hours`` when the scope and the offset are whole hours (``step_s`` is), else
    one range of the calls' ts index."""
    # SQLite's / truncates toward zero: shift every time in range to >= 0 so that it floors
    lead = 1 + max(0, -(lo // 1000 + int(offset_s))) // int(step_s)
    shift = int(offset_s) + lead * int(step_s)
    if _hourly(sc, offset_s):
        where, params = _hour_scope(sc, timed_only=True)
        slot = f"(r.hour * 3600 + {shift}) / {int(step_s)} - {lead}"
        return con.execute(
            f"SELECT {slot} AS slot, r.status, sum(r.calls) FROM tool_call_hours r{where}"
            " GROUP BY slot, r.status",
            params,
        ).fetchall()
    where, params = _signal_scope(Scope(lo, hi, sc.agents, sc.repo), "t")
    return con.execute(
        f"SELECT (t.ts + {shift * 1000}) / {int(step_s) * 1000} - {lead} AS slot, t.status,"
        f" count(*) FROM tool_calls t{where} GROUP BY slot, t.status",
        params,
    ).fetchall()


def files(con: sqlite3.Connection, sc: Scope, limit: int) -> list[tuple[Any, ...]]:
    """``(path, language, operations, writes, sessions, lines added, lines removed,
    accepted, rejected, last ts)`` of the most operated-on files.  Two steps: the top paths
    by count (from the path index alone when the scope has no bounds), then the figures of
    those paths only — a file is mostly operated on once, so grouping every operation with
    its distinct sessions and lines cost as many table reads and sorts as operations."""
    where, params = _signal_scope(sc, "f")
    top = [
        r[0]
        for r in con.execute(
            f"SELECT f.file_path FROM file_operations f{where} GROUP BY f.file_path"
            " ORDER BY count(*) DESC, f.file_path LIMIT ?",
            [*params, int(limit)],
        )
    ]
    if not top:
        return []
    rank = {p: i for i, p in enumerate(top)}
    rows = con.execute(
        "SELECT f.file_path, max(f.language), count(*), sum(f.operation = 'write'),"
        " count(DISTINCT f.session_id), sum(f.lines_added), sum(f.lines_removed),"
        " sum(f.accepted = 1), sum(f.accepted = 0), max(f.ts) FROM file_operations f"
        f"{where}{' AND' if where else ' WHERE'} f.file_path IN ({','.join('?' * len(top))})"
        " GROUP BY f.file_path",
        [*params, *top],
    ).fetchall()
    return sorted(rows, key=lambda r: rank[r[0]])


def file_slots(
    con: sqlite3.Connection, sc: Scope, paths: Sequence[str], step_s: int, offset_s: int = 0
) -> list[tuple[str, int, int]]:
    """``(path, slot, operations)`` of these files."""
    if not paths:
        return []
    where, params = _signal_scope(sc, "f")
    marks = ",".join("?" * len(paths))
    return con.execute(
        f"SELECT f.file_path, (f.ts / 1000 + {int(offset_s)}) / {int(step_s)} AS slot, count(*)"
        f" FROM file_operations f{where}{' AND' if where else ' WHERE'} f.ts IS NOT NULL"
        f" AND f.file_path IN ({marks}) GROUP BY f.file_path, slot",
        [*params, *paths],
    ).fetchall()


def acceptance(con: sqlite3.Connection, sc: Scope) -> list[tuple[Any, ...]]:
    """``(language, operation, operations, accepted, rejected, lines added, lines removed)``."""
    where, params = _signal_scope(sc, "f")
    return con.execute(
        "SELECT coalesce(f.language, ''), f.operation, count(*), sum(f.accepted = 1),"
        " sum(f.accepted = 0), sum(f.lines_added), sum(f.lines_removed)"
        f" FROM file_operations f{where} GROUP BY 1, 2",
        params,
    ).fetchall()


def test_runs(
    con: sqlite3.Connection, sc: Scope, limit: int, offset: int = 0
) -> list[tuple[Any, ...]]:
    """``(session uid, call seq, ts, command, framework, passed, failed, skipped, status,
    duration ms, repo, agent)``, newest first."""
    where, params = _signal_scope(sc, "t")
    join = "" if " JOIN sessions s" in where else " JOIN sessions s ON s.id = t.session_id"
    return con.execute(
        "SELECT s.uid, t.call_seq, t.ts, t.command, t.framework, t.passed, t.failed,"
        f" t.skipped, t.status, t.duration_ms, s.repo, s.agent FROM test_runs t{join}{where}"
        " ORDER BY t.ts IS NULL, t.ts DESC LIMIT ? OFFSET ?",
        [*params, int(limit), int(offset)],
    ).fetchall()


def test_totals(
    con: sqlite3.Connection, sc: Scope, step_s: int | None, offset_s: int = 0
) -> list[tuple[Any, ...]]:
    """``(slot, framework, command, status, runs, tests passed, tests failed, tests
    skipped)`` by time slot (None: one slot, 0)."""
    where, params = _signal_scope(sc, "t")
    slot = f"(t.ts / 1000 + {int(offset_s)}) / {int(step_s)}" if step_s else "0"
    return con.execute(
        f"SELECT {slot} AS slot, t.framework, CASE WHEN t.framework IS NULL THEN t.command END,"
        " t.status, count(*), sum(t.passed), sum(t.failed), sum(t.skipped)"
        f" FROM test_runs t{where} GROUP BY slot, 2, 3, t.status",
        params,
    ).fetchall()

"""Read queries of the dashboard's usage metrics: usage over time and by agent / repo / model
/ session, priced at the rates passed in, the sessions started per day and active in a range,
the filter menus' choices; and the session detail's reads (usage, event marks, tool calls and
file operations of one session).  The signal tables' reads are ``signal_queries.py``.

Every metric reads a rollup, never the events: usage from ``usage_hours`` (hour x agent x
model; when no repo is asked), ``usage_days`` (UTC day x session x model) or
``usage_buckets`` (15-minute bucket x session x model), joined to ``sessions`` (a few
thousand rows) for the agent and repo.  A time slot is ``(epoch seconds + offset_s) //
step_s``: days in a fixed UTC offset.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from helixd.store.queries import session_filter

_COUNTERS: Final = (
    "sum({p}input), sum({p}output), sum({p}cache_read), sum({p}cache_write_5m),"
    " sum({p}cache_write_1h), sum({p}reasoning), sum({p}responses)"
)
_USAGE_COLS: Final = ("slot", "input", "output", "cache_read", "cache_write_5m",
                      "cache_write_1h", "reasoning", "responses")  # fmt: skip
_COUNTERS_AS: Final = ", ".join(f"sum({{p}}{c}) AS {c}" for c in _USAGE_COLS[1:])
GROUPS: Final = ("", "agent", "repo", "model", "session")
HOUR_MS: Final = 3_600_000
OTHER: Final = "(other)"  # the key of the series folded beyond a chart's top N


@dataclass(frozen=True, slots=True)
class Scope:
    """Which rows: in ``[since, until)`` (epoch ms), of these agents, of a repo (name or
    path), of a model (exact, or a dated variant of it)."""

    since: int | None = None
    until: int | None = None
    agents: Sequence[str] = ()
    repo: str | None = None
    model: str | None = None


def _model_clause(where: list[str], params: list[Any], column: str, model: str | None) -> None:
    if model:
        where.append(f"({column} = ? OR substr({column}, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])


DAY_MS: Final = 86_400_000
# USD per million tokens of a model: input, output, cache read, cache write 5 m, 1 h
Rates = Mapping[str, Sequence[float]]


def _usage_source(
    sc: Scope, group: str, step_s: int | None, offset_s: int, timed_only: bool = True
) -> tuple[str, str, str, str, list[str], list[Any], str]:
    """``(table, slot, key, model column, where, params, known)`` of a usage read:
    ``usage_hours`` when it answers (no repo, no session grouping, whole hours), else
    ``usage_days`` (whole UTC days, and slots of whole days in UTC or none), else
    ``usage_buckets``.  ``known`` is the condition of usage of known time, in ``where``
    when there are slots and ``timed_only``."""
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}")
    hourly = (
        not sc.repo
        and group not in ("repo", "session")
        and all(t is None or t % HOUR_MS == 0 for t in (sc.since, sc.until))
    )
    daily = (step_s is None or (step_s % 86_400 == 0 and offset_s % 86_400 == 0)) and all(
        t is None or t % DAY_MS == 0 for t in (sc.since, sc.until)
    )
    where: list[str] = []
    params: list[Any] = []
    if hourly:
        unit, table, time_col, known = 3600, "usage_hours x", "x.hour", "x.hour > 0"
        if sc.agents:
            where.append(f"x.agent IN ({','.join('?' * len(sc.agents))})")
            params.extend(sc.agents)
        key = {"": "''", "agent": "x.agent", "model": "x.model"}[group]
    else:
        unit, table, time_col, known = (
            (86_400, "usage_days x", "x.day", "x.day >= 0")
            if daily
            else (900, "usage_buckets x", "x.bucket", "x.bucket > 0")
        )
        table += " JOIN sessions s ON s.id = x.session_id"
        session_filter(where, params, sc.agents, sc.repo)
        key = {
            "": "''",
            "agent": "s.agent",
            "repo": "coalesce(s.repo, '')",
            "model": "x.model",
            "session": "x.session_id",
        }[group]
    if sc.since is not None:
        where.append(f"{time_col} >= ?")
        params.append(sc.since // (unit * 1000))
    if sc.until is not None:
        where.append(f"{time_col} < ?")
        params.append(-(-sc.until // (unit * 1000)))
    _model_clause(where, params, "x.model", sc.model)
    if step_s and timed_only:
        where.append(known)  # usage of unknown time is in totals, not on a day
    slot = f"({time_col} * {unit} + {int(offset_s)}) / {int(step_s)}" if step_s else "0"
    return table, slot, key, "x.model", where, params, known


def usage(
    con: sqlite3.Connection, sc: Scope, group: str, step_s: int | None, offset_s: int = 0
) -> list[tuple[Any, ...]]:
    """``(slot, key, model, input, output, cache_read, cache_write_5m, cache_write_1h,
    reasoning, responses)``: usage per time slot (``step_s``; None: one slot, 0) and per
    ``group`` (``GROUPS``: the key is '' for none, else the agent, repo, model or session
    id)."""
    table, slot, key, model, where, params, _ = _usage_source(sc, group, step_s, offset_s)
    sql = (
        f"SELECT {slot} AS slot, {key} AS k, {model}, {_COUNTERS.format(p='x.')}"
        f" FROM {table}{' WHERE ' + ' AND '.join(where) if where else ''}"
        " GROUP BY slot, k, 3"
    )
    return con.execute(sql, params).fetchall()


def usage_priced(
    con: sqlite3.Connection,
    sc: Scope,
    group: str,
    step_s: int | None,
    rates: Rates,
    offset_s: int = 0,
) -> list[tuple[Any, ...]]:
    """``(slot, key, input, output, cache_read, cache_write_5m, cache_write_1h, reasoning,
    responses, usd)`` per time slot and ``group`` (as ``usage``, models summed): each
    row's dollars at ``rates`` (a model without one costs 0), summed by SQLite, so only the
    answer's rows come back."""
    table, slot, key, model, where, params, _ = _usage_source(sc, group, step_s, offset_s)
    prices, price_args = _price_values(rates)
    sums = ", ".join(f"sum(g.{c})" for c in _USAGE_COLS[1:])
    sql = (
        f"WITH {prices}"
        f" SELECT g.slot, g.k, {sums}, coalesce(sum((g.input * p.i + g.output * p.o"
        " + g.cache_read * p.cr + g.cache_write_5m * p.w5 + g.cache_write_1h * p.w1) / 1e6), 0.0)"
        f" FROM (SELECT {slot} AS slot, {key} AS k, {model} AS model,"
        f" {_COUNTERS_AS.format(p='x.')} FROM {table}"
        f"{' WHERE ' + ' AND '.join(where) if where else ''} GROUP BY slot, k, 3) g"
        " LEFT JOIN p ON p.model = g.model GROUP BY g.slot, g.k"
    )
    return con.execute(sql, [*price_args, *params]).fetchall()


def _price_values(rates: Rates) -> tuple[str, list[Any]]:
    """The ``p (model, i, o, cr, w5, w1)`` CTE of ``rates`` and its parameters (one row of
    no model, so that the VALUES is never empty)."""
    values = ", ".join(["(NULL, 0, 0, 0, 0, 0)"] + ["(?, ?, ?, ?, ?, ?)"] * len(rates))
    return (
        f"p (model, i, o, cr, w5, w1) AS (VALUES {values})",
        [v for m, r in rates.items() for v in (m, *r)],
    )


def _price_case(rates: Rates, row: str) -> tuple[str, list[Any]]:
    """The dollars of usage row ``row`` at ``rates`` as one CASE on its model (0.0 for a
    model without a price) and its parameters: per row, cheaper than a join to the rates."""
    if not rates:
        return "0.0", []
    price = (
        f"({row}.input * ? + {row}.output * ? + {row}.cache_read * ?"
        f" + {row}.cache_write_5m * ? + {row}.cache_write_1h * ?) / 1e6"
    )
    whens = " ".join(f"WHEN ? THEN {price}" for _ in rates)
    return f"CASE {row}.model {whens} ELSE 0.0 END", [v for m, r in rates.items() for v in (m, *r)]


TOTALS, SERIES, SESSIONS = 0, 1, 2  # the parts of a ``usage_costs`` answer


def costs_in_one_pass(sc: Scope, step_s: int, offset_s: int = 0) -> bool:
    """Whether ``usage_costs`` answers the series too: when the table the totals read
    (``usage_days`` for whole UTC days, else the buckets) has the series' slots; else (the
    zone's days are not UTC days, or hours) the series reads a table of its own
    (``usage_priced``: the hours when they answer, else the buckets)."""
    return (
        _usage_source(sc, "session", step_s, offset_s)[0]
        == _usage_source(sc, "session", None, 0)[0]
    )


def usage_costs(
    con: sqlite3.Connection,
    sc: Scope,
    group: str,
    step_s: int | None,
    rates: Rates,
    offset_s: int = 0,
    top: int = 10,
) -> list[tuple[Any, ...]]:
    """A cost page's usage in one statement: ``(part, a, b, c, input, output, cache_read,
    cache_write_5m, cache_write_1h, reasoning, responses, usd)`` rows where ``part`` is
    ``TOTALS`` (a, b, c: agent, repo, model; every row of the scope, of known time or not),
    ``SESSIONS`` (a: the session id; the ``top`` that cost most, then most tokens, then by
    id as text) or, with ``step_s``, ``SERIES`` (a, b: the time slot and the ``group``
    key; usage of known time; see ``costs_in_one_pass``).

    The rows in scope are read once (from ``usage_days``, or ``usage_buckets`` summed per
    slot, session and model, as ``usage_priced`` with the session grouping chooses) and
    priced row by row (a CASE on the model) into a materialized CTE; the answers are
    groupings of it: one read of the rollup and its sessions where a pass per grouping read
    them five times."""
    if group not in GROUPS or group == "session":
        raise ValueError(f"unknown group {group!r}")
    # the totals and sessions want usage of unknown time too: "known" is a column
    table, slot, _key, model, where, params, known = _usage_source(
        sc, "session", step_s, offset_s, timed_only=False
    )
    # a day's rows are one per (day, session, model) already; buckets are summed to slots
    regroup = not table.startswith("usage_days")
    counters = _COUNTERS_AS if regroup else ", ".join(f"{{p}}{c} AS {c}" for c in _USAGE_COLS[1:])
    price, price_args = _price_case(rates, "g" if regroup else "x")
    rows = (
        f"SELECT {slot} AS slot, x.session_id AS sid, s.agent AS agent,"
        f" coalesce(s.repo, '') AS repo, {model} AS model, {known} AS known,"
        f" {counters.format(p='x.')}{'' if regroup else f', {price} AS usd'} FROM {table}"
        f"{' WHERE ' + ' AND '.join(where) if where else ''}"
    )
    c = f"SELECT g.*, {price} AS usd FROM ({rows} GROUP BY slot, sid, 5) g" if regroup else rows
    key = {"": "''", "agent": "c.agent", "repo": "c.repo", "model": "c.model"}[group]
    sums = ", ".join(f"sum(c.{c})" for c in _USAGE_COLS[1:]) + ", sum(c.usd)"
    tokens = " + ".join(f"sum(c.{c})" for c in _USAGE_COLS[1:6])
    series = (
        f" UNION ALL SELECT {SERIES}, c.slot, {key}, NULL, {sums} FROM c WHERE c.known"
        f" GROUP BY c.slot, {key}"
        if step_s
        else ""
    )
    sql = (
        f"WITH c AS MATERIALIZED ({c})"
        f" SELECT {TOTALS}, c.agent, c.repo, c.model, {sums} FROM c"
        f" GROUP BY c.agent, c.repo, c.model{series}"
        f" UNION ALL SELECT * FROM (SELECT {SESSIONS}, c.sid, NULL, NULL, {sums} FROM c"
        f" GROUP BY c.sid ORDER BY sum(c.usd) DESC, {tokens} DESC, CAST(c.sid AS TEXT)"
        " LIMIT ?)"
    )
    return con.execute(sql, [*price_args, *params, int(top)]).fetchall()


def usage_models(con: sqlite3.Connection) -> list[str]:
    """Every model with usage (the models a price lookup may need)."""
    return [r[0] for r in con.execute("SELECT DISTINCT model FROM usage_hours")]


def sessions_started(
    con: sqlite3.Connection, sc: Scope, step_s: int, offset_s: int = 0
) -> list[tuple[int, str, int, int]]:
    """``(slot, agent, sessions, messages)`` of the sessions started per time slot."""
    where = ["s.messages > 0", "s.started_at IS NOT NULL"]
    params: list[Any] = []
    session_filter(where, params, sc.agents, sc.repo)
    if sc.since is not None:
        where.append("s.started_at >= ?")
        params.append(sc.since)
    if sc.until is not None:
        where.append("s.started_at < ?")
        params.append(sc.until)
    _model_clause(where, params, "s.model", sc.model)
    return con.execute(
        f"SELECT (s.started_at / 1000 + {int(offset_s)}) / {int(step_s)} AS slot, s.agent,"
        f" count(*), sum(s.messages) FROM sessions s WHERE {' AND '.join(where)}"
        " GROUP BY slot, s.agent",
        params,
    ).fetchall()


def session_totals(con: sqlite3.Connection, sc: Scope) -> tuple[int, int, int, int, int]:
    """``(sessions, messages, agents, repos, models)`` active in the scope."""
    where = ["s.messages > 0"]
    params: list[Any] = []
    session_filter(where, params, sc.agents, sc.repo)
    if sc.since is not None:
        where.append("coalesce(s.ended_at, s.started_at) >= ?")
        params.append(sc.since)
    if sc.until is not None:
        where.append("s.started_at < ?")
        params.append(sc.until)
    _model_clause(where, params, "s.model", sc.model)
    row = con.execute(
        "SELECT count(*), coalesce(sum(s.messages), 0), count(DISTINCT s.agent),"
        " count(DISTINCT s.repo), count(DISTINCT s.model) FROM sessions s"
        f" WHERE {' AND '.join(where)}",
        params,
    ).fetchone()
    return (int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]))


def session_usage_rows(
    con: sqlite3.Connection, session_id: int, lo: int, hi: int | None
) -> list[tuple[Any, ...]]:
    """``(ts, model, input, output, cache_read, cache_write_5m, cache_write_1h)`` of each
    response credited to the session in ``[lo, hi)`` (ms), in time order."""
    return con.execute(
        "SELECT ts, model, input, output, cache_read, cache_write_5m, cache_write_1h"
        " FROM usage WHERE session_id = ? AND ts >= ? AND ts < ? ORDER BY ts",
        (session_id, lo, hi if hi is not None else 2**62),
    ).fetchall()


def next_prompt_at(con: sqlite3.Connection, session_id: int, after_seq: int) -> int | None:
    """The time of the session's first user message after ``after_seq``."""
    row = con.execute(
        "SELECT ts FROM events WHERE session_id = ? AND seq > ? AND kind = 'user_msg'"
        " AND ts IS NOT NULL ORDER BY seq LIMIT 1",
        (session_id, after_seq),
    ).fetchone()
    return None if row is None else int(row[0])


def session_event_marks(con: sqlite3.Connection, session_id: int) -> list[tuple[Any, ...]]:
    """``(seq, ts, kind, is_error)`` of every event of the session (its timeline)."""
    return con.execute(
        "SELECT seq, ts, kind, is_error FROM events WHERE session_id = ? ORDER BY seq",
        (session_id,),
    ).fetchall()


def session_tool_calls(con: sqlite3.Connection, session_id: int) -> list[tuple[Any, ...]]:
    """``(call_seq, result_seq, ts, tool, target, status, duration_ms)`` in order."""
    return con.execute(
        "SELECT call_seq, result_seq, ts, tool, target, status, duration_ms FROM tool_calls"
        " WHERE session_id = ? ORDER BY call_seq",
        (session_id,),
    ).fetchall()


def session_file_operations(con: sqlite3.Connection, session_id: int) -> list[tuple[Any, ...]]:
    """``(seq, ts, operation, path, language, lines added, lines removed, status,
    accepted)`` in order."""
    return con.execute(
        "SELECT seq, ts, operation, file_path, language, lines_added, lines_removed, status,"
        " accepted FROM file_operations WHERE session_id = ? ORDER BY seq",
        (session_id,),
    ).fetchall()


def uids_of(con: sqlite3.Connection, ids: Sequence[int]) -> list[str]:
    """The uids of these sessions (those that exist)."""
    out: list[str] = []
    for i in range(0, len(ids), 500):
        part = list(ids[i : i + 500])
        out.extend(
            r[0]
            for r in con.execute(
                f"SELECT uid FROM sessions WHERE id IN ({','.join('?' * len(part))})", part
            )
        )
    return out


def choices(con: sqlite3.Connection) -> dict[str, list[str]]:
    """The agents, repos and models there are sessions of (for filter menus)."""
    return {
        "agents": [r[0] for r in con.execute("SELECT DISTINCT agent FROM sessions ORDER BY 1")],
        "repos": [
            r[0]
            for r in con.execute(
                "SELECT repo FROM sessions WHERE repo IS NOT NULL AND messages > 0"
                " GROUP BY repo ORDER BY count(*) DESC, repo LIMIT 200"
            )
        ],
        "models": [
            r[0] for r in con.execute("SELECT DISTINCT model FROM usage_hours ORDER BY 1 LIMIT 200")
        ],
    }


def session_rows(con: sqlite3.Connection, uids: Sequence[str]) -> list[dict[str, Any]]:
    """These sessions' rows (as ``session_queries.list_sessions`` gives them), in no order."""
    from helixd.store.session_queries import SESSION_NAMES

    cols = ", ".join(f"s.{c}" for c in SESSION_NAMES)
    out: list[dict[str, Any]] = []
    for i in range(0, len(uids), 500):
        part = list(uids[i : i + 500])
        for r in con.execute(
            f"SELECT {cols}, json_extract(d.json, '$.first_prompt'),"
            " json_extract(d.json, '$.outcome') FROM sessions s"
            " LEFT JOIN digests d ON d.session_id = s.id"
            f" WHERE s.uid IN ({','.join('?' * len(part))})",
            part,
        ):
            row = dict(zip(SESSION_NAMES, r, strict=False))
            row["first_prompt"], row["outcome"] = r[-2], r[-1]
            out.append(row)
    return out

"""The dashboard's questions about usage: how much (sessions, tokens, cost) over a time range
and by agent, repo and model, and when the work happens; the headline summary (which also
asks ``signal_metrics``: tools, tests, edits).

Each function reads rollups only (``store/metrics_queries.py``), so its cost does not grow
with the events stored.  Time slots are days (or hours, weeks) in a
fixed UTC offset ``offset_s`` the face chooses (the page's zone).  Cost is at today's prices.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from helixd.core.pricing import price_for
from helixd.core.timeparse import iso
from helixd.query.metric_units import DAY, HOUR, STEPS, rate, slot_start
from helixd.query.signal_metrics import acceptance, test_summary, tools
from helixd.store import metrics_queries as mq
from helixd.store.metrics_queries import Rates, Scope

if TYPE_CHECKING:
    from helixd.core.pricing import Prices

__all__ = ["DAY", "Scope", "activity", "choices", "costs", "summary", "tokens"]

_TOKEN_NAMES: Final = ("input", "output", "cache_read", "cache_write", "reasoning", "total",
                       "responses")  # fmt: skip


def _add(into: dict[Any, list[Any]], key: Any, vec: list[Any]) -> None:
    """Add ``vec`` (``[*counters, cost]``) to ``into[key]``, element by element: the same
    additions in the same order as summing dicts, so the floats come out identical."""
    acc = into.get(key)
    into[key] = vec.copy() if acc is None else [a + b for a, b in zip(acc, vec, strict=True)]


def _doc(acc: list[Any]) -> dict[str, Any]:
    """A summed vector as its document (cost rounded)."""
    doc = dict(zip(_TOKEN_NAMES, acc, strict=False))
    doc["cost_usd"] = round(acc[7], 6)
    return doc


def _ranked(d: dict[Any, list[Any]]) -> list[Any]:
    """Keys by cost, then tokens, most first; then by name."""
    return sorted(d, key=lambda k: (-d[k][7], -d[k][5], str(k)))


def rates(con: sqlite3.Connection, prices: Prices) -> dict[str, tuple[float, ...]]:
    """Today's price of every model with usage (per million tokens: input, output, cache
    read, cache write 5 m, 1 h); unpriced models are left out (they cost 0)."""
    out: dict[str, tuple[float, ...]] = {}
    for model in mq.usage_models(con):
        p = price_for(prices, model)
        if p is not None:
            out[model] = (
                p["input"], p["output"], p["cache_read"], p["cache_write_5m"], p["cache_write_1h"]
            )  # fmt: skip
    return out


def _vec(counters: Sequence[Any]) -> list[Any]:
    """``[*_TOKEN_NAMES, usd]`` of a priced row's ``(input, output, cache_read,
    cache_write_5m, cache_write_1h, reasoning, responses, usd)``."""
    i, o, cr, c5, c1, reasoning, responses, usd = counters
    i, o, cr, cw = int(i or 0), int(o or 0), int(cr or 0), int(c5 or 0) + int(c1 or 0)
    return [i, o, cr, cw, int(reasoning or 0), i + o + cr + cw, int(responses or 0), usd]


def _priced(
    con: sqlite3.Connection, sc: Scope, group: str, step_s: int | None, at: Rates, offset_s: int = 0
) -> list[tuple[Any, Any, list[Any]]]:
    """``(slot, key, [*_TOKEN_NAMES, usd])`` per slot and key, priced and summed by the
    store."""
    return [
        (slot, key, _vec(counters))
        for slot, key, *counters in mq.usage_priced(con, sc, group, step_s, at, offset_s)
    ]


def _series(
    rows: Iterable[tuple[Any, Any, list[Any]]],
    group: str,
    step: str | None,
    offset_s: int,
    keep: Collection[str] | None = None,
) -> dict[str, Any]:
    """The ``usage_series`` document of ``(slot, key, vector)`` rows (one per slot and
    key); with ``keep``, the keys not in it summed per slot as one, ``mq.OTHER``."""
    step_s = STEPS[step] if step else None
    slots: dict[int, dict[str, list[Any]]] = defaultdict(dict)
    totals: dict[str, list[Any]] = {}
    for slot, key, vec in rows:
        k = str(key)
        if keep is not None and k not in keep:
            k = mq.OTHER
        _add(slots[slot], k, vec)
        _add(totals, k, vec)
    keys = sorted(totals, key=lambda k: (-totals[k][7], -totals[k][5], k))
    return {
        "group": group or None,
        "step": step,
        "keys": keys,
        "totals": {k: _doc(totals[k]) for k in keys},
        "slots": [
            {
                "slot": s,
                "start": slot_start(s, step_s, offset_s) if step_s else None,
                "by": {k: _doc(v) for k, v in sorted(slots[s].items())},
            }
            for s in sorted(slots)
        ],
    }


def usage_series(
    con: sqlite3.Connection,
    sc: Scope,
    prices: Prices,
    group: str = "",
    step: str | None = "day",
    offset_s: int = 0,
    at: Rates | None = None,
) -> dict[str, Any]:
    """Tokens and cost per time slot and per ``group`` (agent, repo, model or '')."""
    step_s = STEPS[step] if step else None
    at = rates(con, prices) if at is None else at
    return _series(_priced(con, sc, group, step_s, at, offset_s), group, step, offset_s)


def overview(
    con: sqlite3.Connection, sc: Scope, prices: Prices, offset_s: int = 0
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(summary, usage by agent per day)``: the overview page's two, the usage read once."""
    usage = usage_series(con, sc, prices, "agent", "day", offset_s)
    return summary(con, sc, prices, offset_s, usage), usage


def summary(
    con: sqlite3.Connection,
    sc: Scope,
    prices: Prices,
    offset_s: int = 0,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The headline numbers of a time range: sessions, messages, agents, repos, active days,
    tokens, cost, cache hits, and how tool calls, tests and edits went (``usage``: the
    range's ``usage_series`` by agent per day, when the caller has it)."""
    sessions, messages, agents, repos, models = mq.session_totals(con, sc)
    if usage is None:
        usage = usage_series(con, sc, prices, "agent", "day", offset_s)
    tok: dict[str, Any] = {}
    for v in usage["totals"].values():
        for k, n in v.items():
            tok[k] = tok.get(k, 0) + n
    active_days = {s["slot"] for s in usage["slots"]}
    days = {slot for slot, *_ in mq.sessions_started(con, sc, DAY, offset_s)}
    tools_doc = tools(con, sc, percentiles=False)
    tests_doc = test_summary(con, sc)
    acc = acceptance(con, sc)
    input_side = tok.get("input", 0) + tok.get("cache_read", 0) + tok.get("cache_write", 0)
    return {
        "since": iso(sc.since),
        "until": iso(sc.until),
        "sessions": sessions,
        "messages": messages,
        "agents": agents,
        "repos": repos,
        "models": models,
        "active_days": len(active_days | days),
        "tokens": {k: tok.get(k, 0) for k in ("input", "output", "cache_read", "cache_write")}
        | {"total": tok.get("total", 0)},
        "responses": tok.get("responses", 0),
        "cost_usd": round(tok.get("cost_usd", 0.0), 6),
        "cache_hit_rate": rate(tok.get("cache_read", 0), input_side),
        "by_agent": usage["totals"],
        "tool_calls": tools_doc["total"],
        "tests": tests_doc,
        "edits": acc["total"],
    }


def tokens(
    con: sqlite3.Connection,
    sc: Scope,
    prices: Prices,
    group: str = "",
    step: str = "day",
    offset_s: int = 0,
) -> dict[str, Any]:
    """Token usage over time (input, output, cache read / write per slot) by ``group``."""
    return usage_series(con, sc, prices, group, step, offset_s)


SERIES: Final = 10  # the series of a cost chart; the rest is summed as one


def costs(
    con: sqlite3.Connection,
    sc: Scope,
    prices: Prices,
    group: str = "agent",
    step: str = "day",
    offset_s: int = 0,
    top: int = 10,
    series: int | None = SERIES,
) -> dict[str, Any]:
    """Cost over time by ``group``, the totals by agent, repo and model, and the sessions
    that cost most (each priced and summed by the store: only the answer's rows come back).
    ``over_time`` holds the ``series`` keys that cost most in the range and the rest summed
    as one, ``mq.OTHER`` (None: every key); the totals always hold every key."""
    from helixd.query.detail import session_cards

    at = rates(con, prices)
    by: dict[str, dict[Any, list[Any]]] = {"agent": {}, "repo": {}, "model": {}}
    over_rows: list[tuple[Any, Any, list[Any]]] = []
    per_session: dict[int, list[Any]] = {}
    # one read of the store for the totals by (agent, repo, model), the top sessions and,
    # when it reads the same table, the series (else the series reads its own)
    step_s = STEPS[step]
    one = mq.costs_in_one_pass(sc, step_s, offset_s)
    if not one:
        over_rows = _priced(con, sc, group, step_s, at, offset_s)
    for part, a, b, c, *counters in mq.usage_costs(
        con, sc, group, step_s if one else None, at, offset_s, top
    ):
        vec = _vec(counters)
        if part == mq.TOTALS:
            for g, k in (("agent", a), ("repo", b), ("model", c)):
                _add(by[g], str(k), vec)
        elif part == mq.SERIES:
            over_rows.append((a, b, vec))
        else:
            per_session[int(a)] = vec
    ranked_keys = _ranked(by.get(group, {}))
    keep = ranked_keys[:series] if series is not None and len(ranked_keys) > series else None
    over_time = _series(over_rows, group, step, offset_s, keep)

    def ranked(d: dict[Any, list[Any]]) -> dict[Any, dict[str, Any]]:
        return {k: _doc(d[k]) for k in _ranked(d)}

    top_ids = _ranked(per_session)
    cards = {c["id"]: c for c in session_cards(con, [], prices, ids=top_ids)}
    total = sum(v[7] for v in by["agent"].values())
    days = len(over_time["slots"]) or 1
    return {
        "since": iso(sc.since),
        "until": iso(sc.until),
        "cost_usd": round(total, 6),
        "daily_average_usd": round(total / days, 6) if step == "day" else None,
        "over_time": over_time,
        "by_agent": ranked(by["agent"]),
        "by_repo": ranked(by["repo"]),
        "by_model": ranked(by["model"]),
        "top_sessions": [
            {**cards[i], "cost_in_range_usd": round(per_session[i][7], 6)}
            for i in top_ids
            if i in cards
        ],
    }


def activity(con: sqlite3.Connection, sc: Scope, offset_s: int = 0) -> dict[str, Any]:
    """When the work happens: model responses and sessions started per day, and responses
    per weekday x hour (0 = Monday)."""
    per_day: dict[int, dict[str, int]] = defaultdict(lambda: {"responses": 0, "sessions": 0})
    grid = [[0] * 24 for _ in range(7)]
    for slot, _k, _m, *c in mq.usage(con, sc, "", HOUR, offset_s):
        n = int(c[6] or 0)
        per_day[slot // 24]["responses"] += n
        # epoch day 0 (1970-01-01) was a Thursday: weekday 3
        grid[(slot // 24 + 3) % 7][slot % 24] += n
    for slot, _agent, n, _messages in mq.sessions_started(con, sc, DAY, offset_s):
        per_day[slot]["sessions"] += n
    return {
        "days": [
            {"day": slot_start(d, DAY, offset_s), "slot": d, **per_day[d]} for d in sorted(per_day)
        ],
        "weekday_hour": grid,
    }


def choices(con: sqlite3.Connection) -> dict[str, list[str]]:
    """The agents, repos and models the filter menus offer."""
    return mq.choices(con)

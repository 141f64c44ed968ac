"""What the session viewer shows beside the conversation: session cards (a row with its title
and cost, for lists and the live feed), the turns with their tokens and cost, a timeline of
the whole session in a few hundred cells, its tool calls and its file operations."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from helixd.core.pricing import cost, price_for
from helixd.core.timeparse import iso
from helixd.query.sessions import _costs, _title
from helixd.store import metrics_queries as mq

if TYPE_CHECKING:
    from helixd.core.pricing import Prices

TIMELINE_CELLS: Final = 160
_TIMES: Final = ("started_at", "ended_at", "changed_at", "analyzed_at")


def session_cards(
    con: sqlite3.Connection, uids: Sequence[str], prices: Prices, ids: Sequence[int] = ()
) -> list[dict[str, Any]]:
    """The rows of these sessions (by uid, or by id) with ``display_title``, ``cost_usd``
    and ``tokens`` (own usage, today's prices) and ISO times, as ``list_sessions`` gives."""
    wanted = [*uids, *mq.uids_of(con, ids)] if ids else list(uids)
    rows = mq.session_rows(con, wanted)
    costs = _costs(con, [r["id"] for r in rows], prices)
    for r in rows:
        usd, tok = costs.get(r["id"], (0.0, 0))
        r["cost_usd"], r["tokens"], r["display_title"] = round(usd, 6), tok, _title(r)
        for k in _TIMES:
            r[k + "_iso"] = iso(r[k])
    return rows


def turns(
    con: sqlite3.Connection,
    session: dict[str, Any],
    events: Sequence[dict[str, Any]],
    prices: Prices,
) -> dict[int, dict[str, Any]]:
    """``{seq of a user message: {tokens, cost_usd, responses, models}}``: the usage of the
    model responses between each user message (of ``events``, a page in seq order) and the
    next, by time."""
    starts = [(e["ts"], e["seq"]) for e in events if e["kind"] == "user_msg" and e.get("ts")]
    if not starts:
        return {}
    out: dict[int, dict[str, Any]] = {
        seq: {"tokens": 0, "cost_usd": 0.0, "responses": 0, "models": []} for _, seq in starts
    }
    i = 0
    end = mq.next_prompt_at(con, session["id"], events[-1]["seq"])
    rates: dict[str, dict[str, Any]] = {}  # model -> its price alone (one lookup per model)
    for ts, model, *c in mq.session_usage_rows(con, session["id"], starts[0][0], end):
        while i + 1 < len(starts) and ts >= starts[i + 1][0]:
            i += 1
        turn = out[starts[i][1]]
        turn["tokens"] += sum(int(x or 0) for x in c)
        if model not in rates:
            found = price_for(prices, model)
            rates[model] = {model: found} if found is not None else {}
        turn["cost_usd"] += cost(rates[model], model, c)
        turn["responses"] += 1
        if model not in turn["models"]:
            turn["models"].append(model)
    for t in out.values():
        t["cost_usd"] = round(t["cost_usd"], 6)
    return out


def timeline(
    con: sqlite3.Connection, session_id: int, cells: int = TIMELINE_CELLS
) -> dict[str, Any]:
    """The session's events in ``cells`` equal slices of seq: per cell the first seq, the
    time, and counts of messages, tool calls, errors and edits (what a timeline strip draws)."""
    marks = mq.session_event_marks(con, session_id)
    if not marks:
        return {"cells": [], "events": 0}
    n = len(marks)
    width = max(1, -(-n // cells))
    out = []
    for i in range(0, n, width):
        part = marks[i : i + width]
        kinds: dict[str, int] = {}
        errors = 0
        for _seq, _ts, kind, is_error in part:
            kinds[kind] = kinds.get(kind, 0) + 1
            errors += bool(is_error) or kind == "error"
        out.append(
            {
                "seq": part[0][0],
                "last_seq": part[-1][0],
                "timestamp": iso(part[0][1]),
                "user": kinds.get("user_msg", 0) + kinds.get("human_intervention", 0),
                "assistant": kinds.get("assistant_msg", 0) + kinds.get("thinking", 0),
                "tools": kinds.get("tool_call", 0),
                "edits": kinds.get("edit", 0),
                "errors": errors,
                "events": len(part),
            }
        )
    first = next((m[1] for m in marks if m[1]), None)
    last = next((m[1] for m in reversed(marks) if m[1]), None)
    return {
        "cells": out,
        "events": n,
        "first_at": iso(first),
        "last_at": iso(last),
        "duration_ms": (last - first) if first and last else None,
    }


def tool_calls(con: sqlite3.Connection, session_id: int) -> list[dict[str, Any]]:
    """The session's tool calls (Tier 2: kept after eviction), each pointing at its call and
    result events."""
    return [
        {
            "seq": call,
            "result_seq": res,
            "timestamp": iso(ts),
            "tool": tool,
            "target": target,
            "status": status,
            "duration_ms": dur,
        }
        for call, res, ts, tool, target, status, dur in mq.session_tool_calls(con, session_id)
    ]


def file_operations(con: sqlite3.Connection, session_id: int) -> list[dict[str, Any]]:
    return [
        {
            "seq": seq,
            "timestamp": iso(ts),
            "operation": op,
            "path": path,
            "language": lang,
            "lines_added": added,
            "lines_removed": removed,
            "status": status,
            "accepted": None if acc is None else bool(acc),
        }
        for seq, ts, op, path, lang, added, removed, status, acc in mq.session_file_operations(
            con, session_id
        )
    ]

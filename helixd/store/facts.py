"""The facts a digest is built from, for many sessions at once.

Runs synchronously on the store's thread (``Store.run``): the ids go into a temporary
table and every query is one grouped scan over those sessions, so rebuilding the digests
of a thousand sessions costs a dozen statements, not a dozen per session.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from helixd.store.reader import SESSION_COLS, session_row

TAIL: Final = 20
_WANT: Final = "session_id IN (SELECT id FROM temp.want)"
_USAGE_COLS: Final = (
    "count(*), coalesce(sum(input), 0), coalesce(sum(output), 0), coalesce(sum(cache_read), 0),"
    " coalesce(sum(cache_write_5m), 0), coalesce(sum(cache_write_1h), 0),"
    " coalesce(sum(reasoning), 0)"
)
_ZERO: Final = (0, 0, 0, 0, 0, 0, 0)
# helixd.signals.SIGNAL_COLUMNS, in order (the body only where a signal needs it: an edit's
# path, an error's message, a test run's command).
_SIGNAL_ROWS: Final = (
    "SELECT session_id, seq, ts, kind, tool, call_id, summary,"
    " CASE WHEN kind IN ('edit', 'error', 'test_run') THEN body END, is_error, status,"
    " test_framework, tests_passed, tests_failed, tests_skipped, lines_added, lines_removed"
    f" FROM events WHERE {_WANT} AND kind IN ('tool_call', 'tool_result', 'edit', 'test_run',"
    " 'error', 'human_intervention') ORDER BY session_id, seq"
)


def usage_dict(row: Sequence[Any]) -> dict[str, int]:
    return {
        "responses": row[0],
        "input_tokens": row[1],
        "output_tokens": row[2],
        "cache_read_tokens": row[3],
        "cache_write_5m_tokens": row[4],
        "cache_write_1h_tokens": row[5],
        "reasoning_tokens": row[6],
    }


def digest_facts(con: sqlite3.Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """``{session_id: facts}``; see ``helixd.digest.build`` for the shape it consumes."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS want (id INTEGER PRIMARY KEY)")
    con.execute("DELETE FROM temp.want")
    con.executemany("INSERT OR IGNORE INTO temp.want (id) VALUES (?)", [(i,) for i in ids])
    q = con.execute
    facts: dict[int, dict[str, Any]] = {}
    for row in q(f"SELECT {SESSION_COLS} FROM sessions WHERE id IN (SELECT id FROM temp.want)"):
        session = session_row(row)
        facts[session["id"]] = {
            "session": session,
            "kinds": {},
            "tools": {},
            "first": None,
            "last": None,
            "span": (None, None),
            "signal_rows": [],
            "usage": usage_dict(_ZERO),
            "usage_by_model": {},
            "subagents": [],
            "subagent_usage": usage_dict(_ZERO),
            "tail": {"kinds": [], "errors": []},
            "problems": _no_problems(),
        }
    for sid, kind, n in q(
        f"SELECT session_id, kind, count(*) FROM events WHERE {_WANT} GROUP BY 1, 2"
    ):
        facts[sid]["kinds"][kind] = n
    for sid, tool, n in q(
        f"SELECT session_id, tool, count(*) FROM events WHERE {_WANT}"
        " AND kind = 'tool_call' GROUP BY 1, 2"
    ):
        facts[sid]["tools"][tool] = n
    for key, kind, agg in (("first", "user_msg", "min"), ("last", "assistant_msg", "max")):
        # SQLite takes bare columns from the row that holds the min()/max().
        for sid, summary, body, _ in q(
            f"SELECT session_id, summary, body, {agg}(seq) FROM events"
            f" WHERE {_WANT} AND kind = ? GROUP BY 1",
            (kind,),
        ):
            facts[sid][key] = (summary, body)
    for sid, lo, hi in q(
        f"SELECT session_id, min(ts), max(ts) FROM events WHERE {_WANT} GROUP BY 1"
    ):
        facts[sid]["span"] = (lo, hi)
    for sid, *rest in q(_SIGNAL_ROWS):
        facts[sid]["signal_rows"].append(rest)
    _tails(con, facts)
    _usage(con, facts)
    for sid, *counts in q(
        "SELECT session_id, count(*), coalesce(sum(bad_lines), 0),"
        " coalesce(sum(unknown_records), 0), coalesce(sum(redactions), 0),"
        " coalesce(sum(offset), 0), coalesce(sum(gone_at IS NOT NULL), 0)"
        f" FROM files WHERE {_WANT} GROUP BY 1"
    ):
        facts[sid]["problems"] = dict(zip(_PROBLEMS, counts, strict=True))
    return facts


_PROBLEMS: Final = (
    "files",
    "malformed_lines",
    "unknown_records",
    "redactions",
    "source_bytes",
    "files_gone",
)


def _no_problems() -> dict[str, int]:
    return dict.fromkeys(_PROBLEMS, 0)


def _tails(con: sqlite3.Connection, facts: dict[int, dict[str, Any]]) -> None:
    """The kinds of each session's last ``TAIL`` conversational events, oldest first, and
    the error flags of the tool results among them (for ``helixd.digest.outcome``).

    Three kinds are refined: ``error`` is kept only for the session's own errors (no tool:
    API errors, timeouts, an expired login; not Claude Code's "No response requested."
    placeholder written after an interrupt or /exit), ``gave_up`` is an assistant reply whose
    opening sentence admits failure ("the connection failed", "I couldn't ...", "unable
    to ...") without also reporting success, ``edit_result`` a tool result whose call changed
    a file (same ``call_id`` as one of the session's last ``edit``s)."""
    import re

    gave_up = re.compile(
        r"\b(?:fail(?:ed|s|ing|ure)?|unable|could(?: ?not|n['’]t)|can(?: ?not|['’]t)"
        r"|not able|(?:did|does)(?: not|n['’]t) work|unfortunately|sorry)\b",
        re.IGNORECASE,
    )
    succeeded = re.compile(
        r"\b(?:succe\w*|pass(?:es|ed|ing)?|fixed|done|complete[sd]?|works)\b", re.IGNORECASE
    )
    rows = con.execute(
        "SELECT session_id, kind, is_error, call_id, text FROM ("
        " SELECT session_id, kind, is_error, call_id, seq,"
        "  CASE WHEN kind IN ('assistant_msg', 'error')"
        "   THEN substr(coalesce(nullif(body, ''), summary), 1, 400) END AS text,"
        "  row_number() OVER (PARTITION BY session_id, kind = 'edit' ORDER BY seq DESC) AS n"
        f" FROM events WHERE {_WANT} AND (kind IN ('user_msg', 'assistant_msg',"
        " 'human_intervention', 'tool_call', 'tool_result', 'edit')"
        " OR (kind = 'error' AND tool IS NULL)))"
        " WHERE n <= ? ORDER BY session_id, seq",
        (TAIL,),
    )
    edits: set[tuple[int, str]] = set()
    for sid, kind, is_error, call_id, text in rows:
        tail = facts[sid]["tail"]
        if kind == "edit":
            edits.add((sid, call_id))
            continue
        if kind == "error" and (text or "").strip() == "No response requested.":
            continue
        if kind == "assistant_msg" and text:
            opening = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0][:200]
            if gave_up.search(opening) and not succeeded.search(opening):
                kind = "gave_up"
        if kind == "tool_result":
            kind = "edit_result" if (sid, call_id) in edits else kind
            tail["errors"].append(bool(is_error))
        tail["kinds"].append(kind)


def _usage(con: sqlite3.Connection, facts: dict[int, dict[str, Any]]) -> None:
    q = con.execute
    for sid, *row in q(f"SELECT session_id, {_USAGE_COLS} FROM usage WHERE {_WANT} GROUP BY 1"):
        facts[sid]["usage"] = usage_dict(row)
    for sid, model, *row in q(
        f"SELECT session_id, model, {_USAGE_COLS} FROM usage WHERE {_WANT} GROUP BY 1, 2"
    ):
        facts[sid]["usage_by_model"][model] = usage_dict(row)
    children: dict[int, list[str]] = defaultdict(list)
    sub_usage: dict[int, list[int]] = {}
    for parent_id, child_uid, *row in q(
        "SELECT p.id, c.uid, "
        + _USAGE_COLS.replace("count(*)", "count(u.key)").replace("sum(", "sum(u.")
        + " FROM sessions p"
        " JOIN sessions c ON c.parent_uid = p.uid LEFT JOIN usage u ON u.session_id = c.id"
        " WHERE p.id IN (SELECT id FROM temp.want) GROUP BY p.id, c.id ORDER BY p.id, c.uid"
    ):
        children[parent_id].append(child_uid)
        total = sub_usage.setdefault(parent_id, list(_ZERO))
        for i, value in enumerate(row):
            total[i] += value
    for parent_id, uids in children.items():
        facts[parent_id]["subagents"] = uids
        facts[parent_id]["subagent_usage"] = usage_dict(sub_usage[parent_id])
    for parent_id, model, *row in q(
        "SELECT p.id, u.model, "
        + _USAGE_COLS.replace("sum(", "sum(u.")
        + " FROM sessions p JOIN sessions c ON c.parent_uid = p.uid"
        " JOIN usage u ON u.session_id = c.id WHERE p.id IN (SELECT id FROM temp.want)"
        " GROUP BY p.id, u.model"
    ):
        facts[parent_id].setdefault("subagent_usage_by_model", {})[model] = usage_dict(row)

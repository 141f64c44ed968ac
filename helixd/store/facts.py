"""The facts a digest is built from, for many sessions at once.

Runs synchronously on the store's thread (``Store.run``): the ids go into a temporary
table and every query is one grouped scan over those sessions, so rebuilding the digests
of a thousand sessions costs a dozen statements, not a dozen per session.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from helixd.core.signals import SIGNAL_KINDS
from helixd.store import badlines
from helixd.store.reader import SESSION_COLS, session_row

TAIL: Final = 20
_WANT: Final = "session_id IN (SELECT id FROM temp.want)"
_USAGE_COLS: Final = (
    "count(*), coalesce(sum(input), 0), coalesce(sum(output), 0), coalesce(sum(cache_read), 0),"
    " coalesce(sum(cache_write_5m), 0), coalesce(sum(cache_write_1h), 0),"
    " coalesce(sum(reasoning), 0), total(recorded_cost_usd), count(recorded_cost_usd)"
)
_ZERO: Final = (0, 0, 0, 0, 0, 0, 0, 0.0, 0)
# One scan of the sessions' events feeds every per-event fact.  The text column holds only
# what some fact needs: an edit's path, an error's message, a test run's command (signals)
# and the opening of an assistant reply (the outcome rule's tail).
_EVENT_SCAN: Final = (
    "SELECT session_id, seq, ts, kind, tool, call_id, summary,"
    " CASE WHEN kind IN ('edit', 'error', 'test_run') THEN body"
    "  WHEN kind = 'assistant_msg' THEN substr(coalesce(nullif(body, ''), summary), 1, 400)"
    " END, is_error, status, test_framework, tests_passed, tests_failed, tests_skipped,"
    f" lines_added, lines_removed FROM events WHERE {_WANT} ORDER BY session_id, seq"
)
_SIGNAL_KINDS: Final = frozenset(SIGNAL_KINDS)
_TEXT_KINDS: Final = frozenset({"edit", "error", "test_run"})
_CONVERSATION: Final = frozenset(
    {"user_msg", "assistant_msg", "human_intervention", "tool_call", "tool_result"}
)
_GAVE_UP: Final = re.compile(
    r"\b(?:fail(?:ed|s|ing|ure)?|unable|could(?: ?not|n['’]t)|can(?: ?not|['’]t)"
    r"|not able|(?:did|does)(?: not|n['’]t) work|unfortunately|sorry)\b",
    re.IGNORECASE,
)
_SUCCEEDED: Final = re.compile(
    r"\b(?:succe\w*|pass(?:es|ed|ing)?|fixed|done|complete[sd]?|works)\b", re.IGNORECASE
)


def usage_dict(row: Sequence[Any]) -> dict[str, Any]:
    """Counters of ``_USAGE_COLS``; ``recorded_cost_usd`` sums the dollars the agent recorded
    over the ``costed`` responses that carry them."""
    return {
        "responses": row[0],
        "input_tokens": row[1],
        "output_tokens": row[2],
        "cache_read_tokens": row[3],
        "cache_write_5m_tokens": row[4],
        "cache_write_1h_tokens": row[5],
        "reasoning_tokens": row[6],
        "recorded_cost_usd": row[7],
        "costed": row[8],
    }


_READERS: dict[str, sqlite3.Connection] = {}  # in a parse worker: the store, read-only


def read_digest_facts(db: str, ids: Sequence[int]) -> tuple[int, dict[int, dict[str, Any]]]:
    """(in a parse worker, ``helixd.ingest.digest.build_from``) ``digest_facts`` read from
    the store file through a read-only connection of this process's own, in one read
    transaction (a snapshot: the writer goes on meanwhile), and the instant before the read
    (``analyzed_at``: a change committed after it is analyzed again).  Nothing is created
    beside the store; the temporary tables live in this connection's memory."""
    con = _READERS.get(db)
    if con is None:
        uri = f"{Path(db).resolve().as_uri()}?mode=ro"
        con = _READERS[db] = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=10)
    read_at = int(time.time() * 1000)
    con.execute("BEGIN")
    try:
        return read_at, digest_facts(con, ids)
    finally:
        con.execute("COMMIT")


def digest_facts(con: sqlite3.Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """``{session_id: facts}``; see ``helixd.ingest.digest.build`` for the shape it consumes."""
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
            "bad_lines": [],
        }
    _scan_events(con, facts)
    _usage(con, facts)
    for sid, *counts in q(
        "SELECT session_id, count(*), coalesce(sum(bad_lines), 0),"
        " coalesce(sum(unknown_records), 0), coalesce(sum(redactions), 0),"
        " coalesce(sum(offset), 0), coalesce(sum(gone_at IS NOT NULL), 0)"
        f" FROM files WHERE {_WANT} GROUP BY 1"
    ):
        facts[sid]["problems"] = dict(zip(_PROBLEMS, counts, strict=True))
    for sid, lines in badlines.of_sessions(con, "SELECT id FROM temp.want").items():
        facts[sid]["bad_lines"] = lines
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


class _Scan:
    """The per-event facts of one session, gathered row by row (``_EVENT_SCAN`` order)."""

    def __init__(self, sid: int, f: dict[str, Any]) -> None:
        self.sid, self.f = sid, f
        self.kinds: dict[str, int] = {}
        self.tools: dict[Any, int] = {}
        self.lo: int | None = None
        self.hi: int | None = None
        self.first: int | None = None
        self.last: int | None = None
        self.conversation: deque[tuple[Any, ...]] = deque(maxlen=TAIL)
        self.edits: deque[tuple[Any, ...]] = deque(maxlen=TAIL)
        self.last_kind: str | None = None

    def add(self, row: Sequence[Any]) -> None:
        seq, ts, kind, tool = row[1], row[2], row[3], row[4]
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if kind != "lifecycle":
            self.last_kind = kind
        if ts is not None:
            self.lo = ts if self.lo is None or ts < self.lo else self.lo
            self.hi = ts if self.hi is None or ts > self.hi else self.hi
        if kind in _SIGNAL_KINDS:
            if kind == "tool_call":
                self.tools[tool] = self.tools.get(tool, 0) + 1
            text = row[7] if kind in _TEXT_KINDS else None
            self.f["signal_rows"].append((*row[1:7], text, *row[8:]))
        if kind == "edit":
            self.edits.append((seq, kind, row[8], row[5], None))
        elif kind in _CONVERSATION or (kind == "error" and tool is None):
            if kind == "user_msg" and self.first is None:
                self.first = seq
            elif kind == "assistant_msg":
                self.last = seq
            text = (row[7] or row[6] or "")[:400] if kind == "error" else row[7]
            self.conversation.append((seq, kind, row[8], row[5], text))

    def close(self, picks: list[tuple[int, int, str]]) -> None:
        self.f["kinds"], self.f["tools"] = self.kinds, self.tools
        # A turn's end (Codex task_complete, Grok turn_completed, Claude's turn duration)
        # with nothing after it: the agent waits for the user; new activity reopens.
        self.f["ends_on_completion"] = self.last_kind == "completion"
        if self.lo is not None:
            self.f["span"] = (self.lo, self.hi)
        if self.first is not None:
            picks.append((self.sid, self.first, "first"))
        if self.last is not None:
            picks.append((self.sid, self.last, "last"))
        _tail(self.f["tail"], self.conversation, self.edits)


def _scan_events(con: sqlite3.Connection, facts: dict[int, dict[str, Any]]) -> None:
    """Kind and tool counts, the time span, the signal rows (``SIGNAL_COLUMNS``), the first
    prompt and last reply, and the tail the outcome rule reads, from one ordered scan."""
    scan: _Scan | None = None
    picks: list[tuple[int, int, str]] = []
    for row in con.execute(_EVENT_SCAN):
        if scan is None or row[0] != scan.sid:
            if scan is not None:
                scan.close(picks)
            scan = _Scan(row[0], facts[row[0]])
        scan.add(row)
    if scan is not None:
        scan.close(picks)
    _messages(con, facts, picks)


def _tail(
    tail: dict[str, list[Any]], conversation: Iterable[tuple[Any, ...]], edits: Iterable[Any]
) -> None:
    """The kinds of the session's last ``TAIL`` conversational events, oldest first, and the
    error flags of the tool results among them (for ``helixd.ingest.digest.outcome``).

    Three kinds are refined: ``error`` is kept only for the session's own errors (no tool:
    API errors, timeouts, an expired login; not Claude Code's "No response requested."
    placeholder written after an interrupt or /exit), ``gave_up`` is an assistant reply whose
    opening sentence admits failure ("the connection failed", "I couldn't ...", "unable
    to ...") without also reporting success, ``edit_result`` a tool result whose call changed
    a file (same ``call_id`` as one of the session's last ``TAIL`` edits, made before it)."""
    edited: set[Any] = set()
    for _, kind, is_error, call_id, text in sorted((*conversation, *edits)):
        if kind == "edit":
            edited.add(call_id)
            continue
        if kind == "error" and (text or "").strip() == "No response requested.":
            continue
        if kind == "assistant_msg" and text:
            opening = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0][:200]
            if _GAVE_UP.search(opening) and not _SUCCEEDED.search(opening):
                kind = "gave_up"
        if kind == "tool_result":
            kind = "edit_result" if call_id in edited else kind
            tail["errors"].append(bool(is_error))
        tail["kinds"].append(kind)


def _messages(
    con: sqlite3.Connection, facts: dict[int, dict[str, Any]], picks: list[tuple[int, int, str]]
) -> None:
    """The (summary, body) of each session's first prompt and last reply."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS pick (sid INTEGER, seq INTEGER, what TEXT)")
    con.execute("DELETE FROM temp.pick")
    con.executemany("INSERT INTO temp.pick VALUES (?, ?, ?)", picks)
    for sid, what, summary, body in con.execute(
        "SELECT p.sid, p.what, e.summary, e.body FROM temp.pick p JOIN events e"
        " ON e.session_id = p.sid AND e.seq = p.seq"
    ):
        facts[sid][what] = (summary, body)


def _usage(con: sqlite3.Connection, facts: dict[int, dict[str, Any]]) -> None:
    q = con.execute
    for sid, *row in q(f"SELECT session_id, {_USAGE_COLS} FROM usage WHERE {_WANT} GROUP BY 1"):
        facts[sid]["usage"] = usage_dict(row)
    for sid, model, *row in q(
        f"SELECT session_id, model, {_USAGE_COLS} FROM usage WHERE {_WANT} GROUP BY 1, 2"
    ):
        facts[sid]["usage_by_model"][model] = usage_dict(row)
    children: dict[int, list[str]] = defaultdict(list)
    sub_usage: dict[int, list[Any]] = {}
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

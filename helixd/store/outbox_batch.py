"""What a fleet push sends: the current state of the Tier 2 rows a run of outbox entries names.

``next_batch`` reads the oldest entries of ``fleet_outbox`` and the rows they name in one
snapshot, in the column orders below (the server's staging tables take them as they are:
``store/pg/mirror.py``); the outbox's state — switching it on and off, confirming a batch, the
push's facts — is ``outbox.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from helixd.store.keys import IN_CHUNK

KINDS: Final = ("session", "digest", "usage", "bucket", "signals", "hook")

SESSION_COLUMNS: Final = (
    "uid",
    "agent",
    "native_id",
    "parent_uid",
    "cwd",
    "repo",
    "git_branch",
    "model",
    "title",
    "version",
    "agent_type",
    "started_at",
    "ended_at",
    "ended",
    "messages",
    "events",
    "discovered_at",
    "ingested_at",
    "changed_at",
    "analyzed_at",
    "evicted_at",
    "evict_stage",
    # m012 (attribution)
    "repo_root",
    "domain",
    "task_ref",
    "git_commit",
)
DIGEST_COLUMNS: Final = ("session_uid", "schema_version", "built_at", "provisional", "doc")
COUNTER_COLUMNS: Final = (
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "reasoning",
)
# The dollars an agent recorded (m016): NULL where it recorded none; ``costed`` counts a
# bucket's responses that carry a recorded cost.
USAGE_COLUMNS: Final = (
    "key", "session_uid", "rank", "ts", "model", *COUNTER_COLUMNS, "recorded_cost_usd"
)  # fmt: skip
BUCKET_COST_COLUMNS: Final = ("recorded_cost_usd", "costed")
BUCKET_COLUMNS: Final = (
    "bucket", "session_uid", "model", "responses", *COUNTER_COLUMNS, *BUCKET_COST_COLUMNS
)  # fmt: skip
# The signal tables: name -> columns after ``session_uid`` (their local key is the session).
SIGNAL_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "tool_calls": ("call_seq", "result_seq", "ts", "tool", "target", "status", "duration_ms"),
    "test_runs": (
        "call_seq",
        "result_seq",
        "ts",
        "command",
        "framework",
        "passed",
        "failed",
        "skipped",
        "status",
        "duration_ms",
    ),
    "file_operations": (
        "seq",
        "ts",
        "operation",
        "file_path",
        "language",
        "lines_added",
        "lines_removed",
        "status",
        "accepted",  # m009
    ),
    "session_signals": ("kind", "seq", "ref_seq", "tool", "fingerprint"),
}
# m013: what the agents' hooks reported (a shell command or an edited path, redacted: the
# same kind of text as ``tool_calls.target``, so Tier 2 and always sent).
HOOK_COLUMNS: Final = ("id", "at", "agent", "native_id", "what", "tool", "call_id", "target")
EVENT_COLUMNS: Final = (
    "session_uid",
    "seq",
    "parent_seq",
    "ts",
    "kind",
    "role",
    "tool",
    "call_id",
    "summary",
    "body",
    "is_error",
)


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    tbl: str
    k1: int
    k2: int
    k3: str
    at: int


@dataclass(slots=True)
class Tier2Batch:
    """The current state of the rows a run of outbox entries names, ready to send: rows in
    the ``*_COLUMNS`` orders (sessions named by uid, not by this store's ids), and the keys
    of rows that no longer exist."""

    entries: list[Entry]
    sessions: list[tuple[Any, ...]] = field(default_factory=list)
    digests: list[tuple[Any, ...]] = field(default_factory=list)
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    usage_gone: list[int] = field(default_factory=list)
    buckets: list[tuple[Any, ...]] = field(default_factory=list)
    buckets_gone: list[tuple[int, str, str]] = field(default_factory=list)
    signal_sessions: list[str] = field(default_factory=list)  # uids whose signals are replaced
    signals: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    hooks: list[tuple[Any, ...]] = field(default_factory=list)
    hooks_gone: list[int] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)  # include_text only
    text_marks: dict[int, int] = field(default_factory=dict)  # session id -> last event id sent
    text_more: list[int] = field(default_factory=list)  # sessions with more text to send

    @property
    def last_id(self) -> int:
        return self.entries[-1].id if self.entries else 0

    def rows(self) -> int:
        """Rows written or deleted on the server by this batch."""
        return (
            len(self.sessions)
            + len(self.digests)
            + len(self.usage)
            + len(self.usage_gone)
            + len(self.buckets)
            + len(self.buckets_gone)
            + sum(len(v) for v in self.signals.values())
            + len(self.hooks)
            + len(self.hooks_gone)
            + len(self.events)
        )


# -- a push ------------------------------------------------------------------------------------
def next_batch(
    con: sqlite3.Connection, limit: int, include_text: bool, text_budget: int
) -> Tier2Batch:
    """The oldest ``limit`` entries and the current state of their rows, in one snapshot."""
    con.execute("BEGIN")
    try:
        entries = [
            Entry(*r)
            for r in con.execute(
                "SELECT id, tbl, k1, k2, k3, at FROM fleet_outbox ORDER BY id LIMIT ?", (limit,)
            )
        ]
        batch = Tier2Batch(entries)
        by_kind: dict[str, list[Entry]] = {k: [] for k in KINDS}
        for e in entries:
            by_kind[e.tbl].append(e)
        _load_sessions(con, batch, [e.k1 for e in by_kind["session"]])
        _load_digests(con, batch, [e.k1 for e in by_kind["digest"]])
        _load_usage(con, batch, [e.k1 for e in by_kind["usage"]])
        _load_buckets(con, batch, by_kind["bucket"])
        _load_signals(con, batch, [e.k1 for e in by_kind["signals"]])
        _load_hooks(con, batch, [e.k1 for e in by_kind["hook"]])
        if include_text:
            _load_text(con, batch, [e.k1 for e in by_kind["session"]], text_budget)
    finally:
        con.execute("COMMIT")
    return batch


def chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(values), IN_CHUNK):
        yield values[i : i + IN_CHUNK]


def marks(n: int) -> str:
    return ",".join("?" * n)


def _uids(con: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for part in chunks(sorted(set(ids))):
        out.update(
            con.execute(f"SELECT id, uid FROM sessions WHERE id IN ({marks(len(part))})", part)
        )
    return out


def _load_sessions(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    cols = ", ".join(SESSION_COLUMNS)
    for part in chunks(ids):
        batch.sessions.extend(
            con.execute(f"SELECT {cols} FROM sessions WHERE id IN ({marks(len(part))})", part)
        )


def _load_digests(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    for part in chunks(ids):
        batch.digests.extend(
            con.execute(
                "SELECT s.uid, d.schema_version, d.built_at, d.provisional, d.json FROM digests d"
                f" JOIN sessions s ON s.id = d.session_id WHERE d.session_id IN"
                f" ({marks(len(part))})",
                part,
            )
        )


def _load_usage(con: sqlite3.Connection, batch: Tier2Batch, keys: list[int]) -> None:
    found: set[int] = set()
    cols = ", ".join(f"u.{c}" for c in (*COUNTER_COLUMNS, "recorded_cost_usd"))
    for part in chunks(keys):
        for row in con.execute(
            f"SELECT u.key, s.uid, u.rank, u.ts, u.model, {cols} FROM usage u"
            f" JOIN sessions s ON s.id = u.session_id WHERE u.key IN ({marks(len(part))})",
            part,
        ):
            batch.usage.append(row)
            found.add(row[0])
    batch.usage_gone.extend(k for k in keys if k not in found)


def _load_buckets(con: sqlite3.Connection, batch: Tier2Batch, entries: list[Entry]) -> None:
    uids = _uids(con, (e.k1 for e in entries))
    cols = ", ".join((*COUNTER_COLUMNS, *BUCKET_COST_COLUMNS))
    for e in entries:
        row = con.execute(
            f"SELECT responses, {cols} FROM usage_buckets"
            " WHERE bucket = ? AND session_id = ? AND model = ?",
            (e.k2, e.k1, e.k3),
        ).fetchone()
        if e.k1 not in uids:
            continue  # a session never goes; nothing to name it by
        if row is None:
            batch.buckets_gone.append((e.k2, uids[e.k1], e.k3))
        else:
            batch.buckets.append((e.k2, uids[e.k1], e.k3, *row))


def _load_signals(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    uids = _uids(con, ids)
    batch.signal_sessions.extend(uids[i] for i in ids if i in uids)
    for table, columns in SIGNAL_COLUMNS.items():
        rows = batch.signals.setdefault(table, [])
        cols = ", ".join(columns)
        for part in chunks([i for i in ids if i in uids]):
            rows.extend(
                (uids[r[0]], *r[1:])
                for r in con.execute(
                    f"SELECT session_id, {cols} FROM {table}"
                    f" WHERE session_id IN ({marks(len(part))})",
                    part,
                )
            )


def _load_hooks(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    found: set[int] = set()
    cols = ", ".join(HOOK_COLUMNS)
    for part in chunks(ids):
        for row in con.execute(
            f"SELECT {cols} FROM hook_events WHERE id IN ({marks(len(part))})", part
        ):
            batch.hooks.append(row)
            found.add(row[0])
    batch.hooks_gone.extend(i for i in ids if i not in found)


def _load_text(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int], budget: int) -> None:
    """Events not sent yet of the sessions in the batch, at most ``budget`` in all; a session
    with more left is noted in ``text_more`` (enqueued again on confirm)."""
    uids = _uids(con, ids)
    cols = ", ".join(EVENT_COLUMNS[1:])
    for sid in ids:
        if sid not in uids:
            continue
        mark = con.execute(
            "SELECT event_id FROM fleet_text_marks WHERE session_id = ?", (sid,)
        ).fetchone()
        rows = con.execute(
            f"SELECT id, {cols} FROM events WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
            (sid, mark[0] if mark else 0, budget + 1),
        ).fetchall()
        if len(rows) > budget:
            rows = rows[:budget]
            batch.text_more.append(sid)
        if rows:
            batch.events.extend((uids[sid], *r[1:]) for r in rows)
            batch.text_marks[sid] = int(rows[-1][0])
        budget -= len(rows)
        if budget <= 0:
            batch.text_more.extend(
                i for i in ids[ids.index(sid) + 1 :] if i in uids and i not in batch.text_more
            )
            break

"""The fleet outbox on the SQLite side: what changed in Tier 2 and is not on the server yet.

Triggers (migration ``m010_fleet_outbox``) record the key of every changed Tier 2 row in
``fleet_outbox`` while the store's mirror is switched on (meta key ``fleet_outbox``), in the
transaction that changed it.  A push takes the oldest entries (``next_batch``: the entries and
the current state of their rows, read in one snapshot), sends them, and only once the server
has committed deletes those entries (``confirm``); an entry whose row changed again meanwhile
has a new id and stays.  Nothing is lost when a push dies half-way, and nothing is doubled
when it is repeated: the server upserts the rows' state on their natural keys.

The outbox holds at most one entry per Tier 2 row (a row changed a thousand times while the
server is away is sent once, as it is now), so it cannot outgrow Tier 2 itself.

Also here: the push's own facts in ``meta`` (this store's machine id, the watermark the
server confirmed, when the last push ran and how it ended) for ``status``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from helixd.store.keys import IN_CHUNK

FLAG: Final = "fleet_outbox"
_MACHINE_ID: Final = "fleet_machine_id"
_WATERMARK: Final = "fleet_watermark"
_TEXT: Final = "fleet_text"
_LAST_PUSH: Final = "fleet_last_push_at"
_LAST_ERROR: Final = "fleet_last_error"
_FAILURES: Final = "fleet_failures"
_PUSHED: Final = "fleet_rows_pushed"
_RESYNCS: Final = "fleet_resyncs"

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


# -- switching the mirror on and off ---------------------------------------------------------
def _meta(con: sqlite3.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(con: sqlite3.Connection, key: str, value: object) -> None:
    if value is None:
        con.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))


def _transaction(con: sqlite3.Connection, fn: Any, *args: Any) -> Any:
    con.execute("BEGIN IMMEDIATE")
    try:
        result = fn(con, *args)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return result


def _seed(con: sqlite3.Connection, now: int, kinds: Iterable[str]) -> int:
    """Enqueue every existing row of ``kinds`` (inside the caller's transaction)."""
    queued = 0
    sources = {
        "session": "SELECT 'session', id, 0, '', ? FROM sessions",
        "digest": "SELECT 'digest', session_id, 0, '', ? FROM digests",
        "usage": "SELECT 'usage', key, 0, '', ? FROM usage",
        "bucket": "SELECT 'bucket', session_id, bucket, model, ? FROM usage_buckets",
        "signals": (
            "SELECT 'signals', session_id, 0, '', ? FROM (SELECT session_id FROM tool_calls"
            " UNION SELECT session_id FROM test_runs UNION SELECT session_id FROM file_operations"
            " UNION SELECT session_id FROM session_signals)"
        ),
        "hook": "SELECT 'hook', id, 0, '', ? FROM hook_events",
    }
    for kind in kinds:
        con.execute("DELETE FROM fleet_outbox WHERE tbl = ?", (kind,))
        cur = con.execute(f"INSERT INTO fleet_outbox (tbl, k1, k2, k3, at) {sources[kind]}", (now,))
        queued += cur.rowcount
    return queued


def switch_on(con: sqlite3.Connection, now: int, include_text: bool) -> int:
    """Start recording changes; the first time, every existing Tier 2 row is enqueued (the
    server gets the whole history).  Returns the entries enqueued (0 when already on)."""

    def run(con: sqlite3.Connection) -> int:
        if _meta(con, FLAG) is not None:
            return 0
        _set_meta(con, FLAG, "1")
        _set_meta(con, _TEXT, int(include_text))
        con.execute("DELETE FROM fleet_text_marks")
        return _seed(con, now, KINDS)

    return int(_transaction(con, run))


def switch_off(con: sqlite3.Connection) -> int:
    """Stop recording and forget what was waiting (``helixctl fleet push --forget``)."""

    def run(con: sqlite3.Connection) -> int:
        n = con.execute("DELETE FROM fleet_outbox").rowcount
        con.execute("DELETE FROM fleet_text_marks")
        for key in (FLAG, _TEXT, _WATERMARK):
            _set_meta(con, key, None)
        return int(n)

    return int(_transaction(con, run))


def resync(con: sqlite3.Connection, now: int) -> int:
    """The server lost what it had confirmed (a new database, a restore): enqueue everything
    again."""

    def run(con: sqlite3.Connection) -> int:
        con.execute("DELETE FROM fleet_text_marks")
        resyncs = int(_meta(con, _RESYNCS) or 0)
        _set_meta(con, _RESYNCS, resyncs + 1)
        return _seed(con, now, KINDS)

    return int(_transaction(con, run))


def set_text(con: sqlite3.Connection, now: int, include_text: bool) -> bool:
    """Record whether conversation text is shipped; when that changed, sessions and digests
    are enqueued again (so the server's copies gain or lose their text).  True if changed."""

    def run(con: sqlite3.Connection) -> bool:
        if _meta(con, _TEXT) == str(int(include_text)):
            return False
        _set_meta(con, _TEXT, int(include_text))
        con.execute("DELETE FROM fleet_text_marks")
        _seed(con, now, ("session", "digest"))
        return True

    return bool(_transaction(con, run))


def text_shipped(con: sqlite3.Connection) -> bool:
    """Whether this store's pushes ship conversation text (as last recorded)."""
    return _meta(con, _TEXT) == "1"


def machine_id(con: sqlite3.Connection) -> str | None:
    return _meta(con, _MACHINE_ID)


def set_machine_id(con: sqlite3.Connection, value: str) -> None:
    _transaction(con, lambda c: _set_meta(c, _MACHINE_ID, value))


def watermark(con: sqlite3.Connection) -> int:
    return int(_meta(con, _WATERMARK) or 0)


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


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(values), IN_CHUNK):
        yield values[i : i + IN_CHUNK]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _uids(con: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for part in _chunks(sorted(set(ids))):
        out.update(
            con.execute(f"SELECT id, uid FROM sessions WHERE id IN ({_marks(len(part))})", part)
        )
    return out


def _load_sessions(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    cols = ", ".join(SESSION_COLUMNS)
    for part in _chunks(ids):
        batch.sessions.extend(
            con.execute(f"SELECT {cols} FROM sessions WHERE id IN ({_marks(len(part))})", part)
        )


def _load_digests(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    for part in _chunks(ids):
        batch.digests.extend(
            con.execute(
                "SELECT s.uid, d.schema_version, d.built_at, d.provisional, d.json FROM digests d"
                f" JOIN sessions s ON s.id = d.session_id WHERE d.session_id IN"
                f" ({_marks(len(part))})",
                part,
            )
        )


def _load_usage(con: sqlite3.Connection, batch: Tier2Batch, keys: list[int]) -> None:
    found: set[int] = set()
    cols = ", ".join(f"u.{c}" for c in (*COUNTER_COLUMNS, "recorded_cost_usd"))
    for part in _chunks(keys):
        for row in con.execute(
            f"SELECT u.key, s.uid, u.rank, u.ts, u.model, {cols} FROM usage u"
            f" JOIN sessions s ON s.id = u.session_id WHERE u.key IN ({_marks(len(part))})",
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
        for part in _chunks([i for i in ids if i in uids]):
            rows.extend(
                (uids[r[0]], *r[1:])
                for r in con.execute(
                    f"SELECT session_id, {cols} FROM {table}"
                    f" WHERE session_id IN ({_marks(len(part))})",
                    part,
                )
            )


def _load_hooks(con: sqlite3.Connection, batch: Tier2Batch, ids: list[int]) -> None:
    found: set[int] = set()
    cols = ", ".join(HOOK_COLUMNS)
    for part in _chunks(ids):
        for row in con.execute(
            f"SELECT {cols} FROM hook_events WHERE id IN ({_marks(len(part))})", part
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


def confirm(con: sqlite3.Connection, batch: Tier2Batch, now: int) -> None:
    """The server committed ``batch``: drop its entries (those not replaced meanwhile by a
    newer change), record the text sent and the watermark, enqueue what text is left."""

    def run(con: sqlite3.Connection) -> None:
        for part in _chunks([e.id for e in batch.entries]):
            con.execute(f"DELETE FROM fleet_outbox WHERE id IN ({_marks(len(part))})", part)
        con.executemany(
            "INSERT OR REPLACE INTO fleet_text_marks (session_id, event_id) VALUES (?, ?)",
            batch.text_marks.items(),
        )
        for sid in batch.text_more:  # one entry per row, as the triggers keep it
            con.execute("DELETE FROM fleet_outbox WHERE tbl = 'session' AND k1 = ?", (sid,))
            con.execute(
                "INSERT INTO fleet_outbox (tbl, k1, k2, k3, at) VALUES ('session', ?, 0, '', ?)",
                (sid, now),
            )
        _set_meta(con, _WATERMARK, max(watermark(con), batch.last_id))
        _set_meta(con, _PUSHED, int(_meta(con, _PUSHED) or 0) + batch.rows())
        _set_meta(con, _LAST_PUSH, now)
        _set_meta(con, _FAILURES, None)
        _set_meta(con, _LAST_ERROR, None)

    _transaction(con, run)


def record_push(con: sqlite3.Connection, now: int, error: str | None) -> None:
    """The end of a push: when, and the error that stopped it (counted), or none."""

    def run(con: sqlite3.Connection) -> None:
        _set_meta(con, _LAST_PUSH, now)
        if error is None:
            _set_meta(con, _FAILURES, None)
            _set_meta(con, _LAST_ERROR, None)
        else:
            _set_meta(con, _FAILURES, int(_meta(con, _FAILURES) or 0) + 1)
            _set_meta(con, _LAST_ERROR, error[:500])

    _transaction(con, run)


# -- what status shows (read-only) -----------------------------------------------------------
def facts(con: sqlite3.Connection) -> dict[str, Any] | None:
    """The outbox and the last push as this store knows them; None before the migration."""
    if not con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'fleet_outbox'"
    ).fetchone():
        return None
    meta = dict(con.execute("SELECT key, value FROM meta WHERE key LIKE 'fleet\\_%' ESCAPE '\\'"))
    pending, oldest = con.execute("SELECT count(*), min(at) FROM fleet_outbox").fetchone()
    return {
        "recording": FLAG in meta,
        "machine_id": meta.get(_MACHINE_ID),
        "pending": int(pending),
        "oldest_pending_at": oldest,
        "watermark": int(meta.get(_WATERMARK, 0)),
        "include_text": meta.get(_TEXT) == "1",
        "last_push_at": int(meta[_LAST_PUSH]) if _LAST_PUSH in meta else None,
        "last_error": meta.get(_LAST_ERROR),
        "failures": int(meta.get(_FAILURES, 0)),
        "rows_pushed": int(meta.get(_PUSHED, 0)),
        "resyncs": int(meta.get(_RESYNCS, 0)),
    }

"""The fleet outbox on the SQLite side: what changed in Tier 2 and is not on the server yet.

Triggers (migration ``m010_fleet_outbox``) record the key of every changed Tier 2 row in
``fleet_outbox`` while the store's mirror is switched on (meta key ``fleet_outbox``), in the
transaction that changed it.  A push takes the oldest entries (``outbox_batch.next_batch``:
the entries and the current state of their rows, read in one snapshot), sends them, and only
once the server has committed deletes those entries (``confirm``); an entry whose row changed
again meanwhile has a new id and stays.  Nothing is lost when a push dies half-way, and
nothing is doubled when it is repeated: the server upserts the rows' state on their natural
keys.

The outbox holds at most one entry per Tier 2 row (a row changed a thousand times while the
server is away is sent once, as it is now), so it cannot outgrow Tier 2 itself.

Also here: the push's own facts in ``meta`` (this store's machine id, the watermark the
server confirmed, when the last push ran and how it ended) for ``status``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # the push's side, imported where used: ``status`` reads only ``facts``
    from helixd.store.outbox_batch import Tier2Batch

FLAG: Final = "fleet_outbox"
_MACHINE_ID: Final = "fleet_machine_id"
_WATERMARK: Final = "fleet_watermark"
_TEXT: Final = "fleet_text"
_LAST_PUSH: Final = "fleet_last_push_at"
_LAST_ERROR: Final = "fleet_last_error"
_FAILURES: Final = "fleet_failures"
_PUSHED: Final = "fleet_rows_pushed"
_RESYNCS: Final = "fleet_resyncs"


def _kinds() -> tuple[str, ...]:
    from helixd.store.outbox_batch import KINDS

    return KINDS


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
        return _seed(con, now, _kinds())

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
        return _seed(con, now, _kinds())

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


def confirm(con: sqlite3.Connection, batch: Tier2Batch, now: int) -> None:
    """The server committed ``batch``: drop its entries (those not replaced meanwhile by a
    newer change), record the text sent and the watermark, enqueue what text is left."""

    from helixd.store.outbox_batch import chunks, marks

    def run(con: sqlite3.Connection) -> None:
        for part in chunks([e.id for e in batch.entries]):
            con.execute(f"DELETE FROM fleet_outbox WHERE id IN ({marks(len(part))})", part)
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

"""Saving a session's signals (``helixd.core.signals``) beside its digest, replacing the old set.

Runs inside the digest transaction of ``digest_write.save_digests``.  Signals are Tier 2: they
stay when the session's raw lines and events are evicted (their ``seq`` pointers then name
events that are gone, which the digest's ``markers`` say).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from helixd.core.signals import Signals
from helixd.store import tool_rollup
from helixd.store.migration_sql import NOW_MS

_TABLES: Final = ("tool_calls", "test_runs", "file_operations", "session_signals")
TARGET_CHARS: Final = 500
# The fleet outbox's entry for a session's signals (what m010's insert triggers wrote once per
# row, m028: once per session here): the time of its oldest unshipped change, a new id.
_FLEET_ON: Final = "SELECT 1 FROM meta WHERE key = 'fleet_outbox'"
_SIGNALS_ENTRY: Final = "tbl = 'signals' AND k1 = ? AND k2 = 0 AND k3 = ''"
_ENQUEUE: Final = (
    f"INSERT INTO fleet_outbox (tbl, k1, k2, k3, at) SELECT 'signals', ?, 0, '',"
    f" coalesce(min(at), {NOW_MS}) FROM fleet_outbox WHERE {_SIGNALS_ENTRY}"
)
_DEQUEUE_OLDER: Final = (
    f"DELETE FROM fleet_outbox WHERE {_SIGNALS_ENTRY} AND id < (SELECT max(id) FROM fleet_outbox)"
)


def replace_signals(con: sqlite3.Connection, items: Sequence[tuple[int, Signals]]) -> None:
    """Delete and re-insert the signals of each ``(session_id, signals)``."""
    if not items:
        return
    ids = [(sid,) for sid, _ in items]
    for table in _TABLES:
        con.executemany(f"DELETE FROM {table} WHERE session_id = ?", ids)
    con.executemany(
        "INSERT OR REPLACE INTO tool_calls (session_id, call_seq, result_seq, ts, tool, target,"
        " status, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                sid,
                c.call_seq,
                c.result_seq,
                c.ts,
                c.tool,
                c.target[:TARGET_CHARS],
                c.status,
                c.duration_ms,
            )
            for sid, sig in items
            for c in sig.tool_calls
        ],
    )
    tool_rollup.refresh(con, [sid for sid, _ in items])
    con.executemany(
        "INSERT OR REPLACE INTO test_runs (session_id, call_seq, result_seq, ts, command,"
        " framework, passed, failed, skipped, status, duration_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                sid,
                t.call_seq,
                t.result_seq,
                t.ts,
                t.command[:TARGET_CHARS],
                t.framework,
                t.passed,
                t.failed,
                t.skipped,
                t.status,
                t.duration_ms,
            )
            for sid, sig in items
            for t in sig.test_runs
        ],
    )
    con.executemany(
        "INSERT OR REPLACE INTO file_operations (session_id, seq, ts, operation, file_path,"
        " language, lines_added, lines_removed, status, accepted)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                sid,
                f.seq,
                f.ts,
                f.operation,
                f.file_path,
                f.language,
                f.lines_added,
                f.lines_removed,
                f.status,
                None if f.accepted is None else int(f.accepted),
            )
            for sid, sig in items
            for f in sig.file_operations
        ],
    )
    con.executemany(
        "INSERT OR REPLACE INTO session_signals (session_id, kind, seq, ref_seq, tool,"
        " fingerprint) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (sid, m.kind, m.seq, m.ref_seq, m.tool, m.fingerprint)
            for sid, sig in items
            for m in sig.markers
        ],
    )
    _enqueue_for_fleet(con, items)


def _enqueue_for_fleet(con: sqlite3.Connection, items: Sequence[tuple[int, Signals]]) -> None:
    """While the fleet mirror is on, the outbox entry of every session given new signal
    rows, as m010's insert triggers made it (m028 dropped them: they ran once per row, ~5 µs
    each on every insert, fleet on or off; the update and delete triggers stay)."""
    if con.execute(_FLEET_ON).fetchone() is None:
        return
    for sid, sig in items:
        if sig.tool_calls or sig.test_runs or sig.file_operations or sig.markers:
            con.execute(_ENQUEUE, (sid, sid))
            con.execute(_DEQUEUE_OLDER, (sid,))

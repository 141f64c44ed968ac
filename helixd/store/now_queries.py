"""The few reads the status line makes on every assistant message: a session's usage (with
its subagents') and the usage since a bucket, from the 15-minute rollup.  Each is an index
range, a few rows; ``helixctl statusline`` must answer in tens of milliseconds."""

from __future__ import annotations

import sqlite3
from typing import Any

from helixd.store.queries import BUCKET_SUMS


def session_usage(con: sqlite3.Connection, native_id: str) -> list[tuple[Any, ...]]:
    """``(model, *counters)`` of the session whose native id is ``native_id`` and of the
    sessions it spawned (subagents)."""
    sql = (
        f"SELECT b.model, {BUCKET_SUMS} FROM usage_buckets b WHERE b.session_id IN"
        " (SELECT id FROM sessions WHERE native_id = ?1 UNION"
        "  SELECT c.id FROM sessions c JOIN sessions p ON c.parent_uid = p.uid"
        "  WHERE p.native_id = ?1)"
        " GROUP BY b.model"
    )
    return con.execute(sql, (native_id,)).fetchall()


def known_session(con: sqlite3.Connection, native_id: str) -> bool:
    row = con.execute("SELECT 1 FROM sessions WHERE native_id = ? LIMIT 1", (native_id,))
    return row.fetchone() is not None


def usage_since(con: sqlite3.Connection, bucket: int) -> list[tuple[Any, ...]]:
    """``(model, *counters)`` of every session's usage in the buckets from ``bucket``."""
    sql = f"SELECT b.model, {BUCKET_SUMS} FROM usage_buckets b WHERE b.bucket >= ? GROUP BY 1"
    return con.execute(sql, (bucket,)).fetchall()

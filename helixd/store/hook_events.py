"""Hook activity the daemon received (``hook_events``, Tier 2): what Hegel's hooks.jsonl
holds — shell commands and edited paths — already redacted by the caller."""

from __future__ import annotations

import sqlite3
from typing import Any


def save(con: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    """``(at, agent, native session id, "bash" | "edit", tool, call id, target)``."""
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute(
            "INSERT INTO hook_events (at, agent, native_id, what, tool, call_id, target)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise

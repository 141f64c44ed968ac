"""What the store alone tells ``status``: sessions and events per agent, files and bytes read,
malformed lines, raw bytes kept against the budgets, digests, evictions, and every tracked
file's cursor (the ingest lag is the bytes written beyond them); the fleet outbox."""

from __future__ import annotations

import sqlite3
from typing import Any

from helixd.store import outbox, session_queries
from helixd.store.readonly import ping


def store_facts(con: sqlite3.Connection) -> dict[str, Any]:
    return session_queries.status_facts(con)


def fleet_facts(con: sqlite3.Connection) -> dict[str, Any] | None:
    """The fleet outbox and the last push (None on a store older than the outbox)."""
    return outbox.facts(con)


def reachable(con: sqlite3.Connection) -> bool:
    """The store answers a query (``/api/health``); raises what SQLite raises when not."""
    ping(con)
    return True

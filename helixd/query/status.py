"""What the store alone tells ``status``: sessions and events per agent, files and bytes read,
malformed lines, raw bytes kept against the budgets, digests, evictions, and every tracked
file's cursor (the ingest lag is the bytes written beyond them); the fleet outbox.

The full-text index's share of Tier 1 is the size of its segments: a read of every block
(~20 ms on the 1.3 GB corpus's store).  It changes only with FTS5's structure and averages
records (``store.tier1.index_shape``), so the figure is kept beside them: in memory in a
long-running process (the web face), in ``memo`` (a 0600 file: the CLI) between runs, and
read again when either record changed."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from helixd.store import outbox, session_queries, tier1
from helixd.store.readonly import ping

_LOCK = threading.Lock()
_KNOWN: dict[str, tuple[bytes, int]] = {}  # store file -> (index shape, segment bytes)


def store_facts(con: sqlite3.Connection, memo: Path | None = None) -> dict[str, Any]:
    return session_queries.status_facts(con, index_segment_bytes(con, memo))


def index_segment_bytes(con: sqlite3.Connection, memo: Path | None = None) -> int | None:
    """The index's segment bytes, kept while the index's shape is unchanged; None on a
    store without the index (``status_facts`` then says what it says)."""
    try:
        shape = tier1.index_shape(con)
        where = str(con.execute("PRAGMA database_list").fetchone()[2])
    except sqlite3.OperationalError:
        return None
    with _LOCK:
        known = _KNOWN.get(where)
    if known is not None and known[0] == shape:
        return known[1]
    kept = _read_memo(memo, where, shape) if memo is not None else None
    size = kept if kept is not None else tier1.index_segment_bytes(con)
    with _LOCK:
        _KNOWN[where] = (shape, size)
    if memo is not None and kept is None:
        _write_memo(memo, where, shape, size)
    return size


def _read_memo(memo: Path, where: str, shape: bytes) -> int | None:
    import json  # not orjson: its import costs ``status`` ~20 ms

    try:
        doc = json.loads(memo.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("store") != where or doc.get("shape") != shape.hex():
        return None
    size = doc.get("bytes")
    return size if isinstance(size, int) else None


def _write_memo(memo: Path, where: str, shape: bytes, size: int) -> None:
    import json

    from helixd.filemodes import private_dir, write_private

    doc = {"store": where, "shape": shape.hex(), "bytes": size}
    try:
        private_dir(memo.parent)
        write_private(memo, json.dumps(doc).encode())
    except OSError:
        return  # the next run reads the blocks again


def fleet_facts(con: sqlite3.Connection) -> dict[str, Any] | None:
    """The fleet outbox and the last push (None on a store older than the outbox)."""
    return outbox.facts(con)


def reachable(con: sqlite3.Connection) -> bool:
    """The store answers a query (``/api/health``); raises what SQLite raises when not."""
    ping(con)
    return True

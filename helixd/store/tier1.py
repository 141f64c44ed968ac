"""Tier 1's size as the retention pass counts it (``helixd.store.evict`` explains each part),
in a module of its own: ``status`` reads it without loading the retention machinery
(zstandard, the index writer, the store-fault rules)."""

from __future__ import annotations

import sqlite3
from typing import Final

from helixd.store import status_totals

# Page-level costs measured with dbstat on the store of the 1 GB bench corpus: a raw block
# leaves ~974 bytes of slack (its last overflow page is half empty on average) and an event
# row costs ~199 bytes beyond its text (row header, integer columns, three index entries).
RAW_ROW_OVERHEAD: Final = 1000
EVENT_ROW_OVERHEAD: Final = 200
# A ``search_docs`` row (id, session, kind, time) and its index entry on ``session_id``.
INDEX_DOC_ROW_BYTES: Final = 40

_TIER1: Final = (
    f"SELECT (SELECT coalesce(sum(length(data) + {RAW_ROW_OVERHEAD}), 0) FROM raw_blocks),"
    " (SELECT coalesce(sum(length(CAST(summary AS BLOB))"
    f" + coalesce(length(CAST(body AS BLOB)), 0) + {EVENT_ROW_OVERHEAD}), 0) FROM events)"
)
_RAW_TOTAL: Final = f"SELECT coalesce(sum(length(data) + {RAW_ROW_OVERHEAD}), 0) FROM raw_blocks"
_INDEX_SEGMENTS: Final = "SELECT coalesce(sum(length(block)), 0) FROM search_data"


_EVENT_TOTALS: Final = (
    f"SELECT text_bytes + event_rows * {EVENT_ROW_OVERHEAD} FROM event_totals WHERE id = 1"
)


def tier1_bytes(con: sqlite3.Connection, segments: int | None = None) -> tuple[int, int, int]:
    """``(raw blocks, events, full-text index)`` bytes of Tier 1, counted as ``measure``
    counts them (their sum is what the retention budgets cap), without the per-session
    grouping.  The events' part comes from the running total of migration
    ``m014_event_totals``, kept by the writer's inserts (m027) and m014's update and delete
    triggers (a scan of every event on a store not migrated yet).
    ``segments``: the index's segment bytes when the caller knows them (``index_shape``)."""
    try:
        total = con.execute(_EVENT_TOTALS).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        total = None
    if total is not None:
        kept = status_totals.kept(con)  # m025's running total, else a read of every block
        raw = (
            kept[1] + kept[0] * RAW_ROW_OVERHEAD if kept else con.execute(_RAW_TOTAL).fetchone()[0]
        )
        events = total[0]
    else:
        raw, events = con.execute(_TIER1).fetchone()
    docs = int(con.execute("SELECT count(*) FROM search_docs").fetchone()[0])
    if segments is None:
        segments = _index_total(con)
    return int(raw), int(events), segments + docs * INDEX_DOC_ROW_BYTES


def _index_total(con: sqlite3.Connection) -> int:
    return int(con.execute(_INDEX_SEGMENTS).fetchone()[0])


def index_segment_bytes(con: sqlite3.Connection) -> int:
    """The stored bytes of the full-text index (``search_data``): a read of every block."""
    return _index_total(con)


def index_shape(con: sqlite3.Connection) -> bytes:
    """What ``index_segment_bytes`` is a function of: FTS5's structure record (``id`` 10:
    every segment with its pages, and a counter of segment writes) and its averages record
    (``id`` 1), the only blocks FTS5 rewrites in place; every other block belongs to one
    segment and is never changed once written (no ``secure-delete``, no tombstones here).
    A change to the index changes these two records."""
    rows = con.execute("SELECT id, block FROM search_data WHERE id IN (1, 10) ORDER BY id")
    return b"".join(len(b).to_bytes(8, "big") + bytes(b) for _, b in rows if b is not None)

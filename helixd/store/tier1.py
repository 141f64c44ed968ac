"""Tier 1's size as the retention pass counts it (``helixd.store.evict`` explains each part),
in a module of its own: ``status`` reads it without loading the retention machinery
(zstandard, the index writer, the store-fault rules)."""

from __future__ import annotations

import sqlite3
from typing import Final

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


def tier1_bytes(con: sqlite3.Connection) -> tuple[int, int, int]:
    """``(raw blocks, events, full-text index)`` bytes of Tier 1, counted as ``measure``
    counts them (their sum is what the retention budgets cap), without the per-session
    grouping.  The events' part comes from the running total the triggers of migration
    ``m014_event_totals`` keep (a scan of every event on a store not migrated yet)."""
    try:
        total = con.execute(_EVENT_TOTALS).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        total = None
    if total is not None:
        raw = con.execute(_RAW_TOTAL).fetchone()[0]
        events = total[0]
    else:
        raw, events = con.execute(_TIER1).fetchone()
    docs = int(con.execute("SELECT count(*) FROM search_docs").fetchone()[0])
    return int(raw), int(events), _index_total(con) + docs * INDEX_DOC_ROW_BYTES


def _index_total(con: sqlite3.Connection) -> int:
    return int(con.execute(_INDEX_SEGMENTS).fetchone()[0])

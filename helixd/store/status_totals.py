"""m025: what ``helixctl status`` counts over whole tables, kept so it reads rows, not tables.

* ``store_totals`` (one row): the raw blocks' count and data bytes and the digests' count,
  kept by triggers on ``raw_blocks`` and ``digests`` in the transaction that changes them
  (the writer's batch, the retention pass, a re-normalization alike: no writer calls
  anything), filled by the migration from the tables.  Before, ``status`` summed
  ``length(data)`` over every raw block (one page read per block) and counted every digest
  (9.7 MB of pages on the 1.3 GB corpus's store): ~10 ms on a cold connection.
* ``files_status``: a covering index of the ``files`` columns ``status`` reads (the sums,
  the malformed lines by agent, every tracked file's cursor for the ingest lag), so those
  scans read a narrow index instead of rows that carry each file's parser state.
* ``sessions_agent``: a covering index for the sessions and events per agent.

``COUNTS`` is the truth the totals must equal (the migration's fill and the tests' check).
"""

from __future__ import annotations

import sqlite3
from typing import Final

COUNTS: Final = (
    "SELECT (SELECT count(*) FROM raw_blocks),"
    " (SELECT coalesce(sum(length(data)), 0) FROM raw_blocks),"
    " (SELECT count(*) FROM digests)"
)
_KEPT: Final = "SELECT raw_blocks, raw_bytes, digests FROM store_totals WHERE id = 1"


def kept(con: sqlite3.Connection) -> tuple[int, int, int] | None:
    """``(raw blocks, their data bytes, digests)`` as kept; None on a store before m025."""
    try:
        row = con.execute(_KEPT).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    return (int(row[0]), int(row[1]), int(row[2])) if row is not None else None


def migration() -> str:
    return f"""
        -- Running totals of raw_blocks and digests (helixd/store/status_totals.py), kept by
        -- the triggers below; covering indexes for status' scans of files and sessions.
        CREATE TABLE store_totals (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            raw_blocks INTEGER NOT NULL,
            raw_bytes INTEGER NOT NULL,
            digests INTEGER NOT NULL
        );
        INSERT INTO store_totals (id, raw_blocks, raw_bytes, digests) SELECT 1, * FROM ({COUNTS});
        CREATE TRIGGER store_totals_raw_insert AFTER INSERT ON raw_blocks BEGIN
            UPDATE store_totals SET raw_blocks = raw_blocks + 1,
                raw_bytes = raw_bytes + length(NEW.data) WHERE id = 1;
        END;
        CREATE TRIGGER store_totals_raw_delete AFTER DELETE ON raw_blocks BEGIN
            UPDATE store_totals SET raw_blocks = raw_blocks - 1,
                raw_bytes = raw_bytes - length(OLD.data) WHERE id = 1;
        END;
        CREATE TRIGGER store_totals_raw_update AFTER UPDATE OF data ON raw_blocks BEGIN
            UPDATE store_totals SET raw_bytes = raw_bytes + length(NEW.data) - length(OLD.data)
                WHERE id = 1;
        END;
        CREATE TRIGGER store_totals_digest_insert AFTER INSERT ON digests BEGIN
            UPDATE store_totals SET digests = digests + 1 WHERE id = 1;
        END;
        CREATE TRIGGER store_totals_digest_delete AFTER DELETE ON digests BEGIN
            UPDATE store_totals SET digests = digests - 1 WHERE id = 1;
        END;
        CREATE INDEX files_status ON files
            (agent, gone_at, offset, lines, bad_lines, raw_bytes, unknown_records, path);
        CREATE INDEX sessions_agent ON sessions (agent, events, messages);
        """

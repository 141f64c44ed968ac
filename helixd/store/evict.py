"""Retention SQL: measuring Tier 1 per session, dropping it, giving the pages back.

Runs synchronously on the store's thread (``Store.run``).  What is counted is what a delete
frees (``tests/test_eviction.py`` checks the two against SQLite's own page accounting):

* raw: ``length(data)`` of the session's raw blocks (the zstd bytes as stored; ``length``
  of a BLOB reads no content) plus ``RAW_ROW_OVERHEAD`` per block (row header, key, index
  entry, the unused tail of its last overflow page);
* events: the UTF-8 bytes of ``summary`` and ``body`` plus ``EVENT_ROW_OVERHEAD`` per row
  (the integer columns and the three index entries: ``UNIQUE (session_id, ekey)``,
  ``events_seq``, ``events_anchor``);
* the full-text index: the stored bytes of the FTS5 segments (``search_data``) shared out
  over its documents (``search_docs`` rows), plus ``INDEX_DOC_ROW_BYTES`` per document.  A
  session's share goes with its events (stage 2): its entries are deleted, the index
  optimized so the deleted terms are really gone (design spec §9), and its ``search_docs``
  rows dropped.  A thinking block's text is index-only (contentless FTS5 deletes an entry by
  its text): its entry cannot be deleted, and is left unreachable without its document row.

Raw blocks belong to a session through their file (``files.session_id``); blocks of files
that belong to no session are counted as ``other_bytes`` and never dropped.

Tier 2 (never dropped here): digests JSON plus ``USAGE_ROW_BYTES`` per usage fact,
``SESSION_ROW_BYTES`` per session and ``SIGNAL_ROW_BYTES`` per signal row.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import Any, Final

from helixd.core.retention import Eviction, SessionUsage
from helixd.store.faults import rollback
from helixd.store.search_write import SearchIndexWriter
from helixd.store.tier1 import (
    EVENT_ROW_OVERHEAD,
    INDEX_DOC_ROW_BYTES,
    RAW_ROW_OVERHEAD,
    _index_total,
    tier1_bytes,
)

USAGE_ROW_BYTES: Final = 96
SESSION_ROW_BYTES: Final = 320
# Signal rows (dbstat on the same store, issue #6): a tool call ~112 bytes, a file operation
# ~101, an error / retry / intervention ~40; a test run holds its command like a tool call.
SIGNAL_ROW_BYTES: Final = {
    "tool_calls": 112,
    "test_runs": 120,
    "file_operations": 101,
    "session_signals": 40,
}
# A hook_events row beyond its target text: time, agent, session id, kind, tool, call id
# (an estimate from the columns' sizes, not measured with dbstat).
HOOK_ROW_OVERHEAD: Final = 80
APPLY_BATCH: Final = 100

_RAW_BY_SESSION: Final = (
    f"SELECT f.session_id, sum(length(r.data) + {RAW_ROW_OVERHEAD}) FROM raw_blocks r"
    " JOIN files f ON f.id = r.file_id GROUP BY f.session_id"
)
_EVENTS_BY_SESSION: Final = (
    "SELECT session_id, sum(length(CAST(summary AS BLOB))"
    f" + coalesce(length(CAST(body AS BLOB)), 0) + {EVENT_ROW_OVERHEAD}) FROM events"
    " GROUP BY session_id"
)
_SESSIONS: Final = (
    "SELECT id, uid, analyzed_at, changed_at,"
    " coalesce(ended_at, started_at, ingested_at, discovered_at), evicted_at FROM sessions"
)


_DOCS_BY_SESSION: Final = "SELECT session_id, count(*) FROM search_docs GROUP BY session_id"


def measure(con: sqlite3.Connection) -> dict[str, Any]:
    """``{"rows": [SessionUsage], "other_bytes", "distilled_bytes", "index_bytes"}`` (the
    last is already in the rows and ``other_bytes``: the index's part of Tier 1)."""
    raw: dict[int | None, int] = {sid: int(n) for sid, n in con.execute(_RAW_BY_SESSION)}
    events = {int(sid): int(n) for sid, n in con.execute(_EVENTS_BY_SESSION)}
    docs = {int(sid): int(n) for sid, n in con.execute(_DOCS_BY_SESSION)}
    segments = _index_total(con)
    total_docs = sum(docs.values())
    shares = {sid: segments * n // total_docs for sid, n in docs.items()}
    index = {sid: shares[sid] + n * INDEX_DOC_ROW_BYTES for sid, n in docs.items()}
    rows = []
    for sid, uid, analyzed, changed, last, evicted in con.execute(_SESSIONS):
        rows.append(
            SessionUsage(
                id=sid,
                uid=uid,
                raw_bytes=raw.pop(sid, 0),
                event_bytes=events.get(sid, 0),
                analyzed_at=analyzed,
                changed_at=changed,
                last_activity_at=last,
                evicted_at=evicted,
                index_bytes=index.pop(sid, 0),
            )
        )
    # raw blocks of files without a session, the index shares of documents whose session
    # row is gone, and segments with no documents left (unreachable thinking entries)
    other = sum(raw.values()) + sum(index.values()) + segments - sum(shares.values())
    return {
        "rows": rows,
        "other_bytes": other,
        "distilled_bytes": distilled_bytes(con),
        "index_bytes": segments + total_docs * INDEX_DOC_ROW_BYTES,
    }


# The earliest last activity among the sessions the age backstop could still take
# (``select_evictions``' step 2): analyzed since their last change, and holding what its
# stage drops — raw blocks, or at stage 2 events or full-text documents too.  Sessions the
# backstop already emptied keep their old times and are not counted, so a store past the
# age once still takes the quick path afterwards (index probes, no per-session sums).
_OLDEST_CANDIDATE: Final = (
    "SELECT min(coalesce(ended_at, started_at, ingested_at, discovered_at, analyzed_at))"
    " FROM sessions s WHERE analyzed_at IS NOT NULL"
    " AND (changed_at IS NULL OR changed_at <= analyzed_at)"
    " AND (EXISTS (SELECT 1 FROM files f JOIN raw_blocks r ON r.file_id = f.id"
    " WHERE f.session_id = s.id) OR (? >= 2 AND (EXISTS (SELECT 1 FROM events e"
    " WHERE e.session_id = s.id) OR EXISTS (SELECT 1 FROM search_docs d"
    " WHERE d.session_id = s.id))))"
)


def bounds(con: sqlite3.Connection, backstop_stage: int) -> dict[str, Any]:
    """What ``helixd.core.retention.quick_plan`` decides from, without reading every event:
    ``tier1_bytes`` (the sum ``measure`` makes, from the running totals ``tier1_bytes``
    reads), ``index_bytes`` (its full-text index part, as in ``measure``), the earliest
    ``oldest_activity`` of the sessions the backstop could take at ``backstop_stage``
    (their backstop time, else ``analyzed_at``) and ``distilled_bytes``.  A few
    milliseconds where ``measure`` scans every event (0.2-0.35 s on the 1.3 GB bench
    store)."""
    raw, events, index = tier1_bytes(con)
    oldest = con.execute(_OLDEST_CANDIDATE, (backstop_stage,)).fetchone()[0]
    return {
        "tier1_bytes": raw + events + index,
        "index_bytes": index,
        "oldest_activity": None if oldest is None else int(oldest),
        "distilled_bytes": distilled_bytes(con),
    }


def distilled_bytes(con: sqlite3.Connection) -> int:
    row = con.execute(
        "SELECT (SELECT coalesce(sum(length(json)), 0) FROM digests),"
        " (SELECT count(*) FROM usage), (SELECT count(*) FROM sessions)"
    ).fetchone()
    signals = sum(
        int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]) * size
        for table, size in SIGNAL_ROW_BYTES.items()
    )
    hooks = int(
        con.execute(
            f"SELECT coalesce(sum(length(target) + {HOOK_ROW_OVERHEAD}), 0) FROM hook_events"
        ).fetchone()[0]
    )
    return (
        int(row[0])
        + int(row[1]) * USAGE_ROW_BYTES
        + int(row[2]) * SESSION_ROW_BYTES
        + signals
        + hooks
    )


def _still_analyzed(con: sqlite3.Connection, sid: int) -> bool:
    row = con.execute(
        "SELECT analyzed_at IS NOT NULL AND (changed_at IS NULL OR changed_at <= analyzed_at)"
        " FROM sessions WHERE id = ?",
        (sid,),
    ).fetchone()
    return bool(row and row[0])


def _drop(con: sqlite3.Connection, e: Eviction, now: int, loss_reason: str) -> bool:
    if e.pass_ != "overflow" and not _still_analyzed(con, e.session_id):
        return False  # new lines arrived since the plan was made: not analyzed any more
    files = "SELECT id FROM files WHERE session_id = ?"
    con.execute(f"DELETE FROM raw_blocks WHERE file_id IN ({files})", (e.session_id,))
    con.execute(f"DELETE FROM bad_lines WHERE file_id IN ({files})", (e.session_id,))
    con.execute("UPDATE files SET raw_bytes = 0 WHERE session_id = ?", (e.session_id,))
    if e.stage >= 2:
        SearchIndexWriter(con).forget_sessions([e.session_id])
        con.execute("DELETE FROM events WHERE session_id = ?", (e.session_id,))
    con.execute(
        "UPDATE sessions SET evicted_at = coalesce(evicted_at, ?),"
        " evict_stage = max(evict_stage, ?) WHERE id = ?",
        (now, e.stage, e.session_id),
    )
    con.execute(
        "INSERT INTO evictions (at, session_id, uid, pass, stage, bytes, analyzed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (now, e.session_id, e.uid, e.pass_, e.stage, e.bytes, e.analyzed_at),
    )
    if e.pass_ == "overflow":
        con.execute(
            "INSERT INTO data_loss (at, session_id, uid, bytes, reason) VALUES (?, ?, ?, ?, ?)",
            (now, e.session_id, e.uid, e.bytes, loss_reason),
        )
    return True


def apply(
    con: sqlite3.Connection, evictions: Sequence[Eviction], now: int, loss_reason: str
) -> list[Eviction]:
    """Drop what ``evictions`` name (in batches of transactions); returns those applied."""
    done: list[Eviction] = []
    for i in range(0, len(evictions), APPLY_BATCH):
        con.execute("BEGIN IMMEDIATE")
        try:
            done.extend(
                e for e in evictions[i : i + APPLY_BATCH] if _drop(con, e, now, loss_reason)
            )
            con.execute("COMMIT")
        except BaseException:
            rollback(con)
            raise
    if any(e.stage >= 2 for e in done):
        purge_index(con)
    return done


def purge_index(con: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment: FTS5 records a delete as a tombstone
    beside the old entry until its segments are merged, so without this the evicted terms
    would still be in the file (design spec §9)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute("INSERT INTO search (search) VALUES ('optimize')")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def file_bytes(path: str) -> int:
    """The store's size on disk: the database file plus its WAL."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.stat(path + suffix).st_size
        except OSError:
            pass
    return total


def auto_vacuum_mode(con: sqlite3.Connection) -> int:
    """0 none, 1 full, 2 incremental."""
    return int(con.execute("PRAGMA auto_vacuum").fetchone()[0])


def shrink(con: sqlite3.Connection) -> str:
    """Give freed pages back to the file system; returns what was done.

    * A store created before incremental auto-vacuum is converted once by a full ``VACUUM``
      (it rewrites the file: needs free disk for the live data, and a while).
    * When at least half the file is free, ``VACUUM`` too: it costs what is *left* (on the
      1 GB bench store, 0.45 s for 58 MB left) where ``incremental_vacuum`` costs what it
      has to move (10 s to move the pages behind 400 MB of holes), and it defragments.
    * Otherwise ``incremental_vacuum``: free pages are moved to the end and cut off.

    Then the WAL is checkpointed and truncated, so the file system sees the new size."""
    free = int(con.execute("PRAGMA freelist_count").fetchone()[0])
    pages = int(con.execute("PRAGMA page_count").fetchone()[0])
    incremental = auto_vacuum_mode(con) == 2
    done = "incremental_vacuum"
    if not incremental or free * 2 >= pages:
        try:
            if not incremental:
                con.execute("PRAGMA auto_vacuum = INCREMENTAL")
            con.execute("VACUUM")
            done = "vacuum" if incremental else "vacuum (converted to incremental auto-vacuum)"
        except sqlite3.OperationalError as exc:  # a statement of this connection in flight
            if not incremental:
                return f"vacuum deferred to the next pass ({exc})"
            done = f"incremental_vacuum (vacuum failed: {exc})"
    if done.startswith("incremental_vacuum"):
        # executescript steps the pragma to the end (a plain execute frees a single page).
        con.executescript("PRAGMA incremental_vacuum;")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return done


def freelist_bytes(con: sqlite3.Connection) -> int:
    pages = int(con.execute("PRAGMA freelist_count").fetchone()[0])
    return pages * int(con.execute("PRAGMA page_size").fetchone()[0])


def retention_log(con: sqlite3.Connection) -> dict[str, Any]:
    """Counts for ``status``: evictions and data-loss records."""
    ev = con.execute("SELECT count(*), coalesce(sum(bytes), 0), max(at) FROM evictions").fetchone()
    loss = con.execute(
        "SELECT count(*), coalesce(sum(bytes), 0), max(at) FROM data_loss"
    ).fetchone()
    return {
        "evictions": ev[0],
        "evicted_bytes": ev[1],
        "last_eviction_at": ev[2],
        "data_loss": loss[0],
        "data_loss_bytes": loss[1],
        "last_data_loss_at": loss[2],
    }

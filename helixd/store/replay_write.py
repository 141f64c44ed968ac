"""Re-normalization's write: one group of sessions rebuilt in one transaction.

The group's events, usage facts (the summary tables follow by trigger), index entries and
bad-line records are deleted and written again from batches parsed from the stored raw
lines (``helixd.ingest.renormalize``); the raw lines themselves stay.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from helixd.store.batch import Batch
from helixd.store.salvage import refused_value, write_batch_total
from helixd.store.writer import Writer


def replay(
    w: Writer,
    session_ids: Sequence[int],
    expect: Sequence[tuple[int, int, int, int]],
    batches: Sequence[Batch],
    now: int,
) -> bool:
    """``expect`` holds each file's ``(id, generation, offset, raw blocks)`` when its raw
    lines were read.  The group must still be what was read: if an ingest moved one of its
    files or added a file holding events of its sessions, or an eviction dropped raw lines
    meanwhile, nothing is written and False is returned (retry later)."""
    try:
        return w.transaction(lambda: _rebuild(w, session_ids, expect, batches, now, False))
    except Exception as exc:
        if not refused_value(exc):
            raise
    # the store refused a value: again, quarantining what it refuses (helixd/store/salvage.py)
    return w.transaction(lambda: _rebuild(w, session_ids, expect, batches, now, True))


def _rebuild(
    w: Writer,
    session_ids: Sequence[int],
    expect: Sequence[tuple[int, int, int, int]],
    batches: Sequence[Batch],
    now: int,
    salvage: bool,
) -> bool:
    if not _unchanged(w.con, session_ids, expect):
        return False  # (nothing written yet: committing the empty transaction is harmless)
    _clear(w, session_ids, [e[0] for e in expect])
    for batch in batches:
        if salvage:
            write_batch_total(w, batch, now)
        else:
            w.write_batch(batch, now)
    return True


def _unchanged(
    con: sqlite3.Connection, session_ids: Sequence[int], expect: Sequence[tuple[int, int, int, int]]
) -> bool:
    for file_id, generation, offset, blocks in expect:
        row = con.execute(
            "SELECT generation, offset, (SELECT count(*) FROM raw_blocks WHERE file_id = ?)"
            " FROM files WHERE id = ?",
            (file_id, file_id),
        ).fetchone()
        if row is None or tuple(int(v) for v in row) != (generation, offset, blocks):
            return False
    files = {e[0] for e in expect}
    for sid in session_ids:
        found = con.execute("SELECT evict_stage FROM sessions WHERE id = ?", (sid,)).fetchone()
        if found is None or int(found[0]) > 0:
            return False
        holders = con.execute(
            "SELECT DISTINCT file_id FROM events WHERE session_id = ? AND file_id IS NOT NULL"
            " UNION SELECT id FROM files WHERE session_id = ?",
            (sid, sid),
        )
        if any(int(f) not in files for (f,) in holders):
            return False
    return True


def _clear(w: Writer, session_ids: Sequence[int], file_ids: Sequence[int]) -> None:
    w.search.forget_sessions(session_ids)
    sids = [(i,) for i in session_ids]
    w.con.executemany("DELETE FROM events WHERE session_id = ?", sids)
    w.con.executemany("DELETE FROM usage WHERE session_id = ?", sids)
    w.con.executemany(
        "UPDATE sessions SET next_seq = 0, events = 0, messages = 0 WHERE id = ?", sids
    )
    fids = [(i,) for i in file_ids]
    w.con.executemany("DELETE FROM bad_lines WHERE file_id = ?", fids)
    w.con.executemany(
        "UPDATE files SET lines = 0, bad_lines = 0, unknown_records = 0 WHERE id = ?", fids
    )

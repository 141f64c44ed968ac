"""The write-ahead log copied back into the database off the writer's commit path.

SQLite's automatic checkpoint runs inside the commit that crosses ``wal_autocheckpoint``
pages: the daemon's writer would stall there, copying up to 32 MiB, while new appends wait
to become visible.  The daemon instead asks for a ``PASSIVE`` checkpoint from a connection
of its own, in a thread, about every two seconds while it has been writing (never at
rest): it copies what readers allow, never waits for a reader or the writer, and the
writer goes on committing meanwhile.  The automatic checkpoint stays as the backstop (when
readers hold the log back, the log still cannot grow past it).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final

MIN_BYTES: Final = 4 << 20  # a log smaller than this is left to grow


def checkpoint(db: Path, min_bytes: int = MIN_BYTES, busy_ms: int = 1000) -> tuple[int, int] | None:
    """(in a thread) A passive checkpoint of ``db`` when its log file holds at least
    ``min_bytes``: ``(frames in the log, frames copied back)``, or None when there was
    nothing to do.  Never creates a file at the path (``mode=rw``)."""
    try:
        size = os.stat(f"{db}-wal").st_size
    except OSError:
        return None
    if size < min_bytes:
        return None
    con = sqlite3.connect(
        f"file:{db}?mode=rw", uri=True, isolation_level=None, timeout=busy_ms / 1000
    )
    try:
        row = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        con.close()
    return (int(row[1]), int(row[2])) if row else None

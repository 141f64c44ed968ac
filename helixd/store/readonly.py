"""Read-only connections for the read layer (``helixd/query/``): never creates the file, never
writes, waits for a writer's lock up to ``BUSY_TIMEOUT_MS``.  Light on purpose: the standard
library only, so that a read command costs the interpreter, sqlite3 and its query (not even
``pathlib`` or ``typing`` at run time: the status line opens its store here)."""

from __future__ import annotations

import os
import sqlite3

TYPE_CHECKING = False  # not `typing`: the status line loads this module

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Final

BUSY_TIMEOUT_MS: Final = 30_000


class NoStore(RuntimeError):
    """No usable store at the path; the message says why and what to do."""


def open_reader(path: Path | str, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A read-only connection to the store at ``path``.  Usable from any one thread at a
    time (``check_same_thread`` off: the web server hands it to worker threads)."""
    if not os.path.exists(path):
        raise NoStore(f"no store at {path} (run `helixctl ingest` first)")
    try:
        con = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        con.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        con.execute("SELECT 1 FROM usage_hours LIMIT 1")
    except sqlite3.Error as exc:
        raise NoStore(
            f"cannot read store {path}: {exc} (run `helixctl ingest` to upgrade)"
        ) from exc
    return con


def ping(con: sqlite3.Connection) -> None:
    """One round trip to the store (a health check); raises what SQLite raises."""
    con.execute("SELECT 1 FROM migrations LIMIT 1").fetchone()


_MAGIC: Final = b"SQLite format 3\x00"


def damaged_header(path: Path | str) -> bool:
    """The file at ``path`` is not empty and does not start as an SQLite database does
    (SQLite may still answer from a connection's cache: a reader checks first)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_MAGIC))
    except OSError:
        return False
    return bool(head) and head != _MAGIC

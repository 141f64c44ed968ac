"""Cheap looks at the store file that say whether it can be used, without using it.

``condition`` costs a few ``stat`` calls and a 16-byte read: ``Store.open`` runs it before
connecting, and the daemon on every status tick (a store deleted, replaced, made read-only
or overwritten under it is then noticed within seconds).  ``integrity`` (``PRAGMA
quick_check`` stopped after a time budget) and ``locked`` are for ``helixctl doctor``.

Never open and close the database file in a process that has a connection to it: closing
any descriptor of a file drops every POSIX lock the process holds on it, SQLite's included
(another process would then delete the WAL the connection is still writing).  A process
with an open ``Store`` reads the header through the descriptor the store keeps open for
that (``Store.check``); only a process without a connection reads it by path.

Standard library only, like ``faults``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Final

from helixd.store.faults import SQLITE_MAGIC, StoreFault, classify, writable

Identity = tuple[int, int]
QUICK_CHECK_SECONDS: Final = 2.0


def identity(path: Path) -> Identity | None:
    """``(st_dev, st_ino)`` of the file at ``path``, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def read_head(path: Path) -> bytes | None:
    """The first bytes of the file (None: unreadable).  Only where no connection to it is
    open in this process (see the module docstring)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC))
    except OSError:
        return None


def condition(
    path: Path, *, writing: bool, opened: Identity | None = None, head: bytes | None = None
) -> StoreFault | None:
    """What the file system alone says about the store at ``path``.  ``writing``: the
    caller means to write (a missing store is then created, if its folder allows).
    ``opened``: the identity of the file the caller has open (detects deletion and
    replacement under it); the caller then passes ``head``, read through its own
    descriptor, and the file is not opened here."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if opened is not None:
            return StoreFault("deleted", path, "no file at the path")
        if not writing:
            return StoreFault("missing", path)
        folder = _nearest_existing(path.parent)
        if not writable(folder):
            return StoreFault("read_only", path, f"cannot create it in {folder}")
        return None
    except OSError as exc:
        return classify(exc, path) or StoreFault("io", path, str(exc))
    if opened is not None and (st.st_dev, st.st_ino) != opened:
        return StoreFault("replaced", path, "another file is at the path")
    if not stat.S_ISREG(st.st_mode):
        return StoreFault("corrupt", path, "not a regular file")
    if opened is None:
        head = read_head(path)
    if st.st_size and head and head != SQLITE_MAGIC:
        return StoreFault("corrupt", path, "not an SQLite database: its header is damaged")
    if writing:
        for target in (path, path.parent):
            if not writable(target):
                return StoreFault("read_only", path, f"{target} is not writable")
    return None


def _nearest_existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def integrity(path: Path, seconds: float = QUICK_CHECK_SECONDS) -> tuple[str, str]:
    """``("ok" | "corrupt" | "unfinished" | "fault", detail)``: ``PRAGMA quick_check`` on a
    read-only connection, stopped after ``seconds`` (a big store is then reported as checked
    in part, never as broken)."""
    deadline = time.monotonic() + seconds
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=1)
    except sqlite3.Error as exc:
        fault = classify(exc, path)
        return ("fault", str(fault) if fault else str(exc))
    try:
        con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            rows = con.execute("PRAGMA quick_check(5)").fetchall()
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                return ("unfinished", f"not finished in {seconds:g} s; no error in the part read")
            fault = classify(exc, path)
            return ("fault", str(fault) if fault else str(exc))
        except sqlite3.DatabaseError as exc:
            return ("corrupt", str(exc))
        problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
        if problems:
            return ("corrupt", "; ".join(problems)[:300])
        try:
            con.execute("SELECT 1 FROM migrations LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            return ("corrupt", f"not a Helix store ({exc})")
        return ("ok", "quick_check ok")
    finally:
        con.close()


def locked(path: Path, wait_seconds: float = 0.5) -> bool:
    """Another connection holds the write lock for longer than ``wait_seconds``.  Takes
    the lock itself for an instant and writes nothing."""
    try:  # mode=rw: never creates the file
        con = sqlite3.connect(
            f"file:{path}?mode=rw", uri=True, isolation_level=None, timeout=wait_seconds
        )
    except sqlite3.Error:
        return False
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
    except sqlite3.Error as exc:
        fault = classify(exc, path)
        return fault is not None and fault.kind == "locked"
    finally:
        con.close()
    return False

"""A source's identity and size from one ``lstat`` (two for an agent's SQLite database and
its ``-wal``): what decides whether there is anything new to read, without opening it.

Light on purpose: ``helixctl ingest``'s first step (``helixd.ingest.plan``) stats every
file under the roots with this alone, before anything that reads, redacts or compresses is
imported.
"""

from __future__ import annotations

import os
import stat as stat_mod
from typing import NamedTuple

from helixd.sources.gate import NOT_REGULAR, SYMLINK, Refused, kind_of, refusal


class FileStat(NamedTuple):
    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int


def stat_file(path: str) -> FileStat | None:
    """``lstat`` a source: None when it is gone; ``Refused`` when it is not a regular file
    (a link, a FIFO, a directory…) or cannot be looked at."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise refusal(path, exc) from None
    if not stat_mod.S_ISREG(st.st_mode):
        reason = SYMLINK if stat_mod.S_ISLNK(st.st_mode) else NOT_REGULAR
        raise Refused(path, reason, kind_of(st.st_mode))
    return FileStat(path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def wal_path(path: str) -> str:
    return path + "-wal"


def stat_db(path: str) -> FileStat | None:
    """The database's identity (device, inode) with the size and mtime of the database and
    its ``-wal`` together, so that a write that only reaches the WAL is a change; None when
    the database is gone, ``Refused`` when it is not a regular file."""
    st = stat_file(path)
    if st is None:
        return None
    try:
        wal = os.lstat(wal_path(path))
    except (FileNotFoundError, NotADirectoryError):
        return st
    except OSError as exc:
        raise refusal(wal_path(path), exc) from None
    if stat_mod.S_ISLNK(wal.st_mode):
        raise Refused(wal_path(path), SYMLINK)
    if not stat_mod.S_ISREG(wal.st_mode):
        raise Refused(wal_path(path), NOT_REGULAR, kind_of(wal.st_mode))
    if wal.st_size == 0:  # emptied by a checkpoint (the database file changed then) or
        return st  # just created by an open: holds nothing
    return FileStat(path, st.dev, st.ino, st.size + wal.st_size, max(st.mtime_ns, wal.st_mtime_ns))

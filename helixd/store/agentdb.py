"""The SQL Helix runs on an *agent's* SQLite database (never on its own store): a
read-only connection holding one read transaction, and the select of a table's rows from a
watermark on.  ``helixd/sources/sqlite.py`` decides what is new and makes row lines of it;
the SQL lives here, with the rest of Helix's SQL.

Never write, lock or checkpoint an agent's database: ``mode=ro`` (the ``-wal`` is seen, so
a database whose data lives only in its WAL is read whole) and ``query_only``; the read
transaction never blocks the agent's writer in WAL mode.  SQLite may create the ``-shm``
index beside a WAL database (the agent does the same on its next open); where it cannot (a
read-only directory), the database and its WAL are copied to a private temporary directory
and read there.  A WAL-mode database at rest (no ``-wal``: the agent is not running) is read
``immutable`` and nothing at all is created beside it."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import quote

BUSY_MS: Final = 200

Identity = tuple[int, int]  # (device, inode) of the file the path gate admitted


class Swapped(Exception):
    """The path no longer names the file the gate admitted (replaced by a link or another
    file between the check and the open): nothing read from it is used."""


@contextlib.contextmanager
def snapshot(path: str, identity: Identity | None = None) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path`` inside one read transaction (one
    consistent view of every table), closed on exit.

    SQLite opens by name and follows links, so with ``identity`` (the file the path gate
    opened without following links) the name is checked again once SQLite holds the file
    open: a link or another file swapped in between raises ``Swapped`` before any row is
    read."""
    try:
        conn = _open_readonly(path, immutable=at_rest(path))
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or os.path.lexists(path + "-journal"):
            # The agent is writing (a hot journal would not be in a copy): read it next time.
            raise
        with tempfile.TemporaryDirectory(prefix="helix-db-") as tmp:
            conn = _open_readonly(private_copy(path, tmp, identity))
            with _transaction(conn):
                yield conn
        return
    if identity is not None and not _still(path, identity):
        conn.close()
        raise Swapped(path)
    with _transaction(conn):
        yield conn


def _still(path: str, identity: Identity) -> bool:
    """``path`` names, without a link, the regular file ``identity``."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == identity


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    try:
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()


def private_copy(path: str, tmp: str, identity: Identity | None = None) -> str:
    """A copy of the database and its WAL in ``tmp`` (nothing is created beside them).  Both
    are opened without following a link; with ``identity`` the database must be that file."""
    copy = os.path.join(tmp, "copy.db")
    _copy_nofollow(path, copy, identity)
    with contextlib.suppress(FileNotFoundError):
        _copy_nofollow(path + "-wal", copy + "-wal", None)
    return copy


def _copy_nofollow(src: str, dst: str, identity: Identity | None) -> None:
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (
            identity is not None and (st.st_dev, st.st_ino) != identity
        ):
            raise Swapped(src)
        with open(dst, "wb") as out:
            shutil.copyfileobj(f, out)


def at_rest(path: str) -> bool:
    """A WAL-mode database (header byte 18 is 2) with no ``-wal`` file: no connection of the
    agent is open (the last one to close checkpoints and removes it), every row is in the
    database file.  It is read ``immutable``, so that reading creates no ``-wal`` or
    ``-shm`` beside it."""
    if os.path.lexists(path + "-wal"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head[:16] == b"SQLite format 3\x00" and head[18] == 2


def _open_readonly(path: str, immutable: bool = False) -> sqlite3.Connection:
    """One reader at a time, but the ingest's read-ahead may resume it on any worker thread
    (``check_same_thread`` off)."""
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    conn = sqlite3.connect(
        f"file:{quote(path)}?{flags}",
        uri=True,
        timeout=BUSY_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.execute("PRAGMA query_only = ON")
    # An agent's text may hold bytes that are not UTF-8: replaced, never a reason to stop.
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    return conn


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def rows(
    conn: sqlite3.Connection, table: str, where: str, order: str | None, since: Any
) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` matching ``where`` (written by an adapter, never by input) in
    ``(order, rowid)`` order from ``since`` on (None: all; ``order`` None: rowid order;
    ``order`` ``"rowid"``: the rowid is in each row, as the column ``rowid``).  A
    table or column this version of the agent does not have gives none."""
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    cond = f"({where})" if where else "1"
    name = _ident(table)
    # ``SELECT *`` leaves the rowid out: a table watermarked by it gets it as a column
    cols = 'rowid AS "rowid", *' if order == "rowid" else "*"
    try:
        if order is None:
            cur.execute(f"SELECT * FROM {name} WHERE {cond} ORDER BY rowid")
        elif since is None:
            cur.execute(f"SELECT {cols} FROM {name} WHERE {cond} ORDER BY {_ident(order)}, rowid")
        else:
            col = _ident(order)
            cur.execute(
                f"SELECT {cols} FROM {name} WHERE {cond} AND {col} >= ? ORDER BY {col}, rowid",
                (since,),
            )
    except sqlite3.OperationalError:
        return
    for row in cur:
        yield dict(row)

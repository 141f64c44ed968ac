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
import tempfile
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import quote

BUSY_MS: Final = 200


@contextlib.contextmanager
def snapshot(path: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path`` inside one read transaction (one
    consistent view of every table), closed on exit."""
    try:
        conn = _open_readonly(path, immutable=at_rest(path))
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or os.path.lexists(path + "-journal"):
            # The agent is writing (a hot journal would not be in a copy): read it next time.
            raise
        with tempfile.TemporaryDirectory(prefix="helix-db-") as tmp:
            conn = _open_readonly(private_copy(path, tmp))
            with _transaction(conn):
                yield conn
        return
    with _transaction(conn):
        yield conn


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


def private_copy(path: str, tmp: str) -> str:
    """A copy of the database and its WAL in ``tmp`` (nothing is created beside them)."""
    copy = os.path.join(tmp, "copy.db")
    shutil.copyfile(path, copy)
    with contextlib.suppress(FileNotFoundError):
        shutil.copyfile(path + "-wal", copy + "-wal")
    return copy


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
    ``(order, rowid)`` order from ``since`` on (None: all; ``order`` None: rowid order).  A
    table or column this version of the agent does not have gives none."""
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    cond = f"({where})" if where else "1"
    name = _ident(table)
    try:
        if order is None:
            cur.execute(f"SELECT * FROM {name} WHERE {cond} ORDER BY rowid")
        elif since is None:
            cur.execute(f"SELECT * FROM {name} WHERE {cond} ORDER BY {_ident(order)}, rowid")
        else:
            col = _ident(order)
            cur.execute(
                f"SELECT * FROM {name} WHERE {cond} AND {col} >= ? ORDER BY {col}, rowid", (since,)
            )
    except sqlite3.OperationalError:
        return
    for row in cur:
        yield dict(row)

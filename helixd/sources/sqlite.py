"""Reading an agent's SQLite database as a stream of row lines (a source kind beside
``tailer``; docs/adapters.md, "Source kinds").

An adapter with ``tables`` stays pure: it receives the new rows as JSON lines
``{"table": <name>, "row": {<column>: <value>, …}}\\n`` and parses them like any line
file.  These lines are what Helix keeps as the raw tier of a database (redacted like
file bytes), so re-normalization and ``helixctl show`` work on them unchanged.  Their
offsets are *virtual*: the position in the stream of every row line read from this
database so far (the cursor's ``offset``), not a position in the database file.

Rules (docs/cursor-and-identity.md, "SQLite databases"):

* **Never write, lock or checkpoint an agent's database**: the rows come from
  ``helixd/store/agentdb.py`` (a ``mode=ro``, ``query_only`` connection that sees the WAL,
  all tables in one read transaction); this module only decides what is new.
* **A watermark per table**, saved in the cursor with the records in one transaction:
  ``(last order value, checksums of the rows at that value)`` — rows are read in
  ``(order, rowid)`` order from the last value on, and those at the last value already
  read are skipped by checksum, so a row updated in place (``updated_at`` moves) is read
  again and nothing is read twice.  A key/value table (``order=None``) keeps one checksum
  per key instead.
* **Change detection by stat**: a database is unchanged when the database file and its
  ``-wal`` keep their size, mtime and inode (``stat_db``); nothing is opened then.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from helixd.adapters.base import Table
from helixd.sources.filestat import stat_db as stat_db
from helixd.sources.filestat import wal_path as wal_path
from helixd.sources.tailer import Piece

MARKS_KEY: Final = "~rows"  # the cursor state's entry for the watermarks (not the adapter's)
EDGE_MAX: Final = 10_000  # checksums kept for rows sharing the last order value

# (table, where, order, since) -> the table's rows from ``since`` on (helixd.store.agentdb)
RowsFn = Callable[[str, str, str | None, Any], Iterable[Mapping[str, Any]]]


def _value(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def row_line(table: str, row: Mapping[str, Any]) -> bytes:
    """The raw line of one row, as the adapter receives it and the raw tier keeps it."""
    body = {k: _value(v) for k, v in row.items()}
    return orjson.dumps({"table": table, "row": body}) + b"\n"


def read_rows(
    rows: RowsFn, tables: Sequence[Table], marks: Mapping[str, Any], offset: int, chunk: int
) -> Iterator[Piece]:
    """The row lines new since ``marks``, in pieces of about ``chunk`` bytes; the last piece
    has ``at_eof`` (and may be empty: nothing new, the marks unchanged).  ``rows`` reads a
    table (``helixd.store.agentdb.rows`` bound to one snapshot of the database)."""
    live: dict[str, _Mark] = {t.name: _Mark.load(t, marks.get(t.name)) for t in tables}
    kept = {k: v for k, v in marks.items() if k not in live}  # a table no longer listed
    buf: list[bytes] = []
    size = 0
    pos = offset

    def snapshot() -> dict[str, Any]:
        return {**kept, **{name: m.dump() for name, m in live.items() if not m.empty()}}

    for table in tables:
        for line in _table_rows(rows, table, live[table.name]):
            buf.append(line)
            size += len(line)
            if size >= chunk:
                data = b"".join(buf)
                yield Piece(pos, data, False, marks=snapshot())
                pos += len(data)
                buf, size = [], 0
    yield Piece(pos, b"".join(buf), True, marks=snapshot())


@dataclass(slots=True)
class _Mark:
    """One table's watermark while it is read: the last order value and the checksums of
    the rows at it, or (``order=None``) a checksum per key."""

    last: Any = None
    edge: set[int] = field(default_factory=set)
    keys: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, table: Table, saved: Any) -> _Mark:
        if table.order is None:
            keys = saved if isinstance(saved, dict) else {}
            return cls(keys={str(k): v for k, v in keys.items() if isinstance(v, int)})
        if isinstance(saved, list) and len(saved) == 2 and isinstance(saved[1], list):
            return cls(last=saved[0], edge={c for c in saved[1] if isinstance(c, int)})
        return cls()

    def empty(self) -> bool:
        return self.last is None and not self.edge and not self.keys

    def dump(self) -> Any:
        return dict(self.keys) if self.keys else [self.last, sorted(self.edge)]


def _table_rows(rows: RowsFn, table: Table, mark: _Mark) -> Iterator[bytes]:
    """The line of each new row of ``table``, moving ``mark`` past it."""
    for rec in rows(table.name, table.where, table.order, mark.last if table.order else None):
        line = row_line(table.name, rec)
        crc = zlib.crc32(line)
        if table.order is None:
            key = str(_value(rec.get(table.key, "")))
            if mark.keys.get(key) == crc:
                continue
            mark.keys[key] = crc
        else:
            value = rec.get(table.order)
            if value == mark.last and mark.last is not None:
                if crc in mark.edge:
                    continue
                if len(mark.edge) < EDGE_MAX:
                    mark.edge.add(crc)
            else:
                mark.last, mark.edge = value, {crc}
        yield line

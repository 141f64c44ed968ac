"""Writes total: a batch the store refuses because of a value is stored without the records
that hold the value, and their lines become bad lines (their bytes stay in the batch's raw
block, like every other line's).

``Writer.commit_many`` first writes its batches without savepoints (they would make SQLite
journal every page twice); should that fail on a value, the transaction is rolled back and
written again batch by batch through ``write_batch_total``, which writes a batch inside a
savepoint.  When SQLite, or the sqlite3 module
binding a parameter, refuses a value (an integer beyond 64 bits, text that is not UTF-8, a
constraint, a type it cannot store), the savepoint is rolled back and the batch is written
again in parts: the file's cursor first (a failure there is no record's and propagates),
the session facts (refused, the sessions keep their identities only and a zero-length bad
line at the batch's start says so), then the records grouped by the line they came from,
halving: a group the store refuses is split until the lines holding the refused values are
found.  Those become ``BadLine``s naming the store's reason; everything else, the raw bytes
and the cursor commit with the transaction, so the file goes on.

A store fault is not a value: ``sqlite3.OperationalError`` (disk full, locked, read-only,
I/O) and ``DatabaseError`` (corrupt) propagate as they are.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from helixd.core.records import BadLine, SessionInfo, UsageFact
from helixd.store.batch import ROW_OFFSET, Batch, Prepared, batch_owner, prepare_event, record_uids

if TYPE_CHECKING:
    from helixd.store.writer import Writer

REASON_CHARS: Final = 300


def refused_value(exc: BaseException) -> bool:
    """Whether ``exc`` is the store refusing a value of a record (and not the store
    failing: those are ``OperationalError`` and the other ``DatabaseError``s)."""
    if isinstance(exc, sqlite3.InterfaceError | sqlite3.ProgrammingError):
        return "binding parameter" in str(exc)  # a value of a type SQLite cannot hold
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.DataError):
        return True
    if isinstance(exc, sqlite3.Error):
        return False
    return isinstance(exc, OverflowError | TypeError | ValueError)  # UnicodeError included


def why(exc: BaseException) -> str:
    text = f"refused by the store: {type(exc).__name__}: {exc}"
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def attempt(w: Writer, fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
    """``(True, fn(*args))``, or ``(False, exc)`` with everything ``fn`` wrote undone when the
    store refused a value; any other failure propagates (the caller's transaction is then
    rolled back whole)."""
    w.search.flush()  # what is pending before the savepoint must survive its rollback
    w.con.execute("SAVEPOINT salvage")
    next_id = w.next_id
    try:
        result = fn(*args)
    except Exception as exc:
        if not refused_value(exc):
            raise
        w.con.execute("ROLLBACK TO salvage")
        w.con.execute("RELEASE salvage")
        w.search.discard()  # full-text entries of the rolled-back rows
        w.next_id = next_id  # event ids taken inside the savepoint are free again
        w.usage.forget()  # session ids created inside it too
        w.parents.clear()
        return False, exc
    w.con.execute("RELEASE salvage")
    return True, result


def write_batch_total(w: Writer, batch: Batch, now: int) -> int:
    """``Writer.write_batch`` that quarantines the records the store refuses; returns the
    file's id."""
    ok, result = attempt(w, w.write_batch, batch, now)
    if ok:
        return int(result)
    return _salvage(w, batch, now, result)  # the bad lines' reasons say what was refused


@dataclass(slots=True)
class _Line:
    """The records of one source line (``offset`` None: facts tied to no line)."""

    offset: int | None
    rows: list[Prepared] = field(default_factory=list)
    usage: list[UsageFact] = field(default_factory=list)
    refused: Exception | None = None


def _lines(batch: Batch) -> list[_Line]:
    """The batch's records grouped by line, in the order the lines first appear."""
    by_offset: dict[int | None, _Line] = {}
    for offset, row, failed in _event_rows(batch):
        line = by_offset.get(offset) or by_offset.setdefault(offset, _Line(offset))
        if row is None:
            line.refused = failed
            continue
        line.rows.append(row)
    for fact in batch.parsed.usage:
        line = by_offset.get(fact.offset) or by_offset.setdefault(fact.offset, _Line(fact.offset))
        line.usage.append(fact)
    return list(by_offset.values())


def _event_rows(batch: Batch) -> Iterator[tuple[int, Prepared | None, Exception | None]]:
    """``(line offset, row, why no row)`` of each event: the rows prepared already (a parse
    worker sends those without the events), else each event prepared on its own."""
    if batch.rows is not None:
        for row in batch.rows:
            yield row[4][ROW_OFFSET], row, None
        return
    for ev in batch.parsed.events:
        try:
            yield ev.offset, prepare_event(ev), None
        except Exception as exc:  # an event no row can be made of
            yield ev.offset, None, exc


def _salvage(w: Writer, batch: Batch, now: int, first: Exception) -> int:
    c, p = batch.cursor, batch.parsed
    file_id = w.upsert_file(c, now, batch.replay)
    made = [row for _, row, _ in _event_rows(batch) if row is not None]
    own_uid = batch_owner(made, p.usage)
    uids = record_uids(made, p.usage)
    bad = list(p.bad)
    ok, result = attempt(w, w.upsert_sessions, p.sessions, uids, c, own_uid, now)
    if ok:
        ids: dict[str, int] = result
    else:
        identities = [SessionInfo(i.uid, i.agent, i.native_id) for i in p.sessions]
        ids = w.upsert_sessions(identities, uids, c, own_uid, now)
        bad.append(BadLine(batch.start, 0, "session facts " + why(result)))
    lines = _lines(batch)
    refused: list[tuple[_Line, Exception | None]] = [
        (line, line.refused) for line in lines if line.refused is not None
    ]
    writable = [line for line in lines if line.refused is None]
    refused.extend(_write_lines(w, writable, ids, file_id, now, batch.replace_events))
    w.refused_lines += len(refused)
    for line, exc in refused:
        at = line.offset if line.offset is not None else batch.start
        length = batch.line_length(at) if line.offset is not None else 0
        bad.append(BadLine(at, length, why(exc or first)))
    w.write_file_part(batch, file_id, ids.get(own_uid) if own_uid else None, bad, now)
    return file_id


def _write_lines(
    w: Writer, lines: list[_Line], ids: dict[str, int], file_id: int, now: int, replace: bool
) -> list[tuple[_Line, Exception | None]]:
    """Write the records of ``lines``, halving what the store refuses; the lines refused."""
    if not lines:
        return []
    rows = [row for line in lines for row in line.rows]
    usage = [fact for line in lines for fact in line.usage]
    ok, exc = attempt(w, w.write_records, rows, usage, ids, file_id, now, replace)
    if ok:
        return []
    if len(lines) == 1:
        return [(lines[0], exc)]
    mid = len(lines) // 2
    return _write_lines(w, lines[:mid], ids, file_id, now, replace) + _write_lines(
        w, lines[mid:], ids, file_id, now, replace
    )

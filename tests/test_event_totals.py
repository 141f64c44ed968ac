"""m027: the events' running totals (``event_totals``, m014) gain the rows the writer inserts
from the writer itself, one statement per session's rows (``Writer.count_events``), instead
of an insert trigger run once per event.  The totals equal a scan of the events whatever
the text (ASCII, multibyte, no body), when some rows of a batch are ignored (a key stored
already: counted from the stored rows), across the migration from a store built at m026,
and a rolled-back savepoint takes its count back with its rows."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from helixd.store.writer import Writer
from tests.migration_helpers import migrations_before, open_store

_SCAN = (
    "SELECT count(*), coalesce(sum(length(CAST(summary AS BLOB))"
    " + coalesce(length(CAST(body AS BLOB)), 0)), 0) FROM events"
)
_KEPT = "SELECT event_rows, text_bytes FROM event_totals WHERE id = 1"
TEXTS = ("plain ascii", "café – naïve €", "日本語のテキスト", "emoji 🎉 and \x00 nul")


def _row(uid: str, key: int, summary: str, body: str | None) -> tuple[Any, ...]:
    """A prepared event row (``helixd.store.batch.Prepared``) of kind ``user_msg``."""
    content: tuple[Any, ...] = (1_700_000_000_000 + key, "user_msg", "user", None, None)
    content += (summary, body, 0, 0, 0, 0, None, 0, 0, None, None, None, None, None)
    return (uid, key, None, None, content, "", "user_msg", content[0])


def _write(con: sqlite3.Connection, uid: str, keys: range, fresh_lookup: bool = False) -> None:
    """The writer's records for session ``uid``: events with ``keys``, in one transaction.
    ``fresh_lookup``: the session's ``next_seq`` is zeroed first, so the writer takes it for
    a session without events and does not look its keys up (its INSERT OR IGNORE meets
    them)."""
    w = Writer(con)

    def work() -> None:
        con.execute(
            "INSERT OR IGNORE INTO sessions (uid, agent, native_id, discovered_at)"
            " VALUES (?, 'claude', ?, 0)",
            (uid, uid),
        )
        if fresh_lookup:
            con.execute("UPDATE sessions SET next_seq = 0 WHERE uid = ?", (uid,))
        sid = con.execute("SELECT id FROM sessions WHERE uid = ?", (uid,)).fetchone()[0]
        rows = [
            _row(uid, k, TEXTS[k % len(TEXTS)], TEXTS[k % 3] * k if k % 2 else None) for k in keys
        ]
        w.write_records(rows, [], {uid: sid}, 1, 0, False)

    w.transaction(work)


def _check(db: Path) -> tuple[int, int]:
    con = sqlite3.connect(db)
    try:
        rows, size = con.execute(_KEPT).fetchone()
        assert (rows, size) == con.execute(_SCAN).fetchone()
        return int(rows), int(size)
    finally:
        con.close()


def _connect(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


def test_the_writer_keeps_the_event_totals(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    open_store(db)
    con = _connect(db)
    try:
        assert con.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'event_totals_insert'"
        ).fetchone() == (0,)
        _write(con, "a", range(1, 9))
        _write(con, "b", range(1, 5))
        assert _check(db)[0] == 12
        # keys 5..8 of "a" stored already: ignored, only 9..11 count (from the stored rows)
        _write(con, "a", range(5, 12), fresh_lookup=True)
        assert _check(db)[0] == 15
        # a savepoint rolled back takes its rows and their count
        con.execute("BEGIN IMMEDIATE")
        con.execute("SAVEPOINT line")
        sid = con.execute("SELECT id FROM sessions WHERE uid = 'b'").fetchone()[0]
        Writer(con).write_records([_row("b", 20, "gone", "gone")], [], {"b": sid}, 1, 0, False)
        con.execute("ROLLBACK TO line")
        con.execute("RELEASE line")
        con.execute("COMMIT")
        assert _check(db)[0] == 15
    finally:
        con.close()


def test_a_store_built_at_m026_keeps_its_totals_through_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with migrations_before("m027_event_totals_by_writer"):
        open_store(db)
    con = _connect(db)
    try:  # events an older Helix wrote: m014's insert trigger counted them
        con.execute(
            "INSERT INTO events (id, session_id, seq, ekey, kind, summary, body)"
            " VALUES (1, 99, 0, 1, 'user_msg', 'déjà', NULL), (2, 99, 1, 2, 'user_msg', 'a', 'bc')"
        )
    finally:
        con.close()
    assert _check(db) == (2, 9)
    open_store(db)  # m027
    con = _connect(db)
    try:
        _write(con, "a", range(1, 7))
    finally:
        con.close()
    assert _check(db)[0] == 8


def test_events_are_inserted_by_the_writers_one_statement_only() -> None:
    """The insert trigger is gone (m027): the totals stay exact only while every insert of an
    event goes through ``INSERT_EVENT``, whose callers add what they inserted
    (``Writer.count_events``).  An ``INSERT … INTO events`` anywhere else fails here."""
    package = Path(__file__).resolve().parent.parent / "helixd"
    pattern = re.compile(r"\b(?:INSERT|REPLACE)(?:\s+OR\s+[A-Z]+)?\s+INTO\s+events\b")
    found = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8")) and "pg" not in path.parts
    )
    assert found == ["store/write_sql.py"]

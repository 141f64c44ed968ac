"""The full-text index's pending entries: their ``search_docs`` rows are written with their
text at the end of the writer's transaction (one statement per transaction, not one per
file), and a removal inside the same transaction still finds them."""

from __future__ import annotations

import sqlite3
from typing import Any

from helixd.store.database import Store
from helixd.store.search_write import SearchIndexWriter

EVENT = (
    "INSERT INTO events (id, session_id, seq, ekey, kind, summary, body)"
    " VALUES (101, 7, 0, 55, 'user_msg', 'hello world', 'hello world')"
)


def _in_transaction(con: sqlite3.Connection, work: Any) -> Any:
    con.execute("BEGIN IMMEDIATE")
    try:
        return work(SearchIndexWriter(con))
    finally:
        con.execute("ROLLBACK")


async def test_an_entrys_search_docs_row_waits_for_the_flush_with_its_text(store: Store) -> None:
    def work(w: SearchIndexWriter) -> tuple[Any, ...]:
        w.con.execute(EVENT)
        w.index(7, 0, [(0, "hello world", "user_msg", 5)], {}, {0: 101})
        before = w.con.execute("SELECT count(*) FROM search_docs").fetchone()[0]
        w.flush()
        docs = w.con.execute("SELECT id, session_id, kind, ts FROM search_docs").fetchall()
        hits = w.con.execute("SELECT rowid FROM search WHERE search MATCH 'hello'").fetchall()
        w.index(7, 1, [(1, "other words", "user_msg", 6)], {}, {1: 102})
        w.discard()  # rolled back: neither its row nor its text is written
        w.flush()
        rows = w.con.execute("SELECT count(*) FROM search_docs").fetchone()[0]
        return before, docs, hits, rows

    before, docs, hits, rows = await store.call(_in_transaction, work)
    assert before == 0
    assert docs == [(101, 7, "user_msg", 5)]
    assert hits == [(101,)]
    assert rows == 1


async def test_forgetting_a_session_removes_its_pending_entries_too(store: Store) -> None:
    def work(w: SearchIndexWriter) -> tuple[Any, ...]:
        w.con.execute(EVENT)
        w.index(7, 0, [(0, "hello world", "user_msg", 5)], {}, {0: 101})
        w.forget_sessions([7])
        w.flush()
        docs = w.con.execute("SELECT count(*) FROM search_docs").fetchone()[0]
        hits = w.con.execute("SELECT rowid FROM search WHERE search MATCH 'hello'").fetchall()
        return docs, hits

    assert await store.call(_in_transaction, work) == (0, [])

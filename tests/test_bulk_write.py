"""The writer's bulk path (issue 12, third pass): what it writes per transaction rather than
per row, on a real store, with the answers exactly those of a row-by-row write."""

from __future__ import annotations

import sqlite3

from helixd.core.records import Cursor, Event, Parsed, SessionInfo, UsageFact
from helixd.store.database import Batch, Store

TS = 1767225600000


def _batch(
    sid: str, path: str, words: list[str], ino: int, usage: list[UsageFact] | None = None
) -> Batch:
    raw = b"".join(b'{"line": %d}\n' % n for n in range(len(words)))
    cursor = Cursor(
        path=path, agent="claude", root="/src", dev=1, ino=ino, size=len(raw),
        offset=len(raw), mtime_ns=1, head_hash=b"h", head_len=1, generation=0,
        adapter_version=2, state={},
    )  # fmt: skip
    events = [
        Event(f"claude:{sid}", f"k{n}", "user_msg", TS + n, n * 12, summary=w)
        for n, w in enumerate(words)
    ]
    infos = [SessionInfo(f"claude:{sid}", "claude", sid, cwd="/w/p", first_ts=TS)]
    parsed = Parsed(len(raw), {}, infos, events, usage or [], lines=len(words))
    return Batch(cursor=cursor, start=0, raw=raw, parsed=parsed)


def _hits(con: sqlite3.Connection, word: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT e.summary FROM search JOIN events e ON e.id = search.rowid"
            " WHERE search MATCH ? ORDER BY e.id",
            (word,),
        )
    ]


async def test_full_text_entries_are_written_last_in_one_statement(store: Store) -> None:
    """FTS5 writes its pending terms out as a segment whenever a later statement opens a
    statement journal (the session counters, the usage upserts): the entries are held back
    and written right before COMMIT, one segment per transaction."""
    traced: list[str] = []
    await store.run(store.con.set_trace_callback, traced.append)
    await store.commit_many(
        [
            _batch("a", "/src/a.jsonl", ["alpha one", "beta two"], 7),
            _batch("b", "/src/b.jsonl", ["alpha three", "gamma four"], 8),
        ]
    )
    await store.run(store.con.set_trace_callback, None)
    traced = [sql for sql in traced if not sql.startswith("--")]  # FTS5's own statements
    fts = [n for n, sql in enumerate(traced) if sql.startswith("INSERT INTO search (rowid")]
    others = [
        n
        for n, sql in enumerate(traced)
        if sql.startswith(("UPDATE sessions", "INSERT INTO search_docs", "INSERT OR IGNORE"))
    ]
    assert len(fts) == 4 and others
    assert min(fts) > max(others)  # after every other write of the transaction
    assert traced[max(fts) + 1] == "COMMIT"
    con = sqlite3.connect(store.path)
    assert _hits(con, "alpha") == ["alpha one", "alpha three"]
    assert _hits(con, "gamma") == ["gamma four"]
    con.execute("INSERT INTO search (search, rank) VALUES ('integrity-check', 0)")
    assert con.execute("SELECT count(*) FROM search_docs").fetchone() == (4,)


async def test_rolled_back_writes_take_their_pending_entries_with_them(store: Store) -> None:
    """A value the store refuses (here a usage count beyond int64, after the events and
    their entries were written) rolls the transaction back and writes again batch by batch
    and line by line in savepoints: the entries held back for rolled-back rows go too
    (their ids are given again), so a refused line's text is never found, every kept
    line's is found once, and the index stays consistent."""
    refused = UsageFact("f1", "claude:s", TS, "m", input_tokens=2**64, offset=12)
    await store.commit_many(
        [
            _batch("a", "/src/a.jsonl", ["first alpha", "second alpha"], 8),
            _batch("s", "/src/s.jsonl", ["kept zebra", "refused walrus", "kept yak"], 9, [refused]),
        ]
    )
    con = sqlite3.connect(store.path)
    assert [r[0] for r in con.execute("SELECT summary FROM events ORDER BY id")] == [
        "first alpha",
        "second alpha",
        "kept zebra",
        "kept yak",
    ]
    assert con.execute("SELECT count(*) FROM bad_lines").fetchone() == (1,)
    assert _hits(con, "walrus") == []
    assert _hits(con, "alpha") == ["first alpha", "second alpha"]
    assert _hits(con, "kept") == ["kept zebra", "kept yak"]
    con.execute("INSERT INTO search (search, rank) VALUES ('integrity-check', 0)")
    assert con.execute("SELECT count(*) FROM search_docs").fetchone() == (4,)


async def test_a_text_only_the_index_refuses_quarantines_its_line_only(store: Store) -> None:
    """Index-only text (a thinking block's) is not stored in the event row: the index is the
    first to meet it.  Held back to the end of the transaction, a text SQLite refuses (a
    lone surrogate) would fail the commit of every batch; the salvage pass writes the
    entries line by line instead, so that line alone is quarantined and the rest is kept."""
    batch = _batch("t", "/src/t.jsonl", ["before", "thinking", "after"], 10)
    ev = batch.parsed.events
    ev[1] = Event(ev[1].session_uid, ev[1].key, "thinking", ev[1].ts, ev[1].offset,
                  summary="[thinking]", search_text="lone \ud800 surrogate")  # fmt: skip
    await store.commit_many([_batch("o", "/src/o.jsonl", ["other batch"], 11), batch])
    con = sqlite3.connect(store.path)
    assert [r[0] for r in con.execute("SELECT summary FROM events ORDER BY id")] == [
        "other batch",
        "before",
        "after",
    ]
    bad = con.execute("SELECT offset, reason FROM bad_lines").fetchall()
    assert len(bad) == 1 and bad[0][0] == 12 and "surrogate" in bad[0][1]
    assert _hits(con, "after") == ["after"] and _hits(con, "other") == ["other batch"]
    assert _hits(con, "lone") == []
    con.execute("INSERT INTO search (search, rank) VALUES ('integrity-check', 0)")
    con.close()
    # the next commit holds its entries back again
    traced: list[str] = []
    await store.run(store.con.set_trace_callback, traced.append)
    await store.commit(_batch("n", "/src/n.jsonl", ["next one", "next two"], 12))
    await store.run(store.con.set_trace_callback, None)
    traced = [sql for sql in traced if not sql.startswith("--")]
    assert all(sql.startswith("INSERT INTO search (rowid") for sql in traced[-3:-1])
    assert traced[-1] == "COMMIT"


async def test_none_binds_as_null_through_the_registered_adapter(store: Store) -> None:
    """The writer registers an adapter for ``None`` (``write_sql.bind_none_directly``: the
    adapter look-up's fast path, ~310 -> ~125 ns a parameter); the values stored are NULL
    exactly as without it."""
    assert (type(None), sqlite3.PrepareProtocol) in sqlite3.adapters
    await store.commit(_batch("n", "/src/n.jsonl", ["alpha"], 9))
    row = await store.db.execute(
        "SELECT role, tool, call_id, body, parent_seq, typeof(role), typeof(body)"
        " FROM events WHERE session_id = (SELECT id FROM sessions WHERE native_id = 'n')"
    )
    assert row == [(None, None, None, None, None, "null", "null")]
    direct = sqlite3.connect(":memory:")
    assert direct.execute("SELECT typeof(?), ? IS NULL", (None, None)).fetchone() == ("null", 1)


def _usage_reads(traced: list[str]) -> int:
    return sum(
        1 for sql in traced if sql.startswith("SELECT key, session_id") and "FROM usage" in sql
    )


async def test_new_usage_facts_are_not_read_back_and_sum_as_before(store: Store) -> None:
    """The roll-up reads the facts a batch touches before its upsert, and after it only
    those that were stored already (a new fact is stored as written: a first ingest reads
    each fact once, not twice); the summaries are the same either way."""
    facts = [
        UsageFact("m1", "claude:u", TS, "opus", input_tokens=10, output_tokens=1, rank="a"),
        UsageFact("m1", "claude:u", TS, "opus", input_tokens=10, output_tokens=7, rank="a"),
        UsageFact("m2", "claude:u", TS + 1, "opus", 5, 2, 1, 0, 0, 0, "a", recorded_cost_usd=2),
    ]
    traced: list[str] = []
    await store.run(store.con.set_trace_callback, traced.append)
    await store.commit(_batch("u", "/src/u.jsonl", ["alpha"], 10, usage=facts))
    first = _usage_reads(traced)
    traced.clear()
    again = [UsageFact("m1", "claude:u", TS, "opus", input_tokens=12, output_tokens=9, rank="a")]
    await store.commit(_batch("u", "/src/u2.jsonl", ["beta"], 11, usage=again))
    await store.run(store.con.set_trace_callback, None)
    assert (first, _usage_reads(traced)) == (1, 2)  # the stored fact m1 is read back
    rows = await store.db.execute(
        "SELECT responses, input, output, cache_read, recorded_cost_usd, costed FROM usage_buckets"
    )
    assert rows == [(2, 17, 11, 1, 2.0, 1)]
    hours = await store.db.execute("SELECT responses, input, output FROM usage_hours")
    assert hours == [(2, 17, 11)]

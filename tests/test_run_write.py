"""A live run written statement by statement for the whole run (``Writer.commit_run``,
``helixd/store/runwrite.py``): the same rows as the batch-by-batch write, on a real store,
with each statement once for the run rather than once per file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from helixd.core.records import Cursor, Event, Parsed, SessionInfo, UsageFact
from helixd.store.database import Batch, Store

TS = 1767225600000


def _batch(
    sid: str,
    path: str,
    events: list[tuple[str, str | None, str]],
    *,
    start: int = 0,
    file_id: int | None = None,
    usage: list[UsageFact] | None = None,
    title: str | None = None,
) -> Batch:
    """A batch of ``path`` from ``start``: one line per ``(key, parent key, text)``."""
    raw = b"".join(b'{"line": "%s"}\n' % key.encode() for key, _, _ in events)
    cursor = Cursor(
        path=path, agent="claude", root="/src", dev=1, ino=hash(path) & 0xFFFF,
        size=start + len(raw), offset=start + len(raw), mtime_ns=1, head_hash=b"h",
        head_len=1, generation=0, adapter_version=2, state={"at": start}, file_id=file_id,
    )  # fmt: skip
    uid = f"claude:{sid}"
    evs = [
        Event(uid, key, "user_msg", TS + n, start + n * 10, parent_key=parent, summary=text)
        for n, (key, parent, text) in enumerate(events)
    ]
    infos = [SessionInfo(uid, "claude", sid, cwd=f"/w/{sid}", first_ts=TS, title=title)]
    parsed = Parsed(start + len(raw), {}, infos, evs, usage or [], lines=len(events))
    return Batch(cursor=cursor, start=start, raw=raw, parsed=parsed)


def _first(sid: str) -> Batch:
    return _batch(sid, f"/src/{sid}.jsonl", [(f"{sid}0", None, f"{sid} first words")])


def _run(ids: dict[str, int]) -> list[Batch]:
    """A run that has every case the run path must get right: a file read in two batches
    (its second continues the first's seqs and points at its events), a key stored before
    (a replay after a crash: skipped), parents stored before and in the run, a session new
    in the run, usage facts, a session named by two files."""
    fact = UsageFact("msg-1", "claude:a", TS, "claude-x", input_tokens=5, output_tokens=7)
    # the same response streamed on in the next batch (larger counters), and claimed by
    # another file's session with an earlier rank (it takes the credit)
    more = fact._replace(output_tokens=30, rank="b")
    claimed = fact._replace(session_uid="claude:c", input_tokens=6, rank="a")
    other = UsageFact("msg-2", "claude:b", TS + 5, "claude-y", input_tokens=3, output_tokens=4)
    return [
        _batch(
            "a",
            "/src/a.jsonl",
            [("a1", "a0", "alpha one"), ("a2", "a1", "alpha two")],
            start=100,
            file_id=ids["a"],
            usage=[fact],
        ),
        _batch(
            "b",
            "/src/b.jsonl",
            [("b0", None, "replayed"), ("b1", "b0", "beta one")],
            start=100,
            file_id=ids["b"],
            title="bee",
            usage=[other],
        ),
        _batch(
            "a",
            "/src/a.jsonl",
            [("a3", "a2", "alpha three"), ("a4", "a0", "alpha four")],
            start=200,
            file_id=ids["a"],
            usage=[more],
        ),
        _batch(
            "c",
            "/src/c.jsonl",
            [("c1", None, "gamma one")],
            start=100,
            file_id=ids["c"],
            usage=[claimed],
        ),
        _batch("a", "/src/d.jsonl", [("a5", "a3", "alpha five")], start=100, file_id=ids["d"]),
    ]


async def _before(store: Store) -> dict[str, int]:
    """Files a, b, c, d known; sessions a and b with events, c's file without any (its
    session is new in the run)."""
    c = _batch("c", "/src/c.jsonl", [])
    c.parsed = Parsed(0, {}, [], [], [], lines=0)
    d = _batch("x", "/src/d.jsonl", [("x0", None, "other session")])
    await store.commit_many([_first("a"), _first("b"), c, d])
    found = dict(await store.db.execute("SELECT path, id FROM files"))
    return {k: found[f"/src/{k}.jsonl"] for k in "abcd"}


def _dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    con = sqlite3.connect(db)
    try:
        return {
            "events": con.execute(
                "SELECT e.id, s.uid, e.seq, e.parent_seq, e.ekey, e.akey, e.file_id, e.summary"
                " FROM events e JOIN sessions s ON s.id = e.session_id ORDER BY e.id"
            ).fetchall(),
            "sessions": con.execute(
                "SELECT id, uid, cwd, repo, title, next_seq, events, messages, source_path,"
                " adapter_version FROM sessions ORDER BY id"
            ).fetchall(),
            "files": con.execute(
                "SELECT id, path, offset, size, state, lines, bad_lines, raw_bytes, session_id"
                " FROM files ORDER BY id"
            ).fetchall(),
            "raw_blocks": con.execute(
                "SELECT file_id, generation, start, end, lines FROM raw_blocks ORDER BY 1, 3"
            ).fetchall(),
            "search": con.execute(
                "SELECT d.id, d.session_id, d.kind FROM search_docs d ORDER BY d.id"
            ).fetchall(),
            "hits": con.execute(
                "SELECT rowid FROM search WHERE search MATCH 'alpha' ORDER BY rowid"
            ).fetchall(),
            "usage": con.execute(
                "SELECT key, session_id, rank, input, output FROM usage ORDER BY key"
            ).fetchall(),
            "usage_buckets": con.execute(
                "SELECT * FROM usage_buckets ORDER BY bucket, session_id, model"
            ).fetchall(),
            "usage_hours": con.execute(
                "SELECT * FROM usage_hours ORDER BY hour, agent, model"
            ).fetchall(),
            "totals": con.execute(
                "SELECT event_rows, text_bytes FROM event_totals"
                " UNION ALL SELECT count(*), coalesce(sum(length(CAST(summary AS BLOB))"
                " + coalesce(length(CAST(body AS BLOB)), 0)), 0) FROM events"
                " UNION ALL SELECT raw_blocks, raw_bytes FROM store_totals"
            ).fetchall(),
        }
    finally:
        con.close()


async def test_a_run_written_for_the_whole_run_stores_what_batch_by_batch_stores(
    tmp_path: Path,
) -> None:
    """The same batches written by ``commit_run`` (one statement per kind for the run) and
    one batch per transaction (``commit``) leave the same rows in every table."""
    dumps = []
    for name, whole in (("each", False), ("run", True)):
        store = await Store.open(tmp_path / name / "helix.db")
        try:
            batches = _run(await _before(store))
            if whole:
                assert await store.commit_run(batches) == [b.cursor.file_id for b in batches]
            else:
                for batch in batches:
                    await store.commit(batch)
        finally:
            await store.close()
        dumps.append(_dump(tmp_path / name / "helix.db"))
    each, run = dumps
    assert run == each
    kept, counted, _raw = run["totals"]
    assert kept == counted  # the running totals the writer keeps (m027) follow a run too
    seqs = {(uid, seq, parent) for _, uid, seq, parent, *_ in run["events"]}
    assert ("claude:a", 5, 3) in seqs  # a5 (another file of a) points at a3, written in the run
    assert ("claude:a", 4, 0) in seqs  # a4 points at a0, stored before the run
    assert len([e for e in run["events"] if e[1] == "claude:b"]) == 2  # b0 not written again
    assert sorted((inp, out) for _, _, _, inp, out in run["usage"]) == [(3, 4), (6, 30)]
    assert sum(r[3] for r in run["usage_buckets"]) == 2  # two responses, each counted once


async def test_a_run_writes_each_statement_once_for_all_its_files(
    store: Store, tmp_path: Path
) -> None:
    """Twenty files of a run: one sessions upsert, one look-up per key column, one raw
    block insert, one usage write (its two look-ups) for the run (batch by batch: twenty
    of each)."""
    firsts = [_first(f"s{i}") for i in range(20)]
    await store.commit_many(firsts)
    ids = dict(await store.db.execute("SELECT path, id FROM files"))
    run = [
        _batch(f"s{i}", f"/src/s{i}.jsonl", [(f"k{i}", f"s{i}0", "more")], start=100,
               file_id=ids[f"/src/s{i}.jsonl"],
               usage=[UsageFact(f"m{i}", f"claude:s{i}", TS, "claude-x", input_tokens=i)])
        for i in range(20)
    ]  # fmt: skip
    traced: list[str] = []
    await store.call(lambda con: con.set_trace_callback(traced.append))
    try:
        await store.commit_run(run)
    finally:
        await store.call(lambda con: con.set_trace_callback(None))

    def count(prefix: str) -> int:  # statements (the trace repeats one per row it returns)
        return len({sql for sql in traced if sql.lstrip().startswith(prefix)})

    assert count("INSERT INTO sessions") == 1, traced
    assert count("SELECT e.session_id, e.ekey") == 1
    assert count("SELECT e.session_id, e.akey") == 1
    assert count("INSERT OR IGNORE INTO raw_blocks") == 1
    assert count("SELECT key, session_id, ts, model") == 1  # the run's keys, before and after
    rows = await store.db.execute(
        "SELECT count(*), min(parent_seq), max(seq) FROM events WHERE ekey IN"
        " (SELECT ekey FROM events GROUP BY ekey HAVING count(*) = 1) AND seq = 1"
    )
    assert rows == [(20, 0, 1)]  # every new event after its file's first, pointing at it


async def test_a_value_the_store_refuses_quarantines_its_line_only_in_a_run(store: Store) -> None:
    """A run whose write the store refuses (a number too large for SQLite) is written again
    batch by batch (``commit_many``'s salvage): that line goes to ``bad_lines``, the other
    file's rows and both cursors are stored."""
    await store.commit_many([_first("a"), _first("b")])
    ids = dict(await store.db.execute("SELECT path, id FROM files"))
    good = _batch(
        "a", "/src/a.jsonl", [("a1", "a0", "fine")], start=100, file_id=ids["/src/a.jsonl"]
    )
    bad = _batch(
        "b", "/src/b.jsonl", [("b1", None, "ok"), ("b2", None, "huge")], start=100,
        file_id=ids["/src/b.jsonl"],
    )  # fmt: skip
    bad.parsed.events[1] = bad.parsed.events[1]._replace(tokens=1 << 70)
    await store.commit_run([good, bad])
    summaries = {s for (s,) in await store.db.execute("SELECT summary FROM events")}
    assert {"fine", "ok"} <= summaries and "huge" not in summaries
    assert await store.db.execute("SELECT count(*) FROM bad_lines") == [(1,)]
    offsets = dict(await store.db.execute("SELECT path, offset FROM files"))
    assert offsets == {"/src/a.jsonl": good.cursor.offset, "/src/b.jsonl": bad.cursor.offset}

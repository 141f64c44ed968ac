"""The SQLite side of the fleet: the outbox triggers record every Tier 2 change in the
transaction that makes it (and nothing before the fleet is switched on), one entry per row,
and a confirmation drops exactly what was sent.  No server needed."""

from __future__ import annotations

import asyncio
import random
import signal
import sqlite3
from pathlib import Path
from typing import Any

from helixd.store import outbox, outbox_batch
from helixd.store.database import Store, now_ms
from tests.fleet.helpers import helixctl_on, local
from tests.test_crash import run_ingest, write_corpus

KEYS = {
    "session": "SELECT 'session', id, 0, '' FROM sessions",
    "digest": "SELECT 'digest', session_id, 0, '' FROM digests",
    "usage": "SELECT 'usage', key, 0, '' FROM usage",
    "bucket": "SELECT 'bucket', session_id, bucket, model FROM usage_buckets",
    "signals": "SELECT 'signals', session_id, 0, '' FROM tool_calls UNION"
    " SELECT 'signals', session_id, 0, '' FROM test_runs UNION"
    " SELECT 'signals', session_id, 0, '' FROM file_operations UNION"
    " SELECT 'signals', session_id, 0, '' FROM session_signals",
}


def tier2_keys(db: Path) -> set[tuple[Any, ...]]:
    return {row for sql in KEYS.values() for row in local(db, sql)}


def entries(db: Path) -> list[tuple[Any, ...]]:
    return local(db, "SELECT tbl, k1, k2, k3 FROM fleet_outbox ORDER BY id")


def call(db: Path, fn: Any, *args: Any) -> Any:
    async def run() -> Any:
        store = await Store.open(db)
        try:
            return await store.call(fn, *args)
        finally:
            await store.close()

    return asyncio.run(run())


def drain(db: Path) -> None:
    """Confirm everything, as a push would after the server committed."""
    while True:
        batch = call(db, outbox_batch.next_batch, 500, False, 0)
        if not batch.entries:
            return
        call(db, outbox.confirm, batch, now_ms())


def test_nothing_is_recorded_before_the_fleet_is_switched_on(make_store: Any) -> None:
    db = make_store("claude")
    assert entries(db) == []
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE usage SET output = output + 1")
        con.execute("UPDATE sessions SET messages = messages")
    assert entries(db) == []


def test_switching_on_enqueues_every_tier2_row_once(make_store: Any) -> None:
    db = make_store("both")
    seeded = call(db, outbox.switch_on, now_ms(), False)
    got = entries(db)
    assert seeded == len(got) == len(set(got))
    assert set(got) == tier2_keys(db)
    assert call(db, outbox.switch_on, now_ms(), False) == 0  # already on: nothing again


def test_a_change_is_recorded_in_its_own_transaction_or_not_at_all(make_store: Any) -> None:
    db = make_store("claude")
    call(db, outbox.switch_on, now_ms(), False)
    drain(db)
    key = local(db, "SELECT key FROM usage ORDER BY key LIMIT 1")[0][0]
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    con.execute("UPDATE usage SET output = output + 5 WHERE key = ?", (key,))
    con.execute("ROLLBACK")
    assert entries(db) == []
    con.execute("BEGIN IMMEDIATE")
    con.execute("UPDATE usage SET output = output + 5 WHERE key = ?", (key,))
    con.execute("COMMIT")
    con.close()
    assert entries(db) == [("usage", key, 0, "")]


def test_a_row_changed_many_times_has_one_entry_keeping_its_oldest_change(make_store: Any) -> None:
    db = make_store("claude")
    call(db, outbox.switch_on, now_ms(), False)
    drain(db)
    sid = local(db, "SELECT id FROM sessions ORDER BY id LIMIT 1")[0][0]
    con = sqlite3.connect(db)
    ids, ats = [], []
    for n in range(30):
        with con:
            con.execute("UPDATE sessions SET messages = ? WHERE id = ?", (n, sid))
        ((i, at),) = con.execute("SELECT id, at FROM fleet_outbox").fetchall()
        ids.append(i)
        ats.append(at)
    con.close()
    assert ids == sorted(set(ids))  # a new, larger id on every change
    assert len(set(ats)) == 1  # the time of the oldest change not yet shipped


def test_a_row_changed_while_its_batch_is_in_flight_stays_queued(make_store: Any) -> None:
    db = make_store("claude")
    call(db, outbox.switch_on, now_ms(), False)
    batch = call(db, outbox_batch.next_batch, 50, False, 0)
    sent = {(e.tbl, e.k1, e.k2, e.k3) for e in batch.entries}
    moved = next(e for e in batch.entries if e.tbl == "session")
    con = sqlite3.connect(db)
    with con:  # the change lands after the batch was read, before the server confirmed
        con.execute("UPDATE sessions SET messages = messages + 1 WHERE id = ?", (moved.k1,))
    con.close()
    call(db, outbox.confirm, batch, now_ms())
    left = set(entries(db))
    assert ("session", moved.k1, 0, "") in left
    assert not (sent - {("session", moved.k1, 0, "")}) & left
    assert local(db, "SELECT value FROM meta WHERE key = 'fleet_watermark'") == [
        (str(batch.last_id),)
    ]


def test_rows_gone_are_named_for_deletion(make_store: Any) -> None:
    db = make_store("claude")
    call(db, outbox.switch_on, now_ms(), False)
    drain(db)
    key, sid, ts, model = local(
        db, "SELECT key, session_id, ts, model FROM usage WHERE ts IS NOT NULL LIMIT 1"
    )[0]
    alone = local(
        db,
        "SELECT count(*) FROM usage WHERE session_id = ? AND model = ? AND ts / 900000 = ?",
        (sid, model, ts // 900_000),
    )[0][0]
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM usage WHERE key = ?", (key,))
    con.close()
    batch = call(db, outbox_batch.next_batch, 100, False, 0)
    assert batch.usage_gone == [key]
    if alone == 1:  # its 15-minute bucket emptied: deleted too
        assert [k[0] for k in batch.buckets_gone] == [ts // 900_000]
    else:
        assert [b[0] for b in batch.buckets] == [ts // 900_000]


def test_conversation_text_is_read_only_when_asked_and_in_slices(make_store: Any) -> None:
    db = make_store("claude")
    ((uid, n),) = local(
        db,
        "SELECT s.uid, count(*) FROM events e JOIN sessions s ON s.id = e.session_id"
        " GROUP BY 1 ORDER BY 2 DESC LIMIT 1",
    )

    async def run() -> tuple[list[Any], list[int]]:
        store = await Store.open(db)
        try:
            await store.call(outbox.switch_on, now_ms(), True)
            plain = await store.call(outbox_batch.next_batch, 10_000, False, 0)
            assert plain.events == []
            seqs: list[Any] = []
            sizes = []
            while (batch := await store.call(outbox_batch.next_batch, 10_000, True, 40)).entries:
                sizes.append(len(batch.events))
                seqs.extend(e[1] for e in batch.events if e[0] == uid)
                await store.call(outbox.confirm, batch, now_ms())
            return seqs, sizes
        finally:
            await store.close()

    seqs, sizes = asyncio.run(run())
    assert max(sizes) <= 40 and len(sizes) > n // 40
    assert sorted(seqs) == list(range(n))  # every event of the biggest session, none twice


def test_a_crash_loses_no_change(tmp_path: Path) -> None:
    """SIGKILL ingest at random moments with the outbox on: after the resume, every Tier 2
    row has its entry, as after a clean run."""
    home = tmp_path / "home"
    write_corpus(home / ".claude" / "projects", files=10, lines=300)
    dbs = {}
    for name in ("clean", "crashed"):
        db = tmp_path / name / "helix.db"
        db.parent.mkdir()
        call(db, outbox.switch_on, now_ms(), False)
        dbs[name] = db
    run_ingest(home, dbs["clean"], None)
    rng = random.Random(3)
    kills = sum(
        run_ingest(home, dbs["crashed"], rng.uniform(0.3, 0.8)) == -signal.SIGKILL for _ in range(4)
    )
    run_ingest(home, dbs["crashed"], None)
    assert kills >= 1
    for db in dbs.values():
        assert set(entries(db)) == tier2_keys(db)
        assert len(entries(db)) == len(set(entries(db)))
    assert len(entries(dbs["clean"])) == len(entries(dbs["crashed"]))


def test_fleet_off_stops_recording_until_the_next_push_starts_over(make_store: Any) -> None:

    db = make_store("claude")
    seeded = call(db, outbox.switch_on, now_ms(), False)
    proc = helixctl_on(db, "fleet", "off")
    assert proc.returncode == 0, proc.stderr
    assert f"{seeded:,} waiting changes dropped" in proc.stdout
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE usage SET output = output + 1")
    con.close()
    assert entries(db) == []
    assert call(db, outbox.switch_on, now_ms(), False) == seeded
    assert set(entries(db)) == tier2_keys(db)


SIGNAL_TABLES = ("tool_calls", "test_runs", "file_operations", "session_signals")


async def _reanalyze(db: Path) -> None:
    from helixd.ingest import digest

    async with await Store.open(db) as store:
        await digest.analyze(store, await store.analyzable_session_ids(), now_ms())


def test_new_signals_are_enqueued_once_per_session_by_the_writer_not_per_row(
    make_store: Any,
) -> None:
    """m028 (issue 12): the signal tables' insert triggers are gone (they ran once per row on
    every analyze, fleet on or off: ~0.35 s of the 1.3 GB first ingest's store thread);
    the writer enqueues each session given signal rows once, keeping the time of the oldest
    change not shipped yet, as the triggers did."""
    db = make_store("claude")
    triggers = {n for (n,) in local(db, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert not {f"fleet_{t}_insert" for t in SIGNAL_TABLES} & triggers
    assert {f"fleet_{t}_{e}" for t in SIGNAL_TABLES for e in ("update", "delete")} <= triggers
    want = sorted({k1 for (_, k1, _, _) in local(db, KEYS["signals"])})
    assert len(want) > 1
    con = sqlite3.connect(db)
    with con:  # fleet off: no entries; the next analyze only inserts
        for table in SIGNAL_TABLES:
            con.execute(f"DELETE FROM {table}")
    con.close()
    asyncio.run(_reanalyze(db))  # fleet off: the writer enqueues nothing
    assert not [e for e in entries(db) if e[0] == "signals"]
    con = sqlite3.connect(db)
    with con:  # again without signals, so that the analyze below only inserts
        for table in SIGNAL_TABLES:
            con.execute(f"DELETE FROM {table}")
    con.close()
    call(db, outbox.switch_on, now_ms(), False)
    drain(db)
    con = sqlite3.connect(db)
    with con:  # an older change of the first session, not shipped yet: its time stays
        con.execute(
            "INSERT INTO fleet_outbox (tbl, k1, k2, k3, at) VALUES ('signals', ?, 0, '', 5)",
            (want[0],),
        )
    con.close()
    asyncio.run(_reanalyze(db))
    got = [k1 for tbl, k1, _, _ in entries(db) if tbl == "signals"]
    assert sorted(got) == want  # each once
    assert local(db, f"SELECT at FROM fleet_outbox WHERE tbl = 'signals' AND k1 = {want[0]}") == [
        (5,)
    ]
    others = local(db, f"SELECT at FROM fleet_outbox WHERE tbl = 'signals' AND k1 != {want[0]}")
    assert others and all(at > 5 for (at,) in others)

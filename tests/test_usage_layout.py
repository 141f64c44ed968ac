"""m026 (``helixd/store/usage_layout.py``): the usage facts in insertion order, the dedup hash
under a unique index.  A store built at m025 from the Claude and Codex fixtures is migrated:
every fact, rollup and fleet outbox entry stays as it was, the triggers the old table took
with it work again, a second open changes nothing, and a fresh store built from the same
files at m026 holds the same facts.  New facts append (rowids in insertion order), and the
plans of the usage readers use an index wherever m025's did."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helixd.adapters.registry import REGISTRY
from helixd.core.records import UsageFact
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from helixd.store.usage_layout import COLUMNS
from tests.conftest import FIXTURES
from tests.migration_helpers import migrations_before, open_store

_FACTS = f"SELECT {', '.join(COLUMNS)} FROM usage ORDER BY key"
_ROLLUPS = (
    "SELECT * FROM usage_buckets ORDER BY 1, 2, 3",
    "SELECT * FROM usage_hours ORDER BY 1, 2, 3",
    "SELECT * FROM usage_days ORDER BY 1, 2, 3",
)
_OUTBOX = "SELECT tbl, k1, k2, k3 FROM fleet_outbox ORDER BY id"
# The usage readers (helixd/store: facts, queries, metrics_queries, outbox_batch, evict,
# replay_write, the writer's own lookup); ? stands for any value.
_READERS = (
    "SELECT key, session_id, ts, model, input, output FROM usage WHERE key IN (?, ?, ?)",
    "SELECT u.key, s.uid, u.rank, u.ts, u.model, u.input FROM usage u"
    " JOIN sessions s ON s.id = u.session_id WHERE u.key IN (?, ?)",
    "SELECT session_id, count(*), sum(input) FROM usage"
    " WHERE session_id IN (SELECT id FROM sessions LIMIT 3) GROUP BY 1",
    "SELECT p.id, u.model, sum(u.input) FROM sessions p JOIN sessions c ON c.parent_uid = p.uid"
    " JOIN usage u ON u.session_id = c.id WHERE p.id IN (1, 2) GROUP BY p.id, u.model",
    "SELECT ts, model, input FROM usage WHERE session_id = ? AND ts >= ? AND ts < ? ORDER BY ts",
    "SELECT u.ts, u.model, u.input FROM usage u JOIN sessions s ON s.id = u.session_id"
    " WHERE u.ts >= ? AND u.ts < ? ORDER BY u.ts",
    "SELECT s.uid FROM sessions s WHERE s.id IN"
    " (SELECT u.session_id FROM usage u WHERE u.ts >= ? AND u.ts < ?)",
    "DELETE FROM usage WHERE session_id = ?",
    "UPDATE usage SET ts = NULL WHERE key IN (1, 2)",
)


def _read(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _ingest(db: Path, root: Path) -> None:
    async def run() -> None:
        pairs = [(a, root / a.name) for a in REGISTRY if a.name in ("claude", "codex")]
        async with await Store.open(db) as store:
            await Ingestor(store, workers=0).backfill(discover(pairs))

    asyncio.run(run())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """(the Claude and Codex fixtures' root, a store built from them at m025 with the fleet
    outbox on, a store built from them at m026)."""
    tmp = tmp_path_factory.mktemp("usage-layout")
    root = tmp / "home"
    for name in ("claude", "codex"):
        shutil.copytree(FIXTURES / name, root / name, ignore=shutil.ignore_patterns("README*"))
    old, new = tmp / "m025.db", tmp / "m026.db"
    with migrations_before("m026_usage_layout"):
        open_store(old)  # created at m025, then the outbox on
        con = sqlite3.connect(old)
        with con:
            con.execute("INSERT INTO meta (key, value) VALUES ('fleet_outbox', '1')")
        con.close()
        _ingest(old, root)
    _ingest(new, root)
    yield root, old, new


def _migrated(built: tuple[Path, Path, Path], name: str) -> Path:
    db = built[1].parent / name
    shutil.copy(built[1], db)
    open_store(db)
    return db


def test_the_migration_keeps_every_fact_rollup_and_outbox_entry(
    built: tuple[Path, Path, Path],
) -> None:
    _, old, new = built
    assert "id" not in [r[1] for r in _read(old, "PRAGMA table_info(usage)")]
    facts = _read(old, _FACTS)
    assert len(facts) > 50 and len({f[1] for f in facts}) > 5
    db = _migrated(built, "migrated.db")
    assert _read(db, "PRAGMA integrity_check") == [("ok",)]
    assert [r[1] for r in _read(db, "PRAGMA table_info(usage)")] == ["id", *COLUMNS]
    assert _read(db, _FACTS) == facts
    for sql in _ROLLUPS:
        assert _read(db, sql) == _read(old, sql)
    assert _read(db, _OUTBOX) == _read(old, _OUTBOX)
    # the rows in (session, time) order; a fresh store from the same files holds the same
    by_id = _read(db, "SELECT session_id, coalesce(ts, -1) FROM usage ORDER BY id")
    assert by_id == sorted(by_id)
    assert _read(new, _FACTS) == facts
    # a second open applies nothing again
    ids = _read(db, "SELECT id, key FROM usage ORDER BY id")
    open_store(db)
    assert _read(db, "SELECT id, key FROM usage ORDER BY id") == ids
    assert _read(db, "SELECT count(*) FROM migrations WHERE name = 'm026_usage_layout'") == [(1,)]


def test_the_migrated_tables_triggers_work(built: tuple[Path, Path, Path]) -> None:
    db = _migrated(built, "triggers.db")
    con = sqlite3.connect(db)
    try:
        (key, sid), (moved, _) = con.execute(
            "SELECT key, session_id FROM usage WHERE ts IS NOT NULL ORDER BY id LIMIT 2"
        ).fetchall()
        other = con.execute("SELECT id FROM sessions WHERE id != ? LIMIT 1", (sid,)).fetchone()[0]
        with con:
            con.execute("DELETE FROM fleet_outbox")
            con.execute("UPDATE sessions SET changed_at = 0 WHERE id = ?", (sid,))
            con.execute("UPDATE usage SET session_id = ? WHERE key = ?", (other, moved))
        # usage_credit_moved: the session that lost the credit is analyzed again
        assert con.execute("SELECT changed_at FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
        before = con.execute("SELECT sum(responses), sum(input) FROM usage_buckets").fetchone()
        gone = con.execute("SELECT input FROM usage WHERE key = ?", (key,)).fetchone()[0]
        with con:
            con.execute("DELETE FROM usage WHERE key = ?", (key,))
        # usage_buckets_drop: the fact leaves the rollups; the outbox records both changes
        after = con.execute("SELECT sum(responses), sum(input) FROM usage_buckets").fetchone()
        assert after == (before[0] - 1, before[1] - gone)
        hours = con.execute("SELECT sum(responses) FROM usage_hours").fetchone()[0]
        assert hours == after[0]
        shipped = con.execute("SELECT k1 FROM fleet_outbox WHERE tbl = 'usage'").fetchall()
        assert {(key,), (moved,)} <= set(shipped)
    finally:
        con.close()


def test_new_facts_append_in_insertion_order(built: tuple[Path, Path, Path]) -> None:
    """A fact's row goes after the last one whatever its hash: what keeps a transaction's
    writes to the table's last pages (m025 placed each by its hash)."""
    db = _migrated(built, "append.db")
    con = sqlite3.connect(db)
    try:
        uid, sid, top = con.execute(
            "SELECT uid, id, (SELECT max(id) FROM usage) FROM sessions LIMIT 1"
        ).fetchone()
        from helixd.store.usage_write import UsageWriter

        facts = [
            UsageFact(f"layout-test-{i}", uid, 1_700_000_000_000 + i, "m", 1, 2, rank="0")
            for i in range(40)
        ]
        with con:
            UsageWriter(con).write(facts, {uid: sid})
        from helixd.store.keys import key64

        ids = [
            con.execute("SELECT id FROM usage WHERE key = ?", (key64(f.dedup_key),)).fetchone()[0]
            for f in facts
        ]
        assert ids == list(range(top + 1, top + 41))
    finally:
        con.close()


def _scans(con: sqlite3.Connection, sql: str) -> tuple[list[str], list[str]]:
    """(the tables a statement scans whole, the indexes it reads) by EXPLAIN QUERY PLAN."""
    plan = [r[3] for r in con.execute(f"EXPLAIN QUERY PLAN {sql}", [0] * sql.count("?"))]
    scans = [d for d in plan if d.startswith("SCAN") and "INDEX" not in d]
    return scans, plan


def test_the_usage_readers_plans_are_as_good(built: tuple[Path, Path, Path]) -> None:
    _, old, _ = built
    db = _migrated(built, "plans.db")
    con_old, con_new = sqlite3.connect(old), sqlite3.connect(db)
    try:
        for sql in _READERS:
            old_scans, old_plan = _scans(con_old, sql)
            new_scans, new_plan = _scans(con_new, sql)
            assert len(new_scans) <= len(old_scans), (sql, old_plan, new_plan)
        key_lookup = _scans(con_new, _READERS[0])[1]
        assert any("USING INDEX usage_key" in d for d in key_lookup), key_lookup
    finally:
        con_old.close()
        con_new.close()

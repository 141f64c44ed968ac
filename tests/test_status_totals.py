"""m025 (``helixd/store/status_totals.py``): the running totals of raw blocks and digests equal
a count of the tables after incremental ingest of the real fixtures and after a file grows
(the retention pass's deletes: ``test_retention.py``'s applied plans); the migration fills
them on an existing store; ``status``' figures are those a scan of the tables gives, and its
scans of ``files`` and ``sessions`` read the covering indexes."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pytest

from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.query.status import store_facts
from helixd.store.database import Store, now_ms
from helixd.store.status_totals import COUNTS, kept
from helixd.store.tier1 import RAW_ROW_OVERHEAD
from tests.agent_helpers import ingest_in_steps

STATUS_SCANS = (
    "SELECT path, offset, gone_at FROM files",
    "SELECT count(*), coalesce(sum(offset), 0), coalesce(sum(lines), 0),"
    " coalesce(sum(bad_lines), 0), coalesce(sum(raw_bytes), 0),"
    " coalesce(sum(unknown_records), 0), coalesce(sum(gone_at IS NOT NULL), 0) FROM files",
    "SELECT agent, sum(bad_lines) FROM files GROUP BY agent HAVING sum(bad_lines) > 0",
    "SELECT agent, count(*), sum(events), sum(messages > 0) FROM sessions GROUP BY agent",
)


def _totals_match(db: Path) -> tuple[int, int, int]:
    con = sqlite3.connect(db)
    try:
        truth = tuple(con.execute(COUNTS).fetchone())
        assert kept(con) == truth
        return truth
    finally:
        con.close()


@pytest.fixture(scope="module")
def store_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Claude fixtures ingested a few files at a time (the totals checked after each
    pass) and analyzed, then one file grown by a line and read again."""
    tmp = tmp_path_factory.mktemp("status-totals")
    root = tmp / "claude"

    async def build() -> None:
        store = await Store.open(tmp / "s.db")

        async def check() -> None:
            _totals_match(store.path)

        try:
            pairs = await ingest_in_steps(store, tmp, ("claude",), 6, check)
            await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
            _totals_match(store.path)
            grown = next(root.rglob("*.jsonl"))
            with grown.open("ab") as fh:
                fh.write(grown.read_bytes().splitlines(keepends=True)[-1])
            await Ingestor(store).backfill(discover(pairs))
        finally:
            await store.close()

    asyncio.run(build())
    return tmp / "s.db"


def _status(db: Path) -> dict[str, object]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return store_facts(con)["summary"]  # type: ignore[no-any-return]
    finally:
        con.close()


def test_the_totals_equal_the_tables_and_status_shows_them(store_db: Path) -> None:
    blocks, data, digests = _totals_match(store_db)
    assert blocks > 10 and data > 10_000 and digests > 5
    summary = _status(store_db)
    assert summary["digests"] == digests
    assert summary["tier1"]["raw_blocks_bytes"] == data + blocks * RAW_ROW_OVERHEAD  # type: ignore[index]
    con = sqlite3.connect(store_db)
    try:
        plans = [str(con.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()) for sql in STATUS_SCANS]
    finally:
        con.close()
    assert all("COVERING INDEX" in p for p in plans), plans


async def test_the_migration_fills_the_totals_of_an_existing_store(store_db: Path) -> None:
    db = store_db.parent / "old.db"
    shutil.copy(store_db, db)
    truth = _totals_match(db)
    new = _status(db)
    con = sqlite3.connect(db)
    with con:  # the store as a Helix before m025 left it
        con.execute("DROP TABLE store_totals")
        for what in ("raw_insert", "raw_delete", "raw_update", "digest_insert", "digest_delete"):
            con.execute(f"DROP TRIGGER store_totals_{what}")
        con.execute("DROP INDEX files_status")
        con.execute("DROP INDEX sessions_agent")
        con.execute("DELETE FROM migrations WHERE name = 'm025_status_totals'")
    con.close()
    assert _status(db) == new  # a store not migrated yet: the tables are read
    store = await Store.open(db)
    await store.close()
    assert _totals_match(db) == truth

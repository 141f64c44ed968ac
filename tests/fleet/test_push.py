"""Pushing a store's Tier 2 to a real PostgreSQL: the first push mirrors every row, a second
sends nothing, a forced resend doubles and rewrites nothing, later changes and deletions
follow, two machines keep their own rows, a server that lost its data gets everything again."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from helixd.store import outbox
from helixd.store.database import Store, now_ms
from tests.conftest import FIXTURES
from tests.fleet.helpers import (
    ADAPTERS,
    local,
    push_once,
    server,
    target,
    tier2_local,
    tier2_server,
)


def test_the_first_push_mirrors_every_tier2_row(make_store: Any, pg_db: str) -> None:
    db = make_store("both")
    result = asyncio.run(push_once(db, target(pg_db, batch_rows=100)))
    mirrored = tier2_server(pg_db, "laptop")
    assert mirrored == tier2_local(db)
    # (hook events: none in the fixture stores; tests/fleet/test_tier2_rest.py has them)
    assert all(mirrored[t] for t in mirrored if t != "hook_events"), {
        t: len(v) for t, v in mirrored.items()
    }
    assert (
        result.migrations == ["p001_mirror", "p002_tier2_rest", "p003_recorded_cost"]
        and result.batches > 3
    )
    assert local(db, "SELECT count(*) FROM fleet_outbox") == [(0,)]
    (shipped,) = server(pg_db, "SELECT shipped_through FROM helix.machines")
    assert shipped[0] == result.entries  # ids 1..n: every entry confirmed
    assert local(db, "SELECT value FROM meta WHERE key = 'fleet_watermark'") == [(str(shipped[0]),)]
    ((name, user),) = server(pg_db, "SELECT name, user_name FROM helix.machines")
    assert (name, user) == ("laptop", "alice")


def test_a_second_push_sends_nothing_and_a_resend_doubles_and_rewrites_nothing(
    make_store: Any, pg_db: str
) -> None:
    db = make_store("claude")
    tgt = target(pg_db, batch_rows=250)
    asyncio.run(push_once(db, tgt))
    before = tier2_server(pg_db, "laptop")
    versions = server(pg_db, "SELECT uid, xmin::text FROM helix.sessions ORDER BY uid")
    again = asyncio.run(push_once(db, tgt))
    assert (again.entries, again.rows, again.seeded) == (0, 0, 0)

    async def resend() -> int:
        store = await Store.open(db)
        try:
            return await store.call(outbox.resync, now_ms())
        finally:
            await store.close()

    assert asyncio.run(resend()) > 0
    resent = asyncio.run(push_once(db, tgt))
    assert resent.entries > 0
    assert tier2_server(pg_db, "laptop") == before == tier2_local(db)
    # identical rows are not even rewritten (no new row version, no WAL for them)
    assert server(pg_db, "SELECT uid, xmin::text FROM helix.sessions ORDER BY uid") == versions


def _ingest(db: Path, root: Path) -> None:
    from helixd.ingest import digest
    from helixd.ingest.pipeline import Ingestor, discover
    from helixd.prices import effective

    async def run() -> None:
        store = await Store.open(db)
        try:
            await Ingestor(store).backfill(discover([(ADAPTERS["claude"], root)]))
            ids = await store.sessions_to_analyze(now_ms(), 0)
            await digest.analyze(store, ids, now_ms(), 0, effective(None, {}))
        finally:
            await store.close()

    asyncio.run(run())


def test_changes_after_a_push_follow_it(make_store: Any, pg_db: str, tmp_path: Path) -> None:
    from tests.daemon_helpers import line

    db = make_store("claude")
    tgt = target(pg_db)
    asyncio.run(push_once(db, tgt))
    root = tmp_path / "more"
    (root / "-work-live").mkdir(parents=True)
    session = root / "-work-live" / "5e55e55e-0000-4000-8000-000000000001.jsonl"
    session.write_bytes(b"".join(line(n, "user" if n % 2 == 0 else "assistant") for n in range(6)))
    _ingest(db, root)
    first = asyncio.run(push_once(db, tgt))
    assert first.entries > 0
    with session.open("ab") as f:
        f.write(b"".join(line(n, "user" if n % 2 == 0 else "assistant") for n in range(6, 12)))
    _ingest(db, root)
    pending = local(db, "SELECT tbl, count(*) FROM fleet_outbox GROUP BY 1 ORDER BY 1")
    assert dict(pending).keys() >= {"session", "usage", "bucket", "digest"}
    asyncio.run(push_once(db, tgt))
    assert tier2_server(pg_db, "laptop") == tier2_local(db)
    uid = "claude:5e55e55e-0000-4000-8000-000000000001"
    assert server(pg_db, "SELECT count(*) FROM helix.usage WHERE session_uid = %s", (uid,)) == [
        (6,)
    ]


def test_rows_deleted_here_are_deleted_on_the_server(make_store: Any, pg_db: str) -> None:
    db = make_store("claude")
    tgt = target(pg_db)
    asyncio.run(push_once(db, tgt))
    con = sqlite3.connect(db)
    key, sid = con.execute(
        "SELECT key, session_id FROM usage WHERE ts IS NOT NULL ORDER BY key LIMIT 1"
    ).fetchone()
    # as re-normalization does: the fact goes, the summary trigger takes it out of its bucket
    with con:
        con.execute("DELETE FROM usage WHERE key = ?", (key,))
        con.execute("DELETE FROM tool_calls WHERE session_id = ?", (sid,))
    con.close()
    asyncio.run(push_once(db, tgt))
    assert server(pg_db, "SELECT count(*) FROM helix.usage WHERE key = %s", (key,)) == [(0,)]
    assert tier2_server(pg_db, "laptop") == tier2_local(db)


def test_two_machines_with_the_same_sessions_keep_their_own_rows(
    make_store: Any, pg_db: str
) -> None:
    a, b = make_store("claude", "a"), make_store("claude", "b")
    asyncio.run(push_once(a, target(pg_db, "laptop")))
    asyncio.run(push_once(b, target(pg_db, "laptop", user="bob")))  # the same host name
    ids = server(pg_db, "SELECT machine_id, name, user_name FROM helix.machines ORDER BY 3")
    assert len(ids) == 2 and {r[1] for r in ids} == {"laptop"}
    rows = tier2_local(a)
    for table, expected in rows.items():
        for machine_id, *_ in ids:
            got = server(
                pg_db, f"SELECT count(*) FROM helix.{table} WHERE machine_id = %s", (machine_id,)
            )
            assert got == [(len(expected),)], table
    # pushing one machine again never touches the other's rows
    bob = server(pg_db, "SELECT xmin::text FROM helix.usage WHERE machine_id = %s", (ids[1][0],))
    con = sqlite3.connect(a)
    with con:
        con.execute("UPDATE usage SET output = output + 1")
    con.close()
    asyncio.run(push_once(a, target(pg_db, "laptop")))
    assert (
        server(pg_db, "SELECT xmin::text FROM helix.usage WHERE machine_id = %s", (ids[1][0],))
        == bob
    )


def test_a_server_that_lost_its_data_gets_everything_again(make_store: Any, pg_db: str) -> None:
    db = make_store("claude")
    tgt = target(pg_db, batch_rows=300)
    asyncio.run(push_once(db, tgt))
    expected = tier2_local(db)
    server(pg_db, "DELETE FROM helix.machines")  # a restore from before this machine came
    result = asyncio.run(push_once(db, tgt))
    assert result.resync and result.entries > 0
    assert tier2_server(pg_db, "laptop") == expected
    assert local(db, "SELECT value FROM meta WHERE key = 'fleet_resyncs'") == [("1",)]


def test_a_newer_server_schema_is_refused(make_store: Any, pg_db: str) -> None:
    from helixd.fleet.push import PushError

    db = make_store("claude")
    asyncio.run(push_once(db, target(pg_db)))
    server(pg_db, "INSERT INTO helix.migrations (name) VALUES ('p999_future')")
    with pytest.raises(PushError, match="newer Helix"):
        asyncio.run(push_once(db, target(pg_db)))
    assert local(db, "SELECT value FROM meta WHERE key = 'fleet_failures'") == [("1",)]


def test_machines_migrating_at_once_apply_each_migration_once(pg_db: str) -> None:
    from helixd.fleet.push import migrate

    async def many() -> list[list[str]]:
        return list(await asyncio.gather(*(migrate(target(pg_db)) for _ in range(5))))

    applied = asyncio.run(many())
    assert sorted(applied) == [
        [],
        [],
        [],
        [],
        ["p001_mirror", "p002_tier2_rest", "p003_recorded_cost"],
    ]
    assert server(pg_db, "SELECT name FROM helix.migrations ORDER BY name") == [
        ("p001_mirror",),
        ("p002_tier2_rest",),
        ("p003_recorded_cost",),
    ]


def test_the_fixture_corpus_is_what_the_tests_think(make_store: Any) -> None:
    """Guards the tests above: the stores hold every kind of Tier 2 row."""
    counts = {t: len(v) for t, v in tier2_local(make_store("both")).items()}
    assert all(v for t, v in counts.items() if t != "hook_events"), counts
    assert (FIXTURES / "codex").is_dir()

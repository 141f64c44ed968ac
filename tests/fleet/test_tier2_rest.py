"""The rest of Tier 2 on the fleet (issue 17): hook events, edit acceptance
(``file_operations.accepted``, m009) and attribution (``sessions.repo_root``/``domain``/
``task_ref``/``git_commit``, m012) are mirrored; a re-push doubles nothing; two machines'
rows sum; a store that pushed before its m020 sends the new columns of rows already sent."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from helixd.store import attribution, outbox
from helixd.store.database import Store, now_ms
from tests.fleet.helpers import (
    add_hooks,
    local,
    push_once,
    server,
    target,
    tier2_local,
    tier2_server,
)


def _attribute(db: Path) -> None:
    con = sqlite3.connect(db, isolation_level=None)
    try:
        ids = [r[0] for r in con.execute("SELECT id FROM sessions ORDER BY id LIMIT 3")]
        attribution.save(con, [(sid, None, "/work/helix", "backend", f"HX-{sid}") for sid in ids])
    finally:
        con.close()


def test_hook_events_acceptance_and_attribution_are_mirrored_once(
    make_store: Any, pg_db: str
) -> None:
    db = make_store("both")
    add_hooks(db, 7)
    _attribute(db)
    tgt = target(pg_db, batch_rows=40)
    asyncio.run(push_once(db, tgt))
    mirrored = tier2_server(pg_db, "laptop")
    assert mirrored == tier2_local(db)
    assert len(mirrored["hook_events"]) == 7
    assert server(pg_db, "SELECT count(*) FROM helix.sessions WHERE task_ref LIKE 'HX-%%'") == [
        (3,)
    ]
    accepted = server(pg_db, "SELECT count(*) FROM helix.file_operations WHERE accepted = 1")
    assert accepted[0][0] > 0
    assert accepted == local(db, "SELECT count(*) FROM file_operations WHERE accepted = 1")

    # a forced resend doubles nothing and rewrites no identical row
    versions = server(pg_db, "SELECT id, xmin::text FROM helix.hook_events ORDER BY id")

    async def resend() -> int:
        store = await Store.open(db)
        try:
            return await store.call(outbox.resync, now_ms())
        finally:
            await store.close()

    assert asyncio.run(resend()) > 0
    asyncio.run(push_once(db, tgt))
    assert tier2_server(pg_db, "laptop") == mirrored
    assert server(pg_db, "SELECT id, xmin::text FROM helix.hook_events ORDER BY id") == versions

    # new hook events follow; one deleted here is deleted there
    add_hooks(db, 2, prefix="make lint")
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM hook_events WHERE id = 1")
    con.close()
    assert dict(local(db, "SELECT tbl, count(*) FROM fleet_outbox GROUP BY 1")) == {"hook": 3}
    asyncio.run(push_once(db, tgt))
    assert tier2_server(pg_db, "laptop") == tier2_local(db)
    assert server(pg_db, "SELECT count(*) FROM helix.hook_events WHERE id = 1") == [(0,)]


def test_two_machines_hook_events_and_acceptance_sum(make_store: Any, pg_db: str) -> None:
    a, b = make_store("both", "a"), make_store("claude", "b")
    add_hooks(a, 5)
    add_hooks(b, 3)
    asyncio.run(push_once(a, target(pg_db, "a")))
    asyncio.run(push_once(b, target(pg_db, "b", user="bob")))
    for sql_local, sql_server in (
        ("SELECT count(*) FROM hook_events", "SELECT count(*) FROM helix.hook_events"),
        (
            "SELECT count(*) FROM file_operations WHERE accepted = 1",
            "SELECT count(*) FROM helix.file_operations WHERE accepted = 1",
        ),
        (
            "SELECT count(*) FROM sessions WHERE domain IS NOT NULL",
            "SELECT count(*) FROM helix.sessions WHERE domain IS NOT NULL",
        ),
    ):
        total = local(a, sql_local)[0][0] + local(b, sql_local)[0][0]
        assert total > 0 and server(pg_db, sql_server) == [(total,)], sql_server
    assert tier2_server(pg_db, "a") == tier2_local(a)
    assert tier2_server(pg_db, "b") == tier2_local(b)


def test_a_store_that_pushed_before_m020_sends_the_new_columns_of_rows_sent(
    make_store: Any, pg_db: str
) -> None:
    """As after an upgrade: the server holds the rows without the new columns (as pushed by
    a Helix before m020); the store's m020 enqueues them once, and the next push fills them."""
    db = make_store("both")
    add_hooks(db, 4)
    tgt = target(pg_db)
    asyncio.run(push_once(db, tgt))
    server(
        pg_db,
        "UPDATE helix.sessions SET repo_root = NULL, domain = NULL, task_ref = NULL,"
        " git_commit = NULL; UPDATE helix.file_operations SET accepted = NULL;"
        " DELETE FROM helix.hook_events",
    )
    # m020 again, on a store whose mirror is on and whose outbox is empty
    con = sqlite3.connect(db)
    with con:
        for (name,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'fleet_hook_%'"
        ).fetchall():
            con.execute(f"DROP TRIGGER {name}")
        con.execute("DELETE FROM migrations WHERE name = 'm020_fleet_tier2_rest'")
    con.close()
    assert local(db, "SELECT count(*) FROM fleet_outbox") == [(0,)]

    async def reopen() -> None:
        await (await Store.open(db)).close()

    asyncio.run(reopen())
    queued = dict(local(db, "SELECT tbl, count(*) FROM fleet_outbox GROUP BY 1"))
    assert queued == {
        "session": local(db, "SELECT count(*) FROM sessions")[0][0],
        "signals": local(db, "SELECT count(DISTINCT session_id) FROM file_operations")[0][0],
        "hook": 4,
    }
    asyncio.run(push_once(db, tgt))
    assert tier2_server(pg_db, "laptop") == tier2_local(db)
    asyncio.run(reopen())  # applied once: nothing enqueued again
    assert local(db, "SELECT count(*) FROM fleet_outbox") == [(0,)]


def test_m020_enqueues_nothing_when_the_mirror_is_off(make_store: Any) -> None:
    db = make_store("claude")
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM migrations WHERE name = 'm020_fleet_tier2_rest'")
        for (name,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'fleet_hook_%'"
        ).fetchall():
            con.execute(f"DROP TRIGGER {name}")
    con.close()

    async def reopen() -> None:
        await (await Store.open(db)).close()

    asyncio.run(reopen())
    add_hooks(db, 2)
    assert local(db, "SELECT count(*) FROM fleet_outbox") == [(0,)]

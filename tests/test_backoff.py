"""The pieces the daemon's fault handling is built from: capped exponential backoff, the
work queue's deferred items (a failing file waits without blocking the others or keeping
the queue busy), per-file failures and the store's health record."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from helixd.daemon.health import LOCKED_CAP, Backoff, FileFailures, StoreHealth
from helixd.daemon.workqueue import WorkQueue
from helixd.store.faults import StoreFault


def test_backoff_doubles_up_to_its_cap() -> None:
    b = Backoff(base=0.5, cap=4)
    assert [b.fail() for _ in range(6)] == [0.5, 1, 2, 4, 4, 4]
    assert Backoff(base=1, cap=100).fail(cap=0.25) == 0.25


async def test_a_deferred_item_waits_without_blocking_others_or_the_idle_state() -> None:
    q = WorkQueue(debounce=0)
    q.put("bad")
    assert await q.get() == "bad"
    q.defer("bad", 0.3)
    q.done()
    assert q.statistics().deferred == 1 and not q.busy()
    await asyncio.wait_for(q.wait_idle(), 0.1)  # a failing file does not hold up `flush`
    q.put("bad")  # a file event meanwhile does not cut the backoff short
    q.put("good")
    started = time.monotonic()
    assert await q.get() == "good"
    assert time.monotonic() - started < 0.1
    q.done()
    assert await asyncio.wait_for(q.get(), 1) == "bad"
    assert time.monotonic() - started >= 0.25
    q.done()


def test_file_failures_back_off_per_file_and_clear_on_success() -> None:
    files = FileFailures(base=2, cap=8)
    assert files.failed("/a", "PermissionError: denied") == 2
    assert files.failed("/a", "PermissionError: denied") == 4
    assert files.wait_for("/a") > 3 and files.wait_for("/b") == 0
    doc = files.describe()
    assert doc["count"] == 1 and doc["files"][0]["failures"] == 2
    files.succeeded("/a")
    assert files.describe()["count"] == 0 and files.wait_for("/a") == 0


def test_store_health_names_the_latest_fault_and_clears_per_job(tmp_path: Path) -> None:
    health = StoreHealth(base=1, cap=30)
    db = tmp_path / "helix.db"
    assert health.failed("ingest", StoreFault("locked", db, "database is locked")) == 1
    assert health.failed("ingest", StoreFault("locked", db)) == 2
    for _ in range(5):
        delay = health.failed("ingest", StoreFault("locked", db))
    assert delay == LOCKED_CAP  # a lock is looked at again soon
    health.failed("evict", StoreFault("disk_full", db, "database or disk is full"))
    doc = health.describe()
    assert doc is not None and set(doc["jobs"]) == {"ingest", "evict"}
    health.ok("ingest")
    assert health.fault is not None and health.fault.kind == "disk_full"
    health.ok("evict")
    assert health.fault is None and health.describe() is None and health.recoveries == 2

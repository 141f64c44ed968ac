"""Nothing lost, nothing doubled: PostgreSQL SIGKILLed in the middle of a push (then
restarted: crash recovery), or the pushing process SIGKILLed, again and again; the next push
leaves the server with exactly the store's Tier 2."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import REPO, cli_env
from tests.fleet.helpers import local, tier2_local, tier2_server
from tests.fleet.pgcluster import Cluster


def start_push(db: Path, dsn: str, batch_rows: int) -> subprocess.Popen[str]:
    env = cli_env(
        db.parent,
        db,
        HELIX_FLEET__DSN=dsn,
        HELIX_FLEET__MACHINE="laptop",
        HELIX_FLEET__BATCH_ROWS=str(batch_rows),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "helixd.cli.main", "fleet", "push"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def shipped(dsn: str, conn: psycopg.Connection[Any] | None = None) -> int:
    """The server's watermark for the machine, 0 before its first batch (or on error)."""
    try:
        if conn is None:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=2) as own:
                return shipped(dsn, own)
        (ready,) = conn.execute("SELECT to_regclass('helix.machines')").fetchone() or (None,)
        if ready is None:
            return 0
        row = conn.execute("SELECT coalesce(max(shipped_through), 0) FROM helix.machines")
        return int(row.fetchone()[0])  # type: ignore[index]
    except psycopg.Error:
        return 0


def wait_past(proc: subprocess.Popen[str], dsn: str, mark: int) -> bool:
    """Wait until the server confirmed past ``mark``; False when the push ended first."""
    deadline = time.monotonic() + 60
    with psycopg.connect(dsn, autocommit=True, connect_timeout=2) as conn:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if shipped(dsn, conn) > mark:
                return True
            time.sleep(0.002)
    raise AssertionError("the push made no progress")


@pytest.fixture
def fleet_db(pg_own: Cluster) -> str:
    pg_own.sql("CREATE DATABASE fleet")
    return pg_own.dsn("fleet")


def test_postgres_killed_mid_push_and_restarted_loses_and_doubles_nothing(
    make_store: Any, pg_own: Cluster, fleet_db: str
) -> None:
    db = make_store("both")
    entries = local(db, "SELECT count(*) FROM sessions")[0][0]
    assert entries > 20
    rng = random.Random(17)
    kills = 0
    for _ in range(3):
        proc = start_push(db, fleet_db, batch_rows=7)
        if not wait_past(proc, fleet_db, shipped(fleet_db) + rng.randint(0, 300)):
            proc.communicate(timeout=60)
            break  # it finished: nothing left to interrupt
        pg_own.kill()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, err
        assert "push failed" in err
        kills += 1
        pg_own.start()  # crash recovery
        waiting = local(db, "SELECT count(*) FROM fleet_outbox")[0][0]
        assert waiting > 0
    assert kills >= 2, "the push finished before the server could be killed: grow the store"
    final = start_push(db, fleet_db, batch_rows=500)
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    assert tier2_server(fleet_db, "laptop") == tier2_local(db)
    assert local(db, "SELECT count(*) FROM fleet_outbox") == [(0,)]


def test_the_pusher_killed_mid_push_loses_and_doubles_nothing(make_store: Any, pg_db: str) -> None:
    db = make_store("both")
    rng = random.Random(5)
    kills = 0
    for _ in range(3):
        proc = start_push(db, pg_db, batch_rows=7)
        if not wait_past(proc, pg_db, shipped(pg_db) + rng.randint(0, 300)):
            proc.communicate(timeout=60)
            break
        time.sleep(rng.uniform(0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        kills += proc.returncode == -signal.SIGKILL
    assert kills >= 2, "the push finished before it could be killed: grow the store"
    final = start_push(db, pg_db, batch_rows=500)
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    assert tier2_server(pg_db, "laptop") == tier2_local(db)
    # the server may have committed batches the pusher never confirmed: they were sent
    # again, as upserts of the same state
    (mark,) = local(db, "SELECT value FROM meta WHERE key = 'fleet_watermark'")
    assert shipped(pg_db) == int(mark[0])

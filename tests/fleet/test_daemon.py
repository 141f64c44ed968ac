"""The daemon's fleet job: what helixd ingests reaches PostgreSQL by itself; while the server
is away the outbox grows, pushes back off, status and doctor say so; when it is back,
everything arrives once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.fleet.backoff import retry_delay
from tests.conftest import REPO
from tests.daemon_helpers import SID, Helixd, line, wait_for
from tests.fleet.helpers import helixctl_on, server, tier2_local, tier2_server
from tests.fleet.pgcluster import Cluster


def test_retry_delays_double_up_to_the_cap() -> None:
    assert [retry_delay(n, 2, 30) for n in range(7)] == [0, 2, 4, 8, 16, 30, 30]
    assert retry_delay(1, 2, 30, jitter=0.99) == pytest.approx(2.495)
    assert retry_delay(9, 2, 30, jitter=0.99) == 30  # the cap holds with jitter
    assert retry_delay(10_000, 1, 300) == 300


def status(d: Helixd) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(d.ctl("status", "--json").stdout)
    return doc


def write(home: Path, start: int, stop: int) -> None:
    path = home / ".claude" / "projects" / "-work-live" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        f.write(
            b"".join(line(n, "user" if n % 2 == 0 else "assistant") for n in range(start, stop))
        )


def test_the_daemon_pushes_backs_off_while_postgres_is_away_then_catches_up(
    home: Path, tmp_path: Path, pg_own: Cluster
) -> None:
    pg_own.sql("CREATE DATABASE fleet")
    dsn = pg_own.dsn("fleet")
    pg_own.stop()
    write(home, 0, 10)
    d = Helixd(home, tmp_path / "store" / "helix.db")
    d.env.update(
        HELIX_FLEET__DSN=dsn,
        HELIX_FLEET__MACHINE="devbox",
        HELIX_FLEET__PUSH_SECONDS="0.3",
        HELIX_FLEET__RETRY_MAX_SECONDS="1",
        HELIX_FLEET__CONNECT_TIMEOUT_SECONDS="2",
    )
    d.start()
    try:

        def failing() -> bool:
            doc = status(d)
            job = (doc["daemon"].get("jobs") or {}).get("fleet") or {}
            return doc.get("fleet", {}).get("failures", 0) >= 2 and job.get("ok") is False

        wait_for(failing, 30, "failed pushes")  # (the daemon publishes its jobs every 2 s)
        doc = status(d)
        job = doc["daemon"]["jobs"]["fleet"]
        assert job["ok"] is False and "next try in" in job["error"]
        assert "cannot connect" in doc["fleet"]["last_error"]
        waiting = doc["fleet"]["pending"]
        assert waiting > 0 and doc["fleet"]["recording"]
        write(home, 10, 20)  # the server is still away: the outbox keeps the new rows
        wait_for(lambda: status(d)["fleet"]["pending"] > waiting, 30, "the outbox to grow")
        text = d.ctl("status").stdout
        assert "fleet:" in text and "FAILED" in text
        doctor = d.ctl("doctor", "--json")
        check = next(c for c in orjson.loads(doctor.stdout)["checks"] if c["name"] == "fleet")
        assert check["level"] == "fail" and "cannot reach" in check["message"]

        pg_own.start()

        def caught_up() -> bool:
            doc = status(d)
            return doc["fleet"]["pending"] == 0 and doc["daemon"]["jobs"]["fleet"]["ok"] is True

        wait_for(caught_up, 30, "the catch-up push")
        doc = status(d)
        assert doc["fleet"]["failures"] == 0 and doc["fleet"]["last_error"] is None
        assert doc["daemon"]["jobs"]["fleet"]["ok"] is True
        uid = f"claude:{SID}"
        assert server(dsn, "SELECT count(*) FROM helix.usage WHERE session_uid = %s", (uid,)) == [
            (10,)
        ]
        write(home, 20, 24)  # and from now on, as it comes
        wait_for(
            lambda: (
                server(dsn, "SELECT count(*) FROM helix.usage WHERE session_uid = %s", (uid,))
                == [(12,)]
            ),
            30,
            "a new response on the server",
        )
        ok = next(
            c
            for c in orjson.loads(d.ctl("doctor", "--json").stdout)["checks"]
            if c["name"] == "fleet"
        )
        assert ok["level"] == "ok" and "1 machines" in ok["message"]
        fleet = d.ctl("fleet", "status", "--json")
        assert fleet.returncode == 0, fleet.stderr
        machines = orjson.loads(fleet.stdout)["server"]["machines"]
        assert [m["machine"] for m in machines] == ["devbox"]
    finally:
        d.stop()
    assert tier2_server(dsn, "devbox") == tier2_local(d.db)


def test_without_a_fleet_no_driver_is_loaded_and_status_says_nothing_of_it(make_store: Any) -> None:
    code = "import sys, helixd.daemon.app, helixd.cli.daemonctl; print('psycopg' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
    db = make_store("claude")
    proc = helixctl_on(db, "status", "--json")
    assert "fleet" not in orjson.loads(proc.stdout)

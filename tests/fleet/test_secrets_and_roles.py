"""The password: never in the config, from the environment or a 0600 file, never in a message,
a log line or a status document.  Roles: each machine's role writes only its own rows, a
reader reads them all and writes none."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from helixd.fleet.push import PushError
from tests.conftest import REPO, cli_env
from tests.fleet.helpers import helixctl_on, push_once, server, target
from tests.fleet.pgcluster import Cluster

SECRET = "pw-Zq81-never-shown"


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://alice:{SECRET}@db.example/helix",
        f"postgres://db.example/helix?password={SECRET}",
        f"host=db.example dbname=helix password={SECRET}",
        f"host=db.example password = '{SECRET}'",
    ],
)
def test_every_form_of_a_password_in_the_connection_string_is_found(dsn: str) -> None:
    from helixd.readconfig import dsn_has_password

    assert dsn_has_password(dsn)
    for clean in (
        "postgresql://alice@db.example/helix?sslmode=require",
        "postgresql:///helix?host=/run/postgresql",
        "host=db.example dbname=helix passfile=/home/a/.pgpass",
    ):
        assert not dsn_has_password(clean)


def test_a_connection_string_with_a_password_is_refused_and_not_echoed(make_store: Any) -> None:
    db = make_store("claude")
    dsn = f"postgresql://alice:{SECRET}@db.example/helix"
    for args in (("fleet", "push"), ("report", "daily", "--fleet"), ("status",)):
        proc = helixctl_on(db, *args, HELIX_FLEET__DSN=dsn)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "must not carry a password" in proc.stderr
        assert SECRET not in proc.stderr + proc.stdout
    cfg = db.parent / "config.toml"
    cfg.write_text(f"[fleet]\ndsn = {dsn!r}\n")
    daemon = subprocess.run(
        [sys.executable, "-m", "helixd.daemon.app", "--config", str(cfg)],
        env=cli_env(db.parent, db),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert daemon.returncode == 2 and "must not carry a password" in daemon.stderr
    assert SECRET not in daemon.stderr


@pytest.fixture
def pusher(pg_server: Cluster, pg_db: str) -> Iterator[tuple[str, str]]:
    """A login role with a password (SCRAM), allowed to push: ``(role, dsn as that role)``."""
    role = f"m_{uuid.uuid4().hex[:8]}"
    dbname = pg_db.split("dbname=")[1].split()[0]
    pg_server.sql(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
    pg_server.sql(f"GRANT CREATE ON DATABASE {dbname} TO {role}")
    yield role, pg_server.dsn(dbname, role)
    pg_server.sql(f"DROP OWNED BY {role} CASCADE", dbname)
    pg_server.sql(f"DROP ROLE {role}")


def test_the_password_comes_from_the_environment_or_a_0600_file(
    make_store: Any, pusher: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from helixd.fleet.secret import SecretError
    from helixd.fleet.target import target_from
    from helixd.readconfig import FleetRead

    _, dsn = pusher
    db = make_store("claude")
    without = helixctl_on(db, "fleet", "push", HELIX_FLEET__DSN=dsn)
    assert without.returncode == 3 and "password" in without.stderr
    ok = helixctl_on(db, "fleet", "push", HELIX_FLEET__DSN=dsn, HELIX_FLEET_PASSWORD=SECRET)
    assert ok.returncode == 0, ok.stderr
    secret_file = db.parent / "fleet-password"
    secret_file.write_text(SECRET + "\n")
    secret_file.chmod(0o644)
    section = FleetRead(dsn=dsn, password_file=secret_file)
    with pytest.raises(SecretError, match="readable by others") as loose:
        target_from(section, {})
    assert "chmod 600" in str(loose.value) and SECRET not in str(loose.value)
    secret_file.chmod(0o600)
    tgt = target_from(section, {})
    assert tgt is not None and tgt.password == SECRET and SECRET not in repr(tgt)
    asyncio.run(push_once(db, tgt))
    assert target_from(section, {"HELIX_FLEET_PASSWORD": "env"}).password == "env"  # type: ignore[union-attr]
    monkeypatch.setenv("PGPASSWORD", SECRET)  # libpq's own variable works too
    libpq = target_from(FleetRead(dsn=dsn), {})
    assert libpq is not None and libpq.password is None
    asyncio.run(push_once(db, libpq))


def test_a_wrong_password_shows_nowhere(make_store: Any, pusher: tuple[str, str]) -> None:
    _, dsn = pusher
    db = make_store("claude")
    wrong = "wrong-" + SECRET
    env = {"HELIX_FLEET__DSN": dsn, "HELIX_FLEET_PASSWORD": wrong}
    push = helixctl_on(db, "fleet", "push", **env)
    assert push.returncode == 3 and "password authentication failed" in push.stderr
    outputs = [push.stdout + push.stderr]
    for args in (("status", "--json"), ("fleet", "status", "--json"), ("doctor", "--json")):
        proc = helixctl_on(db, *args, **env)
        outputs.append(proc.stdout + proc.stderr)
    assert '"last_error": "' in outputs[1]  # the failure is shown ...
    assert "password authentication failed" in outputs[2]
    assert all(wrong not in o and SECRET not in o for o in outputs)  # ... never the password
    # the daemon's log, after a few failed pushes
    d = subprocess.Popen(
        [sys.executable, "-m", "helixd.daemon.app"],
        env=cli_env(
            db.parent,
            db,
            HELIX_FLEET__PUSH_SECONDS="0.2",
            HELIX_FLEET__RETRY_MAX_SECONDS="0.4",
            **env,
        ),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = helixctl_on(db, "status", "--json", **env).stdout
            if '"failures": 1,' not in status and '"failures": 0,' not in status:
                break  # two failed pushes or more
            time.sleep(0.2)
        else:
            raise AssertionError(status)
    finally:
        d.terminate()
        _, log = d.communicate(timeout=30)
    assert "password authentication failed" in log and "fleet" in log
    assert wrong not in log and SECRET not in log


def test_each_role_writes_only_its_machines_and_readers_write_nothing(
    make_store: Any, pg_server: Cluster, pg_db: str
) -> None:
    dbname = pg_db.split("dbname=")[1].split()[0]
    tag = uuid.uuid4().hex[:6]
    alice, bob, carol = (f"{n}_{tag}" for n in ("alice", "bob", "carol"))
    # What docs/operations.md tells the administrator to run (group roles, then migrate).
    for stmt in (
        "DO $$ BEGIN CREATE ROLE helix_pusher NOLOGIN; EXCEPTION WHEN duplicate_object THEN"
        " NULL; END $$",
        "DO $$ BEGIN CREATE ROLE helix_reader NOLOGIN; EXCEPTION WHEN duplicate_object THEN"
        " NULL; END $$",
        f"CREATE ROLE {alice} LOGIN PASSWORD '{SECRET}' IN ROLE helix_pusher",
        f"CREATE ROLE {bob} LOGIN PASSWORD '{SECRET}' IN ROLE helix_pusher",
        f"CREATE ROLE {carol} LOGIN PASSWORD '{SECRET}' IN ROLE helix_reader",
    ):
        pg_server.sql(stmt)
    try:
        migrate = helixctl_on(
            make_store("claude", "admin"), "fleet", "migrate", HELIX_FLEET__DSN=pg_db
        )
        assert migrate.returncode == 0 and "p001_mirror" in migrate.stdout, migrate.stderr
        a, b = make_store("claude", "a"), make_store("claude", "b")
        as_alice = target(pg_server.dsn(dbname, alice), "laptop", password=SECRET)
        as_bob = target(pg_server.dsn(dbname, bob), "desktop", user="bob", password=SECRET)
        asyncio.run(push_once(a, as_alice))
        asyncio.run(push_once(b, as_bob))
        ((a_id,),) = server(pg_db, "SELECT machine_id FROM helix.machines WHERE name = 'laptop'")
        with psycopg.connect(pg_server.dsn(dbname, bob), password=SECRET, autocommit=True) as c:
            cur = c.execute("UPDATE helix.usage SET output = 0 WHERE machine_id = %s", (a_id,))
            assert cur.rowcount == 0  # alice's rows are not bob's to change
            assert (
                c.execute("DELETE FROM helix.sessions WHERE machine_id = %s", (a_id,)).rowcount == 0
            )
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                c.execute(
                    "INSERT INTO helix.sessions (machine_id, uid, agent, native_id, ended,"
                    " messages, events, evict_stage) VALUES (%s, 'x', 'claude', 'x', 0, 0, 0, 0)",
                    (a_id,),
                )
            seen = c.execute("SELECT count(DISTINCT machine_id) FROM helix.usage").fetchone()
            assert seen == (2,)  # but every machine's rows are readable
        with psycopg.connect(pg_server.dsn(dbname, carol), password=SECRET, autocommit=True) as c:
            assert c.execute("SELECT count(*) FROM helix.machines").fetchone() == (2,)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("DELETE FROM helix.usage")
        # alice's store pushed with bob's credentials: refused, named
        with pytest.raises(PushError, match="registered to the role"):
            asyncio.run(push_once(a, target(pg_server.dsn(dbname, bob), password=SECRET)))
        report = helixctl_on(
            a,
            "report",
            "daily",
            "--fleet",
            "--json",
            HELIX_FLEET__DSN=pg_server.dsn(dbname, carol),
            HELIX_FLEET_PASSWORD=SECRET,
        )
        assert report.returncode == 0, report.stderr
    finally:
        for role in (alice, bob, carol):
            pg_server.sql(f"DROP OWNED BY {role} CASCADE", dbname)
            pg_server.sql(f"DROP ROLE {role}")
        for role in ("helix_pusher", "helix_reader"):
            pg_server.sql(f"DROP OWNED BY {role} CASCADE", dbname)
            pg_server.sql(f"DROP ROLE {role}")

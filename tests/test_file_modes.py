"""What Helix writes is the user's alone, whatever the umask (issue 11, item 5): the store
directory 0700; the database, its WAL and SHM, the status file, the pid lock, the hook spool
and hook backups 0600; a store an older version left 0644 is fixed when opened.  Real
processes (the daemon, ``helixctl``) started under umasks 022, 002 and 000."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_env
from tests.daemon_helpers import SID, line, project, wait_for

UMASKS = [0o022, 0o002, 0o000]


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def with_umask(value: int) -> Callable[[], None]:
    return lambda: os.umask(value) and None


def run(env: dict[str, str], umask: int, *args: str, stdin: bytes = b"") -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", *args],
        env=env,
        cwd=REPO,
        input=stdin,
        capture_output=True,
        timeout=60,
        preexec_fn=with_umask(umask),
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("umask", UMASKS, ids=lambda u: f"umask-{u:03o}")
def test_the_daemon_writes_nothing_others_can_read(home: Path, tmp_path: Path, umask: int) -> None:
    (project(home) / f"{SID}.jsonl").write_bytes(line(0) + line(1, "assistant"))
    db = tmp_path / "data" / "helix" / "helix.db"
    env = cli_env(home, db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.daemon.app"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=with_umask(umask),
    )
    try:
        status = db.with_name("helix.db.helixd.json")
        wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
        wait_for(lambda: status.exists() and wal.exists() and shm.exists(), 15, "the daemon")
        private = {
            db.parent: 0o700,
            db.parent.parent: 0o700,  # a missing parent Helix had to create
            db: 0o600,
            wal: 0o600,
            shm: 0o600,
            status: 0o600,
            db.with_name("helix.db.helixd.lock"): 0o600,
            Path(env["HELIX_SOCKET"]): 0o600,
        }
        assert {p: oct(mode(p)) for p in private} == {p: oct(m) for p, m in private.items()}
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("umask", UMASKS, ids=lambda u: f"umask-{u:03o}")
def test_the_cli_store_spool_and_backups_are_private(
    home: Path, tmp_path: Path, umask: int
) -> None:
    (project(home) / f"{SID}.jsonl").write_bytes(line(0))
    db = tmp_path / "cli" / "helix.db"
    env = cli_env(home, db)
    run(env, umask, "ingest")
    assert (mode(db.parent), mode(db)) == (0o700, 0o600)
    # the spool, written while no daemon listens
    payload = json.dumps({"session_id": SID, "hook_event_name": "Stop"}).encode()
    run(env, umask, "hook", "claude", stdin=payload)
    spool = Path(env["HELIX_STATE_DIR"]) / "hook-spool.ndjson"
    assert spool.exists() and (mode(spool.parent), mode(spool)) == (0o700, 0o600)
    # a backup of the settings file `hooks install` edits
    (home / ".claude" / "settings.json").write_text('{"hooks": {}}\n')
    run(env, umask, "hooks", "install", "claude", "--helixctl", "/opt/helix/bin/helixctl")
    backups = list((Path(env["HELIX_STATE_DIR"]) / "backups").rglob("settings.json.*"))
    assert len(backups) == 1
    assert {oct(mode(p)) for p in (backups[0].parent, backups[0].parent.parent)} == {"0o700"}
    assert mode(backups[0]) == 0o600


def test_a_store_an_older_version_left_readable_is_fixed_on_open(
    home: Path, tmp_path: Path
) -> None:
    db = tmp_path / "old" / "helix.db"
    db.parent.mkdir()
    db.parent.chmod(0o755)
    con = sqlite3.connect(db)  # what an older Helix left: WAL mode, 0644 files
    con.execute("PRAGMA journal_mode = WAL")
    con.execute(  # (a Helix store: a foreign database is never written into)
        "CREATE TABLE migrations"
        " (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, applied_at INTEGER NOT NULL)"
    )
    con.commit()
    old = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), db.with_name("helix.db.helixd.json")]
    old[3].write_text("{}")
    for p in old:
        p.chmod(0o644)
    lock = db.with_name("helix.db.helixd.lock")
    lock.write_text("")
    lock.chmod(0o644)
    env = cli_env(home, db)
    run(env, 0o022, "ingest")
    con.close()
    assert mode(db.parent) == 0o700
    assert {p.name: oct(mode(p)) for p in old[:3] if p.exists()} == {
        p.name: "0o600" for p in old[:3] if p.exists()
    }
    assert mode(db) == 0o600
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.daemon.app"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # the daemon's own files are fixed when it takes them over
        wait_for(lambda: mode(old[3]) == 0o600 and mode(lock) == 0o600, 15, "the daemon")
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_spool_is_never_written_through_a_link(home: Path, tmp_path: Path) -> None:
    env = cli_env(home, tmp_path / "s" / "helix.db")
    state = Path(env["HELIX_STATE_DIR"])
    state.mkdir(parents=True)
    victim = tmp_path / "bashrc"
    victim.write_text("# mine\n")
    (state / "hook-spool.ndjson").symlink_to(victim)
    run(env, 0o022, "hook", "claude", stdin=b'{"hook_event_name":"Stop"}')
    assert victim.read_text() == "# mine\n"


def test_a_shared_directory_is_never_tightened(tmp_path: Path) -> None:
    """The socket or store may sit in a shared sticky directory such as /tmp: Helix makes
    its own files private there and leaves the directory's mode alone."""
    from helixd.filemodes import private_dir

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert private_dir(shared) is False and mode(shared) == 0o1777
    own = shared / "helix"
    assert private_dir(own) is True and mode(own) == 0o700
    shutil.rmtree(own)


def test_a_store_database_linked_elsewhere_is_still_opened(home: Path, tmp_path: Path) -> None:
    """The database path is the user's configuration: a link there is followed (the files
    Helix names itself, spool, lock, status, are never written through a link)."""
    real = tmp_path / "bigdisk" / "helix.db"
    real.parent.mkdir()
    db = tmp_path / "data" / "helix.db"
    db.parent.mkdir()
    db.symlink_to(real)
    (project(home) / f"{SID}.jsonl").write_bytes(line(0))
    run(cli_env(home, db), 0o022, "ingest")
    assert db.is_symlink() and real.stat().st_size > 0 and mode(real) == 0o600

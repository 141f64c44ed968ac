"""`helixctl doctor` names what is wrong with the store, and the fix: corrupt (a damaged
header, damaged pages), read-only, locked by another process, deleted or replaced under
the daemon, a full disk — over real files, a real lock and a real small file system."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from helixd.ops import checks
from helixd.store.database import Store
from tests.conftest import RunCli, cli_env, copy_claude_fixtures
from tests.fault_helpers import LockHolder, damage_header, fill, small_filesystem
from tests.test_doctor import run_doctor


def store_check(home: Path, db: Path) -> dict[str, Any]:
    _, doc = run_doctor(cli_env(home, db))
    found: dict[str, Any] = next(c for c in doc["checks"] if c["name"] == "store")  # type: ignore[union-attr]
    return found


def ingested(home: Path, helixctl: RunCli) -> Path:
    copy_claude_fixtures(home)
    helixctl("ingest")
    db: Path = helixctl.db  # type: ignore[attr-defined]
    return db


def test_doctor_passes_a_healthy_store_and_fails_a_damaged_header(
    home: Path, helixctl: RunCli
) -> None:
    db = ingested(home, helixctl)
    check = store_check(home, db)
    assert check["level"] == "ok" and "quick_check ok" in check["message"]
    damage_header(db)
    check = store_check(home, db)
    assert check["level"] == "fail" and "corrupt" in check["message"]
    assert "move" in check["fix"] and "helixctl ingest" in check["fix"]


def test_doctor_finds_damaged_pages_with_a_bounded_quick_check(
    home: Path, helixctl: RunCli
) -> None:
    db = ingested(home, helixctl)
    size = db.stat().st_size
    with open(db, "r+b") as f:  # scribble over a page in the middle of the file
        f.seek((size // 4096 // 2) * 4096)
        f.write(os.urandom(4096))
    check = store_check(home, db)
    assert check["level"] == "fail" and "integrity" in check["message"], check


def test_doctor_says_read_only_and_how_to_fix_it(home: Path, helixctl: RunCli) -> None:
    db = ingested(home, helixctl)
    os.chmod(db, 0o444)
    try:
        check = store_check(home, db)
        assert check["level"] == "fail" and "read-only" in check["message"]
        assert "chmod" in check["fix"]
    finally:
        os.chmod(db, 0o644)


def test_doctor_warns_about_a_lock_held_by_another_process(home: Path, helixctl: RunCli) -> None:
    db = ingested(home, helixctl)
    with LockHolder(db):
        check = store_check(home, db)
    assert check["level"] == "warn" and "locked by another process" in check["message"]


async def test_doctor_names_a_store_deleted_or_replaced_under_the_daemon(tmp_path: Path) -> None:
    """The daemon publishes the identity of the file it has open; doctor compares."""
    db = tmp_path / "helix.db"
    await (await Store.open(db)).close()
    st = db.stat()
    live = {"store_identity": [st.st_dev, st.st_ino]}
    assert checks.store(db, live).level == "ok"
    other = tmp_path / "other.db"
    shutil.copy(db, other)
    os.replace(other, db)
    replaced = checks.store(db, live)
    assert replaced.level == "fail" and "replaced" in replaced.message
    db.unlink()
    deleted = checks.store(db, live)
    assert deleted.level == "fail" and "deleted" in deleted.message
    assert "writes the store it has open back" in deleted.fix


def test_doctor_reports_the_fault_the_daemon_meets() -> None:
    live = {
        "store_fault": {
            "kind": "disk_full",
            "condition": "is on a full disk",
            "detail": "database or disk is full",
            "fix": "free space",
        },
        "failing_files": {"count": 1, "files": [{"path": "/x.jsonl", "error": "EACCES"}]},
        "status_file_error": {"path": "/s.json", "error": "No space left on device"},
    }
    result = checks.run_all(Path("/nonexistent/helix.db"), [], [], 1, {}, Path("/"), live)
    named = {c.name: c for c in result}
    assert named["store"].level == "fail" and "full disk" in named["store"].message
    assert named["files"].level == "warn" and "/x.jsonl: EACCES" in named["files"].message
    assert named["status-file"].level == "warn"


def test_doctor_fails_a_full_disk(home: Path, tmp_path: Path) -> None:
    copy_claude_fixtures(home)
    with small_filesystem(tmp_path / "fs", 16 * 1024) as fs:
        db = fs / "store" / "helix.db"
        env = cli_env(home, db)
        from tests.test_faults_cli import run

        assert run(env, "ingest").returncode == 0
        fill(fs)
        code, doc = run_doctor(env)
        named = {c["name"]: c for c in doc["checks"]}  # type: ignore[union-attr]
        assert code == 1 and named["disk"]["level"] == "fail" and "full" in named["disk"]["message"]

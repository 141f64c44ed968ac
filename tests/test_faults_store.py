"""Store faults under the real daemon: a real ``helixd`` subprocess, real files, a real
SQLite store and real faults — a lock held by another process, a full file system, the
store deleted, its folder removed, the file replaced or its header damaged under the
daemon, a store unusable at start-up, a status file that cannot be written.  Each time the
daemon keeps running, `helixctl status` names the condition, and the work waits and is
done, with nothing lost, once the condition clears — without any new file event (the
reconcile scan is an hour away in these tests)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import REPO
from tests.daemon_helpers import SID, Helixd, line, project, wait_for
from tests.fault_helpers import (
    LockHolder,
    count_rows,
    damage_header,
    fill,
    no_dac_prefix,
    one_line_error,
    restore_header,
    small_filesystem,
)

FAST_RETRY = {"HELIX_DAEMON__BUSY_TIMEOUT_MS": "300", "HELIX_DAEMON__RETRY_MAX_SECONDS": "1"}


class FaultyHelixd(Helixd):
    """``Helixd`` that may start with an unusable store, optionally without root's
    permission override, and reads its state from the socket."""

    def __init__(self, home: Path, db: Path, prefix: list[str] | None = None) -> None:
        super().__init__(home, db)
        self.prefix = prefix or []
        self.env.update(FAST_RETRY)

    def start(self, **extra: str) -> FaultyHelixd:
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "helixd.daemon.app"],
            env={**self.env, **extra},
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_for(lambda: self.ctl("ping").returncode == 0, 20, "daemon to answer")
        return self

    def state(self) -> dict[str, Any]:
        proc = self.ctl("status", "--json")
        doc: dict[str, Any] = orjson.loads(proc.stdout)
        doc["returncode"], doc["stderr"] = proc.returncode, proc.stderr
        return doc

    def fault_kind(self) -> str | None:
        fault = self.state()["store"]["fault"]
        return fault["kind"] if fault else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@pytest.fixture
def helixd(home: Path, tmp_path: Path) -> Any:
    made: list[FaultyHelixd] = []

    def make(db: Path | None = None, prefix: list[str] | None = None) -> FaultyHelixd:
        d = FaultyHelixd(home, db or tmp_path / "store" / "helix.db", prefix)
        made.append(d)
        return d

    yield make
    for d in made:
        if d.proc is not None and d.proc.poll() is None:
            d.stop(signal.SIGKILL)


def session(home: Path, lines: int = 2, sid: str = SID) -> Path:
    f = project(home) / f"{sid}.jsonl"
    f.write_bytes(
        b"".join(line(n, "assistant" if n % 2 else "user", sid=sid) for n in range(lines))
    )
    return f


def append(f: Path, n: int) -> None:
    with f.open("ab") as out:
        out.write(line(n))


def test_a_lock_held_by_another_process_delays_ingest_and_drops_nothing(
    helixd: Any, home: Path
) -> None:
    f = session(home)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 2, 10, "first lines")
    with LockHolder(d.db):
        append(f, 2)
        wait_for(lambda: d.fault_kind() == "locked", 10, "status to say locked")
        state = d.state()
        assert state["returncode"] == 3
        assert "locked by another process" in one_line_error(state["stderr"])
        assert state["daemon"]["queue"]["pending"] + state["daemon"]["queue"]["in_progress"] >= 1
        assert count_rows(d.db) == 2 and d.alive()
    took = wait_for(lambda: count_rows(d.db) == 3, 10, "the queued lines after the lock")
    assert took < 8  # retried every second: a bound, not a new file event
    wait_for(lambda: d.fault_kind() is None, 5, "the fault to clear")
    assert d.stop() == 0


def test_scheduled_jobs_meeting_a_lock_are_retried_with_backoff(helixd: Any, home: Path) -> None:
    session(home)
    first = helixd().start()
    wait_for(lambda: count_rows(first.db) == 2, 10, "first lines")
    wait_for(lambda: first.lookup(SID) is not None, 15, "the digest")
    assert first.stop() == 0
    with LockHolder(first.db):
        # The fixtures are old: with a one-day age backstop the evict job has Tier 1 to drop,
        # so it must write, and meets the lock (held since before this daemon started).
        d = helixd().start(HELIX_DAEMON__EVICT_SECONDS="1", HELIX_RETENTION__RAW_MAX_AGE_DAYS="1")

        def evict_waits() -> bool:
            fault = d.state()["daemon"].get("store_fault") or {}
            return "evict" in (fault.get("jobs") or {})

        wait_for(evict_waits, 15, "the evict job to meet the lock")
        assert d.alive()
    wait_for(lambda: d.fault_kind() is None, 15, "the evict job to succeed again")
    wait_for(lambda: d.state()["daemon"]["jobs"]["evict"]["ok"] is True, 10, "evict ok")
    assert d.stop() == 0


def test_a_full_disk_keeps_the_daemon_running_and_work_resumes_when_space_returns(
    helixd: Any, home: Path, tmp_path: Path
) -> None:
    f = session(home, 4)
    with small_filesystem(tmp_path / "fs", 8 * 1024) as fs:
        d = helixd(fs / "store" / "helix.db").start()
        wait_for(lambda: count_rows(d.db) == 4, 10, "first lines")
        filler = fill(fs)
        append(f, 4)
        wait_for(lambda: d.fault_kind() == "disk_full", 15, "status to say disk full")
        state = d.state()
        assert "full disk" in one_line_error(state["stderr"]) and state["returncode"] == 3
        assert "df -h" in state["store"]["fault"]["fix"]
        wait_for(  # its status file cannot be written either; status asks the socket
            lambda: d.state()["daemon"]["status_file_error"] is not None, 10, "status file error"
        )
        ingest = d.ctl("ingest")
        assert ingest.returncode == 3 and "full disk" in one_line_error(ingest.stderr)
        assert d.alive() and count_rows(d.db) == 4
        filler.unlink()
        wait_for(lambda: count_rows(d.db) == 5, 15, "the line written while the disk was full")
        wait_for(lambda: d.fault_kind() is None, 10, "the fault to clear")
        assert d.stop() == 0
    assert "database or disk is full" in d.stderr
    assert "cannot rollback" not in d.stderr


def test_a_store_deleted_under_the_daemon_is_put_back_with_everything_it_held(
    helixd: Any, home: Path
) -> None:
    f = session(home, 6)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 6, 10, "first lines")
    d.db.unlink()  # the -wal and -shm files stay: they must not be replayed into the copy
    append(f, 6)
    wait_for(lambda: d.db.exists() and count_rows(d.db) == 7, 15, "the store back, new line in")
    con = sqlite3.connect(d.db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    assert d.lookup(f"claude:{SID}") is not None
    assert d.alive() and d.stop() == 0
    assert "store_restored" in d.stderr


def test_the_store_folder_removed_under_the_daemon_is_recreated_and_the_lock_retaken(
    helixd: Any, home: Path
) -> None:
    f = session(home, 4)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 4, 10, "first lines")
    shutil.rmtree(d.db.parent)
    append(f, 4)
    wait_for(lambda: d.db.exists() and count_rows(d.db) == 5, 15, "the store back")
    wait_for(lambda: d.ctl("status").returncode == 0, 10, "status to see the daemon again")
    second = d.second()
    assert second.returncode == 1 and "already running" in second.stderr
    assert d.stop() == 0


def test_a_store_replaced_by_a_file_that_is_not_a_store_is_left_alone_until_moved_away(
    helixd: Any, home: Path, tmp_path: Path
) -> None:
    f = session(home, 4)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 4, 10, "first lines")
    stranger = tmp_path / "notes.txt"
    stranger.write_bytes(b"my notes, not a database\n" * 100)
    os.replace(stranger, d.db)
    append(f, 4)
    wait_for(lambda: d.fault_kind() == "replaced", 10, "status to say replaced")
    fault = d.state()["store"]["fault"]
    assert "move the new file away" in fault["fix"]
    assert d.db.read_bytes() == b"my notes, not a database\n" * 100 and d.alive()
    d.db.unlink()  # moved away: the daemon puts back the store it has open
    wait_for(lambda: d.db.exists() and count_rows(d.db) == 5, 15, "the store back, new line in")
    assert d.stop() == 0


def test_a_store_replaced_by_an_older_copy_is_adopted_and_rescanned(
    helixd: Any, home: Path, tmp_path: Path
) -> None:
    f = session(home, 4)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 4, 10, "first lines")
    backup = tmp_path / "backup.db"
    src = sqlite3.connect(f"file:{d.db}?mode=ro", uri=True)
    dst = sqlite3.connect(backup)
    src.backup(dst)
    src.close()
    dst.close()
    append(f, 4)
    append(f, 5)
    wait_for(lambda: count_rows(d.db) == 6, 10, "the new lines")
    os.replace(backup, d.db)  # a backup put back
    wait_for(lambda: count_rows(d.db) == 6, 15, "the adopted store to catch up")
    assert d.alive() and d.fault_kind() is None
    assert d.stop() == 0


def test_a_header_damaged_under_the_daemon_stops_writes_until_repaired(
    helixd: Any, home: Path
) -> None:
    f = session(home, 4)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 4, 10, "first lines")
    old = damage_header(d.db)
    append(f, 4)
    wait_for(lambda: d.fault_kind() == "corrupt", 10, "status to say corrupt")
    sessions = d.ctl("sessions")
    assert sessions.returncode == 3 and "is corrupt" in one_line_error(sessions.stderr)
    assert d.alive()
    restore_header(d.db, old)
    wait_for(lambda: count_rows(d.db) == 5, 15, "the line written while it was corrupt")
    wait_for(lambda: d.fault_kind() is None, 10, "the fault to clear")
    assert d.stop() == 0


def test_a_store_unusable_at_start_up_is_reported_and_used_once_it_is_fixed(
    helixd: Any, home: Path
) -> None:
    first = helixd().start()
    session(home, 2)
    wait_for(lambda: count_rows(first.db) == 2, 10, "first lines")
    assert first.stop() == 0
    os.chmod(first.db.parent, 0o555)
    try:
        d = helixd().start()
        wait_for(lambda: d.fault_kind() == "read_only", 10, "status to say read-only")
        assert "chmod" in d.state()["store"]["fault"]["fix"]
        session(home, 3)
    finally:
        os.chmod(first.db.parent, 0o755)
    wait_for(lambda: count_rows(d.db) == 3, 15, "the store opened once writable")
    assert d.stop() == 0


def test_a_corrupt_store_at_start_up_is_rebuilt_from_the_sources_once_moved_aside(
    helixd: Any, home: Path, tmp_path: Path
) -> None:
    db = tmp_path / "store" / "helix.db"
    db.parent.mkdir()
    db.write_bytes(b"\x00garbage" * 512)
    session(home, 3)
    d = helixd(db).start()
    wait_for(lambda: d.fault_kind() == "corrupt", 10, "status to say corrupt")
    os.replace(db, tmp_path / "aside.db")
    wait_for(lambda: db.exists() and count_rows(db) == 3, 15, "a new store from the sources")
    assert d.stop() == 0


def test_a_status_file_that_cannot_be_written_is_reported_and_retried(
    helixd: Any, home: Path
) -> None:
    f = session(home)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 2, 10, "first lines")
    blocker = d.db.with_name(d.db.name + ".helixd.json")
    while True:  # the status file's own name taken by a folder: a file cannot replace it
        blocker.unlink(missing_ok=True)
        try:
            blocker.mkdir()
            break
        except FileExistsError:  # the daemon published again in between
            continue
    append(f, 2)
    wait_for(lambda: d.state()["daemon"]["status_file_error"] is not None, 10, "the error")
    wait_for(lambda: count_rows(d.db) == 3, 10, "ingest going on")
    blocker.rmdir()
    wait_for(lambda: d.state()["daemon"]["status_file_error"] is None, 10, "recovery")
    published = orjson.loads(d.db.with_name(d.db.name + ".helixd.json").read_bytes())
    assert published["ingest"]["events"] >= 3 and d.stop() == 0


def test_a_file_that_keeps_failing_backs_off_while_the_others_go_on(
    helixd: Any, home: Path
) -> None:
    """Run as root without the permission override, so that chmod 000 makes one
    transcript unreadable to the daemon, as it would be for a normal user."""
    prefix = no_dac_prefix()
    other = "5e55e55e-0000-4000-8000-0000000000bb"
    bad = session(home, 2)
    os.chmod(bad, 0)
    good = session(home, 2, sid=other)
    d = helixd(prefix=prefix).start(
        HELIX_DAEMON__FILE_RETRY_SECONDS="0.5", HELIX_DAEMON__FILE_RETRY_MAX_SECONDS="1"
    )
    wait_for(lambda: count_rows(d.db) == 2, 10, "the readable file")

    def failing() -> list[dict[str, Any]]:
        files: list[dict[str, Any]] = (d.state()["daemon"]["failing_files"] or {}).get("files", [])
        return files

    wait_for(lambda: any(x["path"] == str(bad) for x in failing()), 10, "the failing file")
    entry = next(x for x in failing() if x["path"] == str(bad))
    assert "Permission denied" in entry["error"]
    wait_for(
        lambda: next(x for x in failing() if x["path"] == str(bad))["failures"] >= 2, 10, "retries"
    )
    human = d.ctl("status").stdout
    assert "files failing: 1" in human and str(bad) in human
    doctor = orjson.loads(d.ctl("doctor", "--json").stdout)
    assert any(c["name"] == "files" and str(bad) in c["message"] for c in doctor["checks"])
    append(good, 2)
    wait_for(lambda: count_rows(d.db) == 3, 10, "the other file going on")
    os.chmod(bad, 0o644)
    wait_for(lambda: count_rows(d.db) == 5, 10, "the failing file once readable")
    wait_for(lambda: not failing(), 10, "the failure to clear")
    assert d.stop() == 0


def hook_ping(d: FaultyHelixd, command: str) -> None:
    payload = {
        "hook_event_name": "PostToolUse",
        "session_id": SID,
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "hook", "claude"],
        env=d.env, cwd=REPO, input=orjson.dumps(payload), capture_output=True, timeout=30,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr


def test_hook_activity_met_by_a_lock_is_held_and_written_in_order_once_it_clears(
    helixd: Any, home: Path
) -> None:
    """A hook reply never waits for the store: activity that meets a store fault is held
    (masked already), shown in status, and written in arrival order once the store takes
    writes again — without any further hook ping."""
    session(home)
    d = helixd().start()
    wait_for(lambda: count_rows(d.db) == 2, 10, "first lines")
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    with LockHolder(d.db):
        hook_ping(d, "make first")
        hook_ping(d, f"GH_TOKEN={token} make second")
        held = d.state()["daemon"]["hook_activity"]
        assert held == {"held": 2, "dropped": 0}
        assert d.alive()

    def kept() -> list[str]:
        con = sqlite3.connect(d.db)
        try:
            return [t for (t,) in con.execute("SELECT target FROM hook_events ORDER BY id")]
        finally:
            con.close()

    wait_for(lambda: len(kept()) == 2, 15, "the held activity to be written")
    first, second = kept()
    assert first == "make first" and second.endswith("make second") and token not in second
    wait_for(lambda: d.state()["daemon"]["hook_activity"]["held"] == 0, 5, "nothing held")
    assert d.stop() == 0

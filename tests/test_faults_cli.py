"""`helixctl` facing an unusable store: every command exits 3 with one line naming the
condition and its fix — never a traceback.  Real CLI subprocesses (both entry points: the
full CLI and the light path `report`/`search` take), a real store, real faults."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, cli_env, copy_claude_fixtures
from tests.fault_helpers import LockHolder, damage_header, fill, one_line_error, small_filesystem

READS = [
    ["sessions"],
    ["lookup", "claude:0"],
    ["search", "hello"],
    ["report", "daily"],
    ["stats"],
    ["tokens", "--repo", "/work", "--since", "2020-01-01"],
    ["env", "claude:0"],
]
WRITES = [["ingest"], ["analyze", "--all"], ["evict"], ["renormalize"]]


def run(
    env: dict[str, str], *args: str, entry: str = "helixd.cli.main"
) -> subprocess.CompletedProcess[str]:
    """``helixctl`` as installed (its console script runs ``helixd.cli.main``)."""
    return subprocess.run(
        [sys.executable, "-m", entry, *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def ingested(home: Path, helixctl: RunCli) -> dict[str, str]:
    """A store holding the Claude fixtures; the environment to reach it."""
    copy_claude_fixtures(home)
    helixctl("ingest")
    return cli_env(home, helixctl.db)  # type: ignore[attr-defined]


def store_of(env: dict[str, str]) -> Path:
    return Path(env["HELIX_STORE_DB"])


def append_new_line(home: Path) -> None:
    """Something new for `ingest` to write."""
    target = next((home / ".claude" / "projects").rglob("*.jsonl"))
    with target.open("ab") as f:
        f.write(
            b'{"type":"user","uuid":"fault-1","sessionId":"fault-session","timestamp":'
            b'"2026-01-01T00:00:00Z","message":{"role":"user","content":"new"}}\n'
        )


def assert_store_exit(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode == 3, (proc.args, proc.returncode, proc.stderr)
    line = one_line_error(proc.stderr)
    assert line.startswith("helixctl: store ") and "fix: " in line, line
    for word in words:
        assert word in line, line
    return line


def test_a_corrupt_store_makes_every_command_exit_3_with_one_line(ingested: dict[str, str]) -> None:
    damage_header(store_of(ingested))
    for args in [*READS, *WRITES, ["status"]]:
        assert_store_exit(run(ingested, *args), "is corrupt", "move")
    for args in (["report", "daily"], ["search", "x"], ["sessions"]):  # the full CLI too
        assert_store_exit(run(ingested, *args, entry="helixd.cli.main"), "is corrupt")


def test_a_missing_store_makes_reads_exit_3_and_ingest_create_it(
    home: Path, tmp_path: Path
) -> None:
    env = cli_env(home, tmp_path / "none" / "helix.db")
    for args in [*READS, ["evict"], ["analyze"]]:
        proc = run(env, *args)
        assert proc.returncode == 3, (args, proc.stderr)
        line = one_line_error(proc.stderr)
        assert "helix.db" in line and ("does not exist" in line or "no store" in line), line
    assert run(env, "ingest").returncode == 0
    assert (tmp_path / "none" / "helix.db").exists()


def test_another_database_at_the_path_is_never_written_into(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "foreign.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    before = db.read_bytes()
    env = cli_env(home, db)
    for args in [["ingest"], ["analyze"], ["sessions"], ["report", "daily"], ["stats"]]:
        assert_store_exit(run(env, *args), "not a store this Helix can use")
    assert db.read_bytes() == before


def test_a_read_only_store_refuses_writes_and_still_answers_reads(
    ingested: dict[str, str], home: Path
) -> None:
    db = store_of(ingested)
    append_new_line(home)
    for mode_of in (db, db.parent):
        os.chmod(mode_of, 0o555 if mode_of.is_dir() else 0o444)
        try:
            for args in WRITES:
                assert_store_exit(run(ingested, *args), "is read-only", "chmod")
            for args in (["sessions"], ["search", "hello"], ["report", "daily"], ["stats"]):
                assert run(ingested, *args).returncode == 0, args
        finally:
            os.chmod(mode_of, 0o755 if mode_of.is_dir() else 0o644)
    assert run(ingested, "ingest").returncode == 0  # writable again: it works


def test_a_store_locked_past_the_busy_timeout_makes_writes_exit_3_and_reads_answer(
    ingested: dict[str, str], home: Path
) -> None:
    db = store_of(ingested)
    append_new_line(home)
    with LockHolder(db):
        started = time.monotonic()
        writes = [
            subprocess.Popen(
                [sys.executable, "-m", "helixd.cli.main", *args],
                env=ingested,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for args in (["ingest"], ["analyze", "--all"])
        ]
        for args in (["sessions"], ["search", "hello"], ["stats"], ["lookup", "x"]):
            assert run(ingested, *args).returncode in (0, 1), args  # WAL: readers go on
        for proc in writes:
            _, err = proc.communicate(timeout=60)
            assert_store_exit(
                subprocess.CompletedProcess(proc.args, proc.returncode, "", err),
                "is locked by another process",
            )
        assert time.monotonic() - started < 30
    assert run(ingested, "ingest").returncode == 0


def test_a_full_disk_makes_commands_exit_3_until_space_returns(home: Path, tmp_path: Path) -> None:
    copy_claude_fixtures(home)
    with small_filesystem(tmp_path / "fs", 16 * 1024) as fs:
        env = cli_env(home, fs / "store" / "helix.db")
        assert run(env, "ingest").returncode == 0
        append_new_line(home)
        filler = fill(fs)
        assert_store_exit(run(env, "ingest"), "full disk", "df -h")
        # With no connection open (no daemon), even a reader needs room for the WAL index.
        assert_store_exit(run(env, "sessions"), "full disk")
        filler.unlink()
        assert run(env, "ingest").returncode == 0


def test_status_names_the_store_fault_on_stderr(ingested: dict[str, str]) -> None:
    import orjson

    damage_header(store_of(ingested))
    proc = run(ingested, "status", "--json")
    assert_store_exit(proc, "is corrupt")
    doc = orjson.loads(proc.stdout)
    assert doc["store"]["fault"]["kind"] == "corrupt"
    human = run(ingested, "status")
    assert "FAULT: the store is corrupt" in human.stdout and "fix:" in human.stdout


def test_a_deleted_store_folder_is_missing_for_reads(ingested: dict[str, str]) -> None:
    shutil.rmtree(store_of(ingested).parent)
    assert_store_exit(run(ingested, "sessions"), "does not exist")

"""End to end: the real ``helixd`` as a subprocess over a temporary HOME, with the real
watchdog observer, real files and a real store; ``helixctl`` as a subprocess to look."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.conftest import REPO, cli_env
from tests.daemon_helpers import CODEX, SID, Helixd, line, project, stored_digest, wait_for
from tests.db_snapshot import snapshot
from tests.test_crash import write_corpus


def test_appended_lines_are_visible_to_lookup_within_a_second(daemon: Helixd, home: Path) -> None:
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0) + line(1, "assistant"))
    daemon.start()
    wait_for(lambda: daemon.lookup(f"claude:{SID}") is not None, 5, "first digest")
    with f.open("ab") as fh:
        fh.write(line(2) + line(3, "assistant", "done"))

    def updated(d: dict[str, object] | None) -> bool:
        return d is not None and d["cost"]["output_tokens"] == 1 + 3  # type: ignore[index]

    took = wait_for(lambda: updated(stored_digest(daemon.db, f"claude:{SID}")), 5, "new usage")
    assert took < 1.0
    assert updated(daemon.lookup(SID))  # and `helixctl lookup` shows it
    assert daemon.stop() == 0


def test_new_project_dir_and_new_codex_date_folder_are_picked_up(
    daemon: Helixd, home: Path
) -> None:
    daemon.start()
    sid2 = "5e55e55e-0000-4000-8000-000000000002"
    (project(home, "-brand-new") / f"{sid2}.jsonl").write_bytes(line(0, sid=sid2))
    day = home / ".codex" / "sessions" / "2026" / "11" / "26"
    day.mkdir(parents=True)  # mkdir -p of a root that did not exist, then a write at once
    shutil.copy(CODEX, day / CODEX.name)
    wait_for(lambda: daemon.lookup(f"claude:{sid2}") is not None, 5, "new project dir")

    def codex_sessions() -> int:
        return len(orjson.loads(daemon.ctl("sessions", "--agent", "codex", "--json").stdout))

    wait_for(lambda: codex_sessions() == 1, 5, "new Codex date folder")
    assert daemon.stop() == 0


def test_truncation_replacement_rename_and_deletion_leave_the_store_right(
    daemon: Helixd, home: Path
) -> None:
    proj = project(home)
    a, b, c, d = (proj / f"{n}.jsonl" for n in "abcd")
    for f in (a, b, c, d):
        f.write_bytes(b"".join(line(i, sid=f.stem) for i in range(6)))
    daemon.start()
    daemon.idle()
    before = snapshot(daemon.db)
    a.write_bytes(b"".join(line(i, sid="a") for i in range(2)))  # truncated in place
    tmp = proj / "b.tmp"
    tmp.write_bytes(
        line(99, text="replaced", sid="b") + b"".join(line(i, sid="b") for i in range(6))
    )
    os.replace(tmp, b)  # replaced under the same name
    c.rename(proj / "c-moved.jsonl")  # renamed
    d.unlink()  # deleted by the agent
    time.sleep(0.3)
    daemon.idle()
    after = snapshot(daemon.db)
    events = {uid: n for uid, *_, n, _seq in after["sessions"]}
    assert events == {"claude:a": 6, "claude:b": 7, "claude:c": 6, "claude:d": 6}
    files = {Path(p).name: (off, gen) for p, off, gen, *_ in after["files"]}
    assert files["a.jsonl"][1] == 1 and files["b.jsonl"][1] == 1
    assert "c-moved.jsonl" in files and "c.jsonl" not in files
    assert files["c-moved.jsonl"] == next(
        (off, gen) for p, off, gen, *_ in before["files"] if p.endswith("/c.jsonl")
    )
    doc = orjson.loads(daemon.ctl("status", "--json").stdout)
    assert doc["store"]["files_gone"] == 1
    assert daemon.stop() == 0


def test_sigkill_during_a_large_backfill_then_restart_equals_a_clean_run(
    daemon: Helixd, home: Path, tmp_path: Path
) -> None:
    write_corpus(home / ".claude" / "projects", files=40, lines=600)
    clean = tmp_path / "clean.db"
    subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest"],
        env=cli_env(home, clean),
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    daemon.env["HELIX_INGEST__CHUNK_BYTES"] = "32KiB"
    daemon.proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.daemon.app"],
        env=daemon.env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(
        lambda: daemon.db.exists() and daemon.db.stat().st_size > 1_000_000,
        30,
        "the backfill to be under way",
    )
    daemon.proc.kill()
    daemon.proc.wait(timeout=10)
    daemon.start()
    daemon.idle()
    assert daemon.stop() == 0
    assert snapshot(daemon.db) == snapshot(clean)


def test_sigterm_exits_0_within_5_seconds_and_a_second_instance_is_refused(
    daemon: Helixd, home: Path
) -> None:
    (project(home) / f"{SID}.jsonl").write_bytes(line(0))
    daemon.start()
    second = daemon.second()
    assert second.returncode == 1
    assert f"pid {daemon.proc.pid}" in second.stderr  # type: ignore[union-attr]
    started = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - started < 5
    status = daemon.ctl("status")
    assert status.returncode == 3 and "not running" in status.stdout


def test_helixd_once_does_one_sweep_and_exits(daemon: Helixd, home: Path) -> None:
    (project(home) / f"{SID}.jsonl").write_bytes(line(0) + line(1, "assistant"))
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.daemon.app", "--once"],
        env=daemon.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert daemon.lookup(SID) is not None


def test_with_watching_off_the_reconcile_scan_still_finds_everything(
    daemon: Helixd, home: Path
) -> None:
    """Events are only a latency optimisation: with no watcher at all, changes still arrive."""
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0))
    daemon.start(HELIX_DAEMON__WATCH="false", HELIX_DAEMON__FALLBACK_SCAN_SECONDS="1")
    wait_for(lambda: daemon.lookup(SID) is not None, 5, "first scan")
    with f.open("ab") as fh:
        fh.write(line(1, "assistant"))

    def arrived() -> bool:
        d = daemon.lookup(SID)
        return d is not None and d["cost"]["output_tokens"] == 1  # type: ignore[index]

    wait_for(arrived, 5, "the scan to find the appended line")
    doc = orjson.loads(daemon.ctl("status", "--json").stdout)
    assert doc["daemon"]["roots"]["watched"] == []
    assert daemon.stop() == 0


def test_sd_notify_ready_watchdog_and_stopping(daemon: Helixd, home: Path, tmp_path: Path) -> None:
    import socket

    sock_path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(sock_path))
        sock.settimeout(10)
        daemon.start(NOTIFY_SOCKET=str(sock_path), WATCHDOG_USEC="400000")
        got: list[str] = []
        while not any("READY=1" in m for m in got) or not any("WATCHDOG=1" in m for m in got):
            got.append(sock.recv(4096).decode())
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGTERM)
        while not any("STOPPING=1" in m for m in got):
            got.append(sock.recv(4096).decode())
        daemon.proc.communicate(timeout=10)
        assert daemon.proc.returncode == 0


def test_sighup_rereads_the_configuration(daemon: Helixd, home: Path, tmp_path: Path) -> None:
    """A root added to the config file is watched after SIGHUP, without a restart."""
    extra = tmp_path / "elsewhere"
    cfg = tmp_path / "helix.toml"
    cfg.write_text("")
    daemon.start(HELIX_CONFIG=str(cfg))
    extra_proj = extra / "-p"
    extra_proj.mkdir(parents=True)
    sid3 = "5e55e55e-0000-4000-8000-000000000003"
    (extra_proj / f"{sid3}.jsonl").write_bytes(line(0, sid=sid3))
    cfg.write_text(f'[agents.claude]\nroots = ["{extra}"]\n')
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: daemon.lookup(sid3) is not None, 5, "the new root after SIGHUP")
    assert daemon.stop() == 0


def test_retention_runs_on_schedule_and_keeps_every_digest(daemon: Helixd, home: Path) -> None:
    """A budget smaller than the corpus: sessions flow in, analyze and evict run on their
    own schedule, the store stays under the hard cap and every digest is still looked up."""
    root = home / ".claude" / "projects"
    shutil.copytree(
        REPO / "tests/fixtures/claude",
        root,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("README*"),
    )
    daemon.start(
        HELIX_RETENTION__RAW_SOFT_CAP_BYTES="200KiB",
        HELIX_RETENTION__RAW_HARD_CAP_BYTES="400KiB",
        HELIX_DAEMON__ANALYZE_SECONDS="1",
        HELIX_DAEMON__EVICT_SECONDS="1",
    )
    daemon.idle()

    def evicted() -> bool:
        jobs = orjson.loads(daemon.ctl("status", "--json").stdout)["daemon"].get("jobs") or {}
        return bool(jobs.get("evict", {}).get("runs")) and jobs["evict"].get("ok") is True

    wait_for(evicted, 15, "the scheduled retention pass")
    sessions = orjson.loads(daemon.ctl("sessions", "--all", "--json").stdout)
    assert len(sessions) > 20
    missing = [s["uid"] for s in sessions if daemon.lookup(s["uid"]) is None]
    assert not missing
    doc = orjson.loads(daemon.ctl("status", "--json").stdout)
    assert doc["retention"]["raw_bytes"] <= 400 * 1024
    assert daemon.stop() == 0

"""End to end: the real ``helixd`` as a subprocess over a temporary HOME, with the real
watchdog observer, real files and a real store; ``helixctl`` as a subprocess to look."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from tests.conftest import FIXTURES, REPO, cli_env
from tests.db_snapshot import snapshot
from tests.test_crash import write_corpus

SID = "5e55e55e-0000-4000-8000-000000000001"
CODEX = next((FIXTURES / "codex" / "sessions").rglob("rollout-*.jsonl"))


def line(n: int, kind: str = "user", text: str = "hello", sid: str = SID) -> bytes:
    obj: dict[str, object] = {
        "type": kind,
        "uuid": f"{sid}-{n}",
        "parentUuid": f"{sid}-{n - 1}" if n else None,
        "sessionId": sid,
        "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}Z",
        "cwd": "/work/live",
        "message": {"role": kind, "content": text},
    }
    if kind == "assistant":
        obj["message"] = {
            "id": f"msg_{sid}_{n}",
            "model": "claude-sonnet-4-5",
            "role": kind,
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 100, "output_tokens": n},
        }
        obj["requestId"] = f"req_{n}"
    return orjson.dumps(obj) + b"\n"


class Helixd:
    def __init__(self, home: Path, db: Path) -> None:
        self.home, self.db = home, db
        self.env = cli_env(
            home, db, HELIX_DAEMON__ANALYZE_SECONDS="3600", HELIX_DAEMON__RECONCILE_SECONDS="3600"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, **extra: str) -> Helixd:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "helixd.daemon"],
            env={**self.env, **extra},
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_for(lambda: self.ctl("status").returncode == 0, 10, "daemon to come up")
        return self

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "helixd.cli", *args],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def lookup(self, uid: str) -> dict[str, object] | None:
        proc = self.ctl("lookup", uid, "--json")
        return orjson.loads(proc.stdout) if proc.returncode == 0 else None

    def idle(self) -> None:
        """Wait until the daemon has nothing pending and has read every byte."""

        def done() -> bool:
            doc = orjson.loads(self.ctl("status", "--json").stdout)
            q = doc["daemon"].get("queue") or {}
            return (
                doc["ingest_lag"]["bytes"] == 0
                and not q.get("pending")
                and not q.get("in_progress")
            )

        wait_for(done, 10, "the daemon to catch up")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self.stderr = err.decode()
        return self.proc.returncode


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def daemon(home: Path, tmp_path: Path) -> Iterator[Helixd]:
    d = Helixd(home, tmp_path / "store" / "helix.db")
    yield d
    if d.proc is not None and d.proc.poll() is None:
        d.stop(signal.SIGKILL)


def project(home: Path, name: str = "-work-live") -> Path:
    p = home / ".claude" / "projects" / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def test_appended_lines_are_visible_to_lookup_within_a_second(daemon: Helixd, home: Path) -> None:
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0) + line(1, "assistant"))
    daemon.start()
    wait_for(lambda: daemon.lookup(f"claude:{SID}") is not None, 5, "first digest")
    with f.open("ab") as fh:
        fh.write(line(2) + line(3, "assistant", "done"))

    def updated() -> bool:
        d = daemon.lookup(SID)
        return d is not None and d["cost"]["output_tokens"] == 1 + 3  # type: ignore[index]

    assert wait_for(updated, 5, "appended usage") < 1.0
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
        [sys.executable, "-m", "helixd.cli", "ingest"],
        env=cli_env(home, clean),
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    daemon.env["HELIX_INGEST__CHUNK_BYTES"] = "32KiB"
    daemon.proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.daemon"],
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
    second = subprocess.run(
        [sys.executable, "-m", "helixd.daemon"],
        env=daemon.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
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
        [sys.executable, "-m", "helixd.daemon", "--once"],
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

"""Helpers for the end-to-end tests that run the real ``helixd`` as a subprocess."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from tests.conftest import FIXTURES, REPO, cli_env

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
            [sys.executable, "-m", "helixd.daemon.app"],
            env={**self.env, **extra},
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # running (its lock held, the store usable) and answering on its socket: `status`
        # alone (a few tens of ms now) can say "running" before the socket listens
        wait_for(
            lambda: self.ctl("status").returncode == 0 and self.ctl("ping").returncode == 0,
            10,
            "daemon to come up",
        )
        return self

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "helixd.cli.main", *args],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def second(self) -> subprocess.CompletedProcess[str]:
        """Another ``helixd`` for the same store, run to its exit (the running one refuses it)."""
        return subprocess.run(
            [sys.executable, "-m", "helixd.daemon.app"],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )

    def lookup(self, uid: str) -> dict[str, object] | None:
        proc = self.ctl("lookup", uid, "--json")
        return orjson.loads(proc.stdout) if proc.returncode == 0 else None

    def idle(self) -> None:
        """Wait until the daemon has nothing pending and has read every byte."""

        def done() -> bool:
            doc = orjson.loads(self.ctl("status", "--json").stdout)
            if "queue" not in doc["daemon"]:
                return False  # not published yet: the start-up scan may still be queued
            q = doc["daemon"]["queue"] or {}
            return (
                doc["ingest_lag"]["bytes"] == 0
                and not q.get("pending")
                and not q.get("in_progress")
            )

        # a wait, not a latency bound: on a loaded machine (load 5-10 on 2 cores) the
        # catch-up after a killed 31 MB backfill took 12-27 s, on main as on this branch
        wait_for(done, 60, "the daemon to catch up")

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


def project(home: Path, name: str = "-work-live") -> Path:
    p = home / ".claude" / "projects" / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def stored_digest(db: Path, uid: str) -> dict[str, object] | None:
    """The digest as the store holds it (what `helixctl lookup` prints), read in-process so
    that a latency measured by polling is not the start-up time of a lookup subprocess."""
    import sqlite3

    if not db.exists():
        return None
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        row = con.execute(
            "SELECT d.json FROM digests d JOIN sessions s ON s.id = d.session_id WHERE s.uid = ?",
            (uid,),
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()
    return orjson.loads(row[0]) if row else None


def exchange(path: str, data: bytes, timeout: float = 10.0) -> list[dict[str, object]]:
    """Send raw bytes to a control socket, half-close, and return every reply line read until
    the daemon closes (a refusing daemon may answer and close before reading what was sent:
    its reply is still read)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except BrokenPipeError:
            pass
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
    return [json.loads(x) for x in buf.splitlines() if x.strip()]

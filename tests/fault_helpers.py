"""Real faults for the fault tests: a small file system that fills up, a write lock held
by another process, the daemon run as root without its permission override (so that
``chmod`` means what it says), an ingest killed at a given moment, one-line error checks."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO

# Root ignores file modes; these capabilities are what lets it.  Dropped, `chmod 000`
# makes a file unreadable to the daemon too, as it would be for a normal user.
NO_DAC = [
    "setpriv",
    "--bounding-set=-dac_override,-dac_read_search",
    "--inh-caps=-dac_override,-dac_read_search",
]


def no_dac_prefix() -> list[str]:
    """The command prefix that drops the permission override (skip where impossible)."""
    if os.geteuid() != 0:
        return []  # not root: file modes apply anyway
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to drop root's permission override")
    probe = subprocess.run([*NO_DAC, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot drop capabilities here: {probe.stderr.decode().strip()}")
    return NO_DAC


@contextmanager
def small_filesystem(where: Path, size_kb: int) -> Iterator[Path]:
    """A real tmpfs of ``size_kb`` mounted at ``where`` (skipped where mounting is not
    permitted), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(folder: Path) -> Path:
    """Write a file until the file system is full (ENOSPC); returns it (delete it to free
    the space)."""
    filler = folder / "filler"
    block = b"\0" * 4096
    try:
        with open(filler, "wb") as f:
            while True:
                f.write(block)
                f.flush()
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    return filler


class LockHolder:
    """Another process holding the store's write lock: the ``sqlite3`` shell in a
    ``BEGIN EXCLUSIVE`` transaction (a Python subprocess where the shell is missing)."""

    def __init__(self, db: Path) -> None:
        if shutil.which("sqlite3"):
            argv = ["sqlite3", str(db)]
        else:
            argv = [sys.executable, "-c", _PY_SHELL, str(db)]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        # wait out the daemon's own short writes (without a busy timeout, BEGIN EXCLUSIVE
        # failed when it met one, and the test went on with no lock held)
        self.proc.stdin.write(".timeout 20000\nBEGIN EXCLUSIVE;\nSELECT 'held';\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("ROLLBACK;\n.quit\n")
            self.proc.stdin.close()
            self.proc.wait(10)

    def __enter__(self) -> LockHolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


_PY_SHELL = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
for line in sys.stdin:
    line = line.strip()
    if line == ".quit":
        break
    if line.startswith(".timeout"):
        con.execute(f"PRAGMA busy_timeout = {int(line.split()[1])}")
    elif line:
        for row in con.execute(line.rstrip(";")).fetchall():
            print("|".join(map(str, row)), flush=True)
"""


def ingest_killed_after(args: list[str], env: dict[str, str], kill_after: float | None) -> int:
    """``helixctl ingest *args`` in a subprocess, SIGKILLed after ``kill_after`` seconds
    (its exit code: ``-SIGKILL`` when the kill came before it finished); with None, run to
    the end, which must succeed (0)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.cli.main", "ingest", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if kill_after is None:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        return 0
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    return proc.returncode


def ingest_killed_mid_write(
    args: list[str], env: dict[str, str], db: Path, jitter: float, timeout: float = 120
) -> int:
    """``helixctl ingest *args`` in a subprocess, SIGKILLed ``jitter`` seconds after the
    store ``db`` shows a new event committed (so the kill lands inside the ingest, however
    fast the machine, not in the interpreter's start-up as a fixed delay may); its exit code
    (``-SIGKILL`` when the kill came before it finished)."""
    base = max(count_rows(db), 0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.cli.main", "ingest", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + timeout
    while proc.poll() is None and count_rows(db) <= base and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(jitter)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    return proc.returncode


def one_line_error(stderr: str) -> str:
    """The single line a failed command printed; fails on a traceback or several lines."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    return lines[0]


def count_rows(db: Path, table: str = "events") -> int:
    """Rows of ``table`` as another reader sees them (-1 while the store cannot be read,
    or is still being created)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return -1
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.Error:
        return -1
    finally:
        con.close()


def damage_header(db: Path) -> bytes:
    """Overwrite the SQLite header magic in place; returns the bytes it replaced."""
    with open(db, "r+b") as f:
        old = f.read(16)
        f.seek(0)
        f.write(b"not a database!!")
    return old


def restore_header(db: Path, old: bytes) -> None:
    with open(db, "r+b") as f:
        f.write(old)

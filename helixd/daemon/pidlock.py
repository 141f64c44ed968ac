"""One daemon per store: an exclusive ``flock`` on ``<store>.helixd.lock`` holding the pid.

The lock dies with the process (even on SIGKILL), so a stale file never blocks a restart.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from helixd.filemodes import open_private, private_dir


class AlreadyRunning(RuntimeError):
    """Another helixd holds the store's lock; ``pid`` says which."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.pid = pid
        who = f"pid {pid}" if pid else "another process"
        super().__init__(f"helixd is already running for this store ({who}; lock {path})")


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".helixd.lock")


def _read_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        os.lseek(fd, 0, os.SEEK_SET)
        return int(os.read(fd, 64).decode().strip() or 0) or None
    return None


class PidLock:
    def __init__(self, db: Path) -> None:
        self.path = lock_path(db)
        self.fd: int | None = None

    def acquire(self, wait: float = 1.0) -> None:
        """Take the lock or raise ``AlreadyRunning`` (retrying briefly: ``helixctl status``
        may be holding a shared lock for a few microseconds)."""
        private_dir(self.path.parent)
        fd = open_private(self.path, os.O_RDWR)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _read_pid(fd)
                    os.close(fd)
                    raise AlreadyRunning(self.path, pid) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def refresh(self) -> bool:
        """The lock file was deleted while held (its folder removed, say): take the lock
        again on a new file at the path, so that ``helixctl status`` and a second daemon
        still see it.  True when it was taken again."""
        if not self.path.parent.is_dir():
            return False
        if self.fd is None:  # not taken at start (the folder was unusable): try again
            try:
                self.acquire(wait=0)
            except (AlreadyRunning, OSError):
                return False
            return True
        held = os.fstat(self.fd)
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                return False
        except FileNotFoundError:
            pass
        except OSError:
            return False
        old, self.fd = self.fd, None
        try:
            self.acquire(wait=0)
        except (AlreadyRunning, OSError):
            self.fd = old  # keep what we hold; the new file belongs to someone else
            return False
        os.close(old)
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def holder(db: Path) -> int | None:
    """The pid of the running daemon for this store, or None when none runs."""
    path = lock_path(db)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)

"""A throwaway PostgreSQL server for the fleet tests and ``bench/fleet.py``: ``initdb`` into a
temp directory, ``pg_ctl start`` on a Unix socket only (no TCP port), stopped and deleted at
the end.  The binaries come from Debian's ``postgresql`` package (``.ci/run`` installs it):
``HELIX_PG_BINDIR``, else ``pg_config --bindir``, else the newest
``/usr/lib/postgresql/*/bin``, else ``initdb`` on the PATH.

As root (CI containers), the server runs as the ``postgres`` user — ``initdb`` refuses root —
in a directory that user can reach (``/var/tmp``: the temp dir may be closed to it).
Authentication: ``postgres`` is trusted on the socket, every other role gives its password
(SCRAM), so the tests see real password handling.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

NEEDED = ("initdb", "pg_ctl", "postgres")
HBA = "local all postgres trust\nlocal all all scram-sha-256\n"


def bindir() -> Path | None:
    """Where initdb, pg_ctl and postgres are, or None."""
    candidates: list[Path] = []
    if os.environ.get("HELIX_PG_BINDIR"):
        candidates.append(Path(os.environ["HELIX_PG_BINDIR"]))
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            candidates.append(Path(out.stdout.strip()))
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(versions)
    if shutil.which("initdb"):
        candidates.append(Path(shutil.which("initdb") or "").resolve().parent)
    for c in candidates:
        if all((c / n).exists() for n in NEEDED):
            return c
    return None


def _run_as() -> str | None:
    """The user the server runs as: ``postgres`` when we are root, else ourselves."""
    return "postgres" if os.geteuid() == 0 else None


class Cluster:
    """One server: ``init`` (or ``clone_of`` a template), ``start``, ``kill`` (SIGKILL every
    server process: a crash), ``stop``, ``remove``."""

    def __init__(self, base: Path, bin_dir: Path, port: int = 5432) -> None:
        self.base, self.bin, self.port = base, bin_dir, port
        self.data = base / "data"
        self.user = _run_as()

    @classmethod
    def make_base(cls) -> Path:
        user = _run_as()
        base = Path(tempfile.mkdtemp(prefix="hx-pg-", dir="/var/tmp" if user else None))
        if user:
            pw = pwd.getpwnam(user)
            os.chown(base, pw.pw_uid, pw.pw_gid)
        base.chmod(0o700)
        return base

    def _pg(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            user=self.user,
            cwd=self.base,
            env=env,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def init(self) -> Cluster:
        self._pg(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        (self.data / "pg_hba.conf").write_text(HBA)
        return self

    def clone_to(self, base: Path) -> Cluster:
        """A copy of this (stopped) cluster's data in ``base``: a fresh server in 0.1 s."""
        other = Cluster(base, self.bin, self.port)
        shutil.copytree(self.data, other.data, symlinks=True)
        if self.user:
            pw = pwd.getpwnam(self.user)
            for dirpath, dirnames, filenames in os.walk(other.data):
                os.chown(dirpath, pw.pw_uid, pw.pw_gid)
                for name in dirnames + filenames:
                    os.chown(
                        os.path.join(dirpath, name), pw.pw_uid, pw.pw_gid, follow_symlinks=False
                    )
        other.data.chmod(0o700)
        with contextlib.suppress(FileNotFoundError):
            (other.data / "postmaster.pid").unlink()
        return other

    def start(self) -> Cluster:
        opts = (
            f"-c listen_addresses='' -c unix_socket_directories={self.base} -p {self.port}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=60 -c shared_buffers=32MB"
        )
        out = self._pg(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.base / "log"),
            "-w",
            "-t",
            "60",
            "start",
            check=False,
        )
        if out.returncode != 0:
            log = (self.base / "log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"pg_ctl start failed: {out.stdout}{out.stderr}\n{log}")
        return self

    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self) -> None:
        """SIGKILL the postmaster and every server process (frozen first, so that nothing
        new is forked meanwhile): a crash, then recovery at the next start."""
        pm = self.pid()
        if pm is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pm, signal.SIGSTOP)
        children = _children(pm)
        for pid in [*children, pm]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in [*children, pm]) and time.monotonic() < deadline:
            time.sleep(0.02)
        # Dead, but maybe not reaped yet (a zombie until init gets to it): the lock file would
        # still name a pid that exists.  A crashed host leaves no process at all; so here.
        if not _alive(pm):
            for lock in (self.data / "postmaster.pid", self.base / f".s.PGSQL.{self.port}.lock"):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()

    def stop(self) -> None:
        if self.pid() is not None and _alive(self.pid() or 0):
            self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def dsn(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"host={self.base} port={self.port} dbname={dbname} user={user}"

    def sql(self, statement: str, dbname: str = "postgres", params: Any = None) -> list[Any]:
        """Run one statement as the superuser; the rows it returns (if any)."""
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            cur = conn.execute(statement, params)
            return cur.fetchall() if cur.description else []


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

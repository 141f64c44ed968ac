"""``helixctl doctor``: one line per check, each with what to do about it.

The checks only look (nothing is changed): the daemon, its service, the agents' hooks, the
socket, the store, the inotify watch limit, the agents' own log retention and the disk
space the storage budget needs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    level: Level
    message: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def daemon(db: Path) -> Check:
    from helixd.daemon.pidlock import holder

    pid = holder(db)
    if pid is not None:
        return Check("daemon", "ok", f"helixd is running (pid {pid})")
    return Check(
        "daemon",
        "fail",
        "helixd is not running",
        "helixctl service install  (or run `helixd` in a terminal)",
    )


def service() -> Check:
    if shutil.which("systemctl"):
        proc = subprocess.run(
            ["systemctl", "--user", "is-enabled", "helixd.service"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        state = proc.stdout.strip() or proc.stderr.strip().splitlines()[-1:] or ["unknown"]
        text = state if isinstance(state, str) else state[0]
        if proc.returncode == 0:
            return Check("service", "ok", f"systemd user service is {text}")
        return Check("service", "warn", f"systemd user service: {text}", "helixctl service install")
    if sys.platform == "darwin" and shutil.which("launchctl"):
        proc = subprocess.run(
            ["launchctl", "print", f"gui/{os.getuid()}/dev.helix.helixd"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if proc.returncode == 0:
            return Check("service", "ok", "launchd agent dev.helix.helixd is loaded")
        return Check("service", "warn", "launchd agent is not loaded", "helixctl service install")
    return Check(
        "service",
        "warn",
        "no service manager found (systemd or launchd)",
        "start `helixd` from your session's startup files",
    )


def hooks(states: Iterable[tuple[str, str, Path]]) -> list[Check]:
    """``states``: (agent, state, file) as ``helixctl hooks status`` computes them."""
    out = []
    for agent, state, path in states:
        if state == "installed":
            out.append(Check(f"hooks:{agent}", "ok", f"installed in {path}"))
        elif state == "no-file":
            continue
        else:
            out.append(
                Check(
                    f"hooks:{agent}",
                    "warn",
                    f"{state} in {path}",
                    f"helixctl hooks install {agent}",
                )
            )
    return out


def socket_reachable() -> Check:
    from helixd.daemon.client import DaemonUnavailable, request

    try:
        reply = request("ping", 1.0)
    except DaemonUnavailable as exc:
        return Check("socket", "fail", str(exc), "start helixd; check HELIX_SOCKET")
    return Check("socket", "ok" if reply.get("ok") else "fail", "the daemon answers a ping")


def store(db: Path) -> Check:
    target = db if db.exists() else db.parent
    while not target.exists():
        target = target.parent
    if os.access(target, os.W_OK):
        return Check("store", "ok", f"{db} is writable")
    return Check("store", "fail", f"{db} is not writable", f"check the permissions of {target}")


def inotify(
    roots: Iterable[Path], limit_file: Path = Path("/proc/sys/fs/inotify/max_user_watches")
) -> Check:
    try:
        limit = int(limit_file.read_text())
    except (OSError, ValueError):
        return Check("inotify", "ok", "no inotify watch limit on this system")
    dirs = sum(1 for root in roots if root.is_dir() for _ in os.walk(root))
    level: Level = "ok" if dirs < limit // 2 else ("warn" if dirs < limit else "fail")
    return Check(
        "inotify",
        level,
        f"{dirs} directories to watch, limit {limit}",
        "" if level == "ok" else "sudo sysctl fs.inotify.max_user_watches=524288",
    )


def source_retention(home: Path, environ: Mapping[str, str]) -> list[Check]:
    from helixd.adapters.sourcecare import source_retention as rules

    out = []
    for r in rules(home, environ):
        if r.days is None:
            out.append(Check(f"retention:{r.agent}", "ok", f"{r.setting} keeps logs"))
            continue
        level: Level = "warn" if r.days <= 30 else "ok"
        out.append(
            Check(
                f"retention:{r.agent}",
                level,
                f"{r.agent} deletes its logs after {r.days:g} days ({r.setting} in {r.where});"
                " Helix keeps what it ingested, so keep helixd running",
                "" if level == "ok" else f"raise {r.setting} in {r.where} (e.g. 99999)",
            )
        )
    return out


def disk(db: Path, hard_cap: int) -> Check:
    from helixd.daemon.status import store_bytes

    parent = db.parent if db.parent.exists() else Path.home()
    free = shutil.disk_usage(parent).free
    need = max(hard_cap - store_bytes(db), 0)
    if free >= need:
        return Check(
            "disk",
            "ok",
            f"{free / 1e9:.1f} GB free; the budget needs up to {need / 1e9:.1f} GB more",
        )
    return Check(
        "disk",
        "warn",
        f"{free / 1e9:.1f} GB free but the raw budget may grow {need / 1e9:.1f} GB",
        "lower [retention] raw_hard_cap_bytes",
    )


def fleet(target: Any, facts: dict[str, Any] | None, warn_rows: int, now_ms: int) -> Check:
    """The fleet database: reachable with this machine's credentials, schema current, pushes
    keeping up (``target`` None: no fleet configured)."""
    if target is None:
        return Check("fleet", "ok", "no fleet database configured ([fleet] dsn)")
    from helixd.fleet.status import local, probe

    srv = probe(target, (facts or {}).get("machine_id"))
    if not srv["reachable"]:
        return Check(
            "fleet",
            "fail",
            f"cannot reach {srv['server']}: {srv.get('error')}",
            "check [fleet] dsn, the password (HELIX_FLEET_PASSWORD, password_file, PGPASSWORD or"
            " ~/.pgpass) and that the server lets this host in (pg_hba.conf)",
        )
    if srv.get("error"):
        return Check("fleet", "fail", f"{srv['server']}: {srv['error']}", "helixctl fleet status")
    if srv.get("migrations_due"):
        return Check(
            "fleet",
            "warn",
            f"{srv['server']}: schema behind ({', '.join(srv['migrations_due'])} due)",
            "helixctl fleet migrate  (as the database's owner)",
        )
    loc = local(facts, True, warn_rows, now_ms)
    waiting = f"{loc['pending']:,} changes waiting" + (
        f" (oldest {loc['lag_s']:,.0f} s)" if loc["pending"] else ""
    )
    if loc.get("last_error"):
        return Check(
            "fleet",
            "warn",
            f"the last push failed ({loc['failures']} in a row): {loc['last_error']}; {waiting}",
            "helixctl fleet push  (shows the error at once)",
        )
    if loc.get("over_warn_rows"):
        return Check(
            "fleet", "warn", f"{waiting}: pushes are not keeping up", "helixctl fleet status"
        )
    machines = len(srv.get("machines") or [])
    return Check("fleet", "ok", f"{srv['server']}: {machines} machines; {waiting}")


def run_all(
    db: Path,
    roots: list[Path],
    hook_states: list[tuple[str, str, Path]],
    hard_cap: int,
    environ: Mapping[str, str],
    home: Path,
) -> list[Check]:
    checks = [
        daemon(db),
        service(),
        *hooks(hook_states),
        socket_reachable(),
        store(db),
        inotify(roots),
        *source_retention(home, environ),
        disk(db, hard_cap),
    ]
    return checks


def summary(checks: list[Check]) -> dict[str, Any]:
    return {
        "ok": not any(c.level == "fail" for c in checks),
        "checks": [c.as_dict() for c in checks],
    }

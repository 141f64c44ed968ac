"""``helixctl doctor``: one line per check, each with what to do about it.

The checks only look (nothing is changed): the daemon, its service, the agents' hooks, the
socket, the store, the inotify watch limit, the agents' own log retention and the disk
space the storage budget needs.

The store check says whether the store can be used, and if not which condition stands in
the way and its fix: the fault the daemon meets (from its live state), a file deleted or
replaced under the daemon, a read-only file or folder, a damaged header, ``PRAGMA
quick_check`` (stopped after two seconds on a big store), a write lock held by another
process.  Files whose ingest keeps failing, and a status file the daemon cannot write, are
listed too.
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


def store(db: Path, live: Mapping[str, Any] | None = None) -> Check:
    """Can the store be used?  ``live``: the daemon's state, if it runs."""
    from helixd.store import probe
    from helixd.store.faults import StoreFault

    reported = (live or {}).get("store_fault")
    if reported:
        message = f"{db} {reported['condition']} ({reported['detail']})"
        return Check("store", "fail", message, reported["fix"])
    opened = (live or {}).get("store_identity")
    fault: StoreFault | None
    if opened and tuple(opened) != probe.identity(db):
        gone = not db.exists()
        fault = StoreFault("deleted" if gone else "replaced", db, "helixd has another file open")
    else:
        fault = probe.condition(db, writing=True)
        if fault is None and not db.exists():
            return Check(
                "store", "ok", f"no store yet at {db}; `helixctl ingest` or helixd makes it"
            )
    if fault is not None:
        return Check("store", "fail", f"{db} {fault.condition} ({fault.detail})", fault.fix)
    state, detail = probe.integrity(db)
    if state in ("corrupt", "fault"):
        fix = StoreFault("corrupt", db).fix
        return Check("store", "fail", f"{db} fails its integrity check: {detail}", fix)
    if probe.locked(db):
        return Check(
            "store",
            "warn",
            f"{db} is locked by another process (its write lock held over 0.5 s)",
            "let that process finish (`fuser` on the store shows it); writes wait meanwhile",
        )
    checked = "quick_check ok" if state == "ok" else f"quick_check {detail}"
    return Check("store", "ok", f"{db} is writable; {checked}")


def failing(live: Mapping[str, Any] | None) -> list[Check]:
    """Files in backoff and a status file the daemon cannot write (from its live state)."""
    out: list[Check] = []
    files = ((live or {}).get("failing_files") or {}).get("files") or []
    if files:
        shown = "; ".join(f"{f['path']}: {f['error']}" for f in files[:5])
        more = len(files) - 5
        out.append(
            Check(
                "files",
                "warn",
                f"{len(files)} files keep failing and are retried on a backoff: {shown}"
                + (f" (and {more} more)" if more > 0 else ""),
                "fix each file's permissions or contents; it is read as soon as it works"
                " (`helixctl status` shows the next try)",
            )
        )
    error = (live or {}).get("status_file_error")
    if error:
        out.append(
            Check(
                "status-file",
                "warn",
                f"helixd cannot write {error['path']}: {error['error']}",
                "free space or fix the permissions of the store's folder",
            )
        )
    return out


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
    if free < 1 << 20:
        return Check(
            "disk",
            "fail",
            f"the disk holding {parent} is full ({free} bytes free): writes wait",
            f"free space there (`df -h {parent}`)",
        )
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
    live: Mapping[str, Any] | None = None,
) -> list[Check]:
    """Every check; ``live``: the daemon's state from its socket (None when down)."""
    checks = [
        daemon(db),
        service(),
        *hooks(hook_states),
        socket_reachable(),
        store(db, live),
        *failing(live),
        inotify(roots),
        *source_retention(home, environ),
        disk(db, hard_cap),
    ]
    return checks


def sources(found: dict[str, Any]) -> Check:
    """``found``: ``sources.discover.survey`` of the roots (what Helix cannot read there)."""
    u = found["unreadable"]
    if not u["files"]:
        return Check("sources", "ok", f"{found['files']} files under the roots, all readable")
    reasons = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in u["by_reason"].items())
    example = u["examples"][0] if u["examples"] else ""
    return Check(
        "sources",
        "warn",
        f"{u['files']} files under the roots cannot be read ({reasons}); e.g. {example}",
        "make them readable (chmod u+r), or remove what is no transcript there"
        " (FIFOs, sockets, links leading out of the roots)",
    )


def summary(checks: list[Check]) -> dict[str, Any]:
    return {
        "ok": not any(c.level == "fail" for c in checks),
        "checks": [c.as_dict() for c in checks],
    }

"""``helixctl hooks …`` and ``helixctl service …``: installing Helix into the agents and the
service manager.  Imports are light at module level (``helixctl`` imports this module at
start); the editors load inside the commands.

Exit codes: 0 done (or nothing to do); 2 a file that cannot be parsed (nothing written), an
unknown agent, or no usable service manager.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from helixd.cli.common import Context, describe, json_flag, summary
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from collections.abc import Mapping

    from helixd.adapters.hooktargets import HookTarget, TargetsFor
    from helixd.ops.service import Manager

from helixd.cli.common import EXIT_USAGE


def _exe(name: str, near: str | None = None) -> str | None:
    """The absolute path of the ``name`` entry point: next to ``near``, the running program,
    or the interpreter, else on PATH.  Symlinks are kept (a stable shim survives upgrades)."""
    candidates = []
    if near:
        candidates.append(Path(near).parent / name)
    if Path(sys.argv[0]).name == name:
        candidates.append(Path(sys.argv[0]))
    candidates.append(Path(sys.executable).parent / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return os.path.abspath(path)
    found = shutil.which(name)
    return os.path.abspath(found) if found else None


def _backup_dir(agent: str) -> Path:
    from helixd.paths import state_dir

    return state_dir() / "backups" / agent


def _fail(message: str) -> NoReturn:
    echo(f"helixctl: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _tilde(path: Path, home: Path) -> str:
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------- hooks


def hooks_arguments(p: ArgumentParser) -> None:
    p.description = "Install, remove or show Helix's hooks in the agents' settings files."
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    install = _subcommand(sub, "install", hooks_install)
    _agents_argument(install)
    _dry_run_option(install)
    _exe_option(install)
    install.add_argument(
        "--statusline",
        action="store_true",
        help="Also set the agent's status line to `helix-statusline` (the line `helixctl"
        " statusline` prints, without loading the CLI; refused when the user has one of their"
        " own).",
    )
    uninstall = _subcommand(sub, "uninstall", hooks_uninstall)
    _agents_argument(uninstall)
    _dry_run_option(uninstall)
    _exe_option(uninstall)
    _subcommand(sub, "script", hooks_script)
    status = _subcommand(sub, "status", hooks_status)
    _agents_argument(status)
    _exe_option(status)
    json_flag(status, "One object per file.")


def _subcommand(sub: Any, name: str, run: Any) -> ArgumentParser:
    """A subcommand of a group (``hooks install``): its summary and help from ``run``."""
    parser: ArgumentParser = sub.add_parser(name, help=summary(run))
    describe(parser, run)
    return parser


def _holds_ours(t: HookTarget) -> bool:
    """Whether ``t``'s file holds Helix's entry (uninstall and status then list it)."""
    from helixd.ops import hooks as hk

    try:
        return hk.state(t) in ("installed", "outdated")
    except hk.HookFileError:
        return False


def _targets(
    agents: tuple[str, ...],
    exe: str,
    create: bool,
    table: Mapping[str, TargetsFor] | None = None,
    statusline: bool = False,
) -> list[HookTarget]:
    """The files to edit for ``agents`` (every installed one when none is named), from
    ``table`` (the hooks by default); with ``statusline``, the agent's status line too."""
    from helixd.adapters.hooktargets import TARGETS, statusline_target

    table = TARGETS if table is None else table
    unknown = [a for a in agents if a not in table]
    if unknown:
        _fail(f"unknown agent {unknown[0]!r} (known: {', '.join(table)})")
    home = Path.home()
    out: list[HookTarget] = []
    line = statusline_target(home, os.environ, _statusline_exe(exe)) if statusline else None
    wanted = line is not None and (line.agent in agents if agents else line.root.is_dir())
    if line is not None and wanted and (create or _holds_ours(line)):
        out.append(line)
    for name in agents or tuple(table):
        found = table[name](home, os.environ, exe)
        if not agents and not found[0].root.is_dir():
            if create:
                echo(f"{name}: skipped ({_tilde(found[0].root, home)} does not exist)")
            continue
        out.extend(found)
    return out


def _exe_option(p: ArgumentParser) -> None:
    p.add_argument(
        "--helixctl",
        dest="exe",
        metavar="PATH",
        default=None,
        help="helixctl path the hooks run (default: this helixctl, absolute).",
    )


def _agents_argument(p: ArgumentParser) -> None:
    p.add_argument("agents", nargs="*", metavar="AGENT")


def _dry_run_option(p: ArgumentParser) -> None:
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="Print the unified diff of each change; write nothing.",
    )


def _statusline_exe(helixctl: str) -> str:
    """The ``helix-statusline`` script, installed beside ``helixctl`` by the same package."""
    return str(Path(helixctl).with_name("helix-statusline"))


def _resolve_exe(exe: str | None) -> str:
    exe = exe or _exe("helixctl")
    if exe is None:
        _fail("cannot find the helixctl executable; pass --helixctl PATH")
    return os.path.abspath(exe)


def _created_log() -> Path:
    from helixd.paths import state_dir

    return state_dir() / "hooks-created.json"


def _change_hooks(
    action: str,
    agents: tuple[str, ...],
    dry_run: bool,
    exe: str | None,
    table: Mapping[str, TargetsFor] | None = None,
    statusline: bool = False,
) -> None:
    from helixd.ops import hooks as hk
    from helixd.ops.hooks import created

    home = Path.home()
    targets = _targets(agents, _resolve_exe(exe), action == "install", table, statusline)
    made = created.load(_created_log())
    changes = []
    for t in targets:  # parse every file before writing any
        try:
            changes.append(hk.plan(t, "install" if action == "install" else "uninstall", made))
        except hk.HookFileError as exc:
            echo(f"helixctl: {t.agent}: {exc}", err=True)
            if t.comments and action == "install":
                echo(hk.snippet(t), err=True, nl=False)
            echo("helixctl: nothing was written", err=True)
            sys.exit(EXIT_USAGE)
    for c in changes:
        what = f" ({'.'.join(c.target.keys)})" if c.target.keys else ""
        where = f"{c.target.agent}: {_tilde(c.target.path, home)}{what}"
        if not c.changed:
            done = "already installed" if action == "install" else "no Helix entries"
            if c.old is None and c.target.only_if_exists:
                done = "not present, skipped"
            echo(f"{where}: {done}")
        elif dry_run:
            echo(f"{where}: would {action}")
            echo(c.diff(), nl=False)
        else:
            saved = hk.apply(c, _backup_dir(c.target.agent), _created_log())
            extra = f" (backup: {_tilde(saved, home)})" if saved else ""
            done = "removed (install had created it)" if c.new is None else f"{action}ed"
            echo(f"{where}: {done}{extra}")
            if c.target.note and action == "install":
                echo(f"{c.target.agent}: {c.target.note}")


def hooks_install(ctx: Context, args: Namespace) -> None:
    """Add Helix's hook entries (every installed agent when none is named).

    Idempotent; a timestamped backup precedes every write; a file that does not parse is
    never rewritten (exit 2).
    """
    _change_hooks("install", tuple(args.agents), args.dry_run, args.exe, statusline=args.statusline)


def hooks_uninstall(ctx: Context, args: Namespace) -> None:
    """Remove exactly the entries install added (Helix's status line included); other hooks
    are untouched."""
    _change_hooks("uninstall", tuple(args.agents), args.dry_run, args.exe, statusline=True)


def hooks_script(ctx: Context, args: Namespace) -> None:
    """Print the shell alternative to `helixctl hook` (forwards stdin with socat or nc)."""
    from helixd.paths import data_file

    echo(data_file("helix-hook.sh").read_text(), nl=False)


def hooks_status(ctx: Context, args: Namespace) -> None:
    """Per agent file: installed, outdated (Helix entries that differ), absent, unreadable."""
    from helixd.ops import hooks as hk

    home = Path.home()
    rows: list[dict[str, Any]] = []
    for t in _targets(tuple(args.agents), _resolve_exe(args.exe), create=False, statusline=True):
        state: str
        try:
            state = hk.state(t)
        except hk.HookFileError as exc:
            state, error = "unreadable", str(exc)
        else:
            error = ""
        entry = ".".join(t.keys)
        rows.append(
            {"agent": t.agent, "path": str(t.path), "entry": entry, "state": state, "error": error}
        )
    if args.as_json:
        import json

        echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        why = f" ({r['error']})" if r["error"] else ""
        entry = f" ({r['entry']})" if r["entry"] else ""
        echo(f"{r['agent']:<8} {r['state']:<11} {_tilde(Path(r['path']), home)}{entry}{why}")


# -------------------------------------------------------------------------------------- service


def service_arguments(p: ArgumentParser) -> None:
    p.description = "Install, remove or show the helixd user service (systemd or launchd)."
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    install = _subcommand(sub, "install", service_install)
    _manager_option(install)
    _dry_run_option(install)
    _helixd_option(install)
    uninstall = _subcommand(sub, "uninstall", service_uninstall)
    _manager_option(uninstall)
    _dry_run_option(uninstall)
    _manager_option(_subcommand(sub, "status", service_status))


def _manager_option(p: ArgumentParser) -> None:
    p.add_argument(
        "--manager",
        choices=["systemd", "launchd"],
        default=None,
        help="Service manager (default: launchd on macOS, systemd elsewhere).",
    )


def _manager(name: str | None) -> Manager:
    if name == "launchd" or (name is None and sys.platform == "darwin"):
        return "launchd"
    return "systemd"


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _fail(f"{' '.join(cmd)}: {exc}")
    if check and done.returncode != 0:
        _fail(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _preflight(manager: Manager) -> None:
    """Exit 2 with a hint when the service manager cannot be used here."""
    tool = "systemctl" if manager == "systemd" else "launchctl"
    if shutil.which(tool) is None:
        _fail(
            f"{tool} not found: no {manager} here. Run `helixd` in the foreground "
            "(or from your session's startup) instead"
        )
    if manager == "systemd":
        probe = _run(["systemctl", "--user", "show-environment"], check=False)
        if probe.returncode != 0:
            _fail(
                "no systemd user manager reachable (`systemctl --user` failed: "
                f"{probe.stderr.strip() or probe.returncode}). Log in through a real session "
                "(not sudo/su), or enable lingering with `loginctl enable-linger $USER`; "
                "otherwise run `helixd` in the foreground"
            )


def _helixd(path: str | None) -> str:
    exe = path or _exe("helixd", near=_exe("helixctl"))
    if exe is None:
        _fail("cannot find the helixd executable; pass --helixd PATH")
    return os.path.abspath(exe)


def _helixd_option(p: ArgumentParser) -> None:
    p.add_argument(
        "--helixd",
        dest="helixd_path",
        metavar="PATH",
        default=None,
        help="helixd the service runs (default: the one next to this helixctl).",
    )


def service_install(ctx: Context, args: Namespace) -> None:
    """Write the unit files (or the launchd plist) for this user and enable them."""
    from helixd.ops import service as svc
    from helixd.ops.hooks import fileedit

    m, home, dry_run = _manager(args.manager), Path.home(), args.dry_run
    try:
        files = svc.render(m, _helixd(args.helixd_path), home, os.environ)
    except svc.TemplateMissing as exc:
        _fail(str(exc))
    commands = svc.install_commands(m, home, os.getuid())
    if dry_run:
        for f in files:
            old = fileedit.read(f.path)
            state = "unchanged" if old == f.text else "would write"
            echo(f"{state} {f.path}")
            echo(fileedit.diff(f.path, old, f.text), nl=False)
        if m == "launchd":
            echo(f"would create {svc.log_dir(home)}")
        for cmd in commands:
            echo("would run: " + " ".join(cmd))
        return
    _preflight(m)
    if m == "launchd":
        svc.log_dir(home).mkdir(parents=True, exist_ok=True, mode=0o700)
    for f in files:
        if fileedit.read(f.path) != f.text:
            fileedit.atomic_write(f.path, f.text, new_mode=0o644)
            echo(f"wrote {f.path}")
        else:
            echo(f"unchanged {f.path}")
    for i, cmd in enumerate(commands):
        _run(cmd, check=not (m == "launchd" and i == 0))
        echo("ran: " + " ".join(cmd))


def service_uninstall(ctx: Context, args: Namespace) -> None:
    """Disable and stop the service, then remove its files."""
    from helixd.ops import service as svc
    from helixd.ops.hooks import fileedit

    m, home, dry_run = _manager(args.manager), Path.home(), args.dry_run
    paths = (
        [svc.unit_dir(home, os.environ) / u for u in svc.UNITS]
        if m == "systemd"
        else [svc.plist_path(home)]
    )
    commands = svc.uninstall_commands(m, os.getuid())
    after = [["systemctl", "--user", "daemon-reload"]] if m == "systemd" else []
    if dry_run:
        for cmd in commands:
            echo("would run: " + " ".join(cmd))
        for p in paths:
            echo(f"would remove {p}" if p.exists() else f"absent {p}")
        for cmd in after:
            echo("would run: " + " ".join(cmd))
        return
    _preflight(m)
    for cmd in commands:
        done = _run(cmd, check=False)  # "not loaded" / "not enabled" is fine here
        echo("ran: " + " ".join(cmd) + ("" if done.returncode == 0 else " (not loaded)"))
    for p in paths:
        if p.exists():
            fileedit.remove(p)
            echo(f"removed {p}")
    for cmd in after:
        _run(cmd)
        echo("ran: " + " ".join(cmd))


def service_status(ctx: Context, args: Namespace) -> None:
    """Whether the service files are installed and current, and what the manager reports."""
    from helixd.ops import service as svc
    from helixd.ops.hooks import fileedit

    m, home = _manager(args.manager), Path.home()
    helixd = _exe("helixd", near=_exe("helixctl"))
    try:
        rendered = (
            {f.path: f.text for f in svc.render(m, helixd, home, os.environ)} if helixd else {}
        )
    except svc.TemplateMissing:
        rendered = {}
    paths = (
        [svc.unit_dir(home, os.environ) / u for u in svc.UNITS]
        if m == "systemd"
        else [svc.plist_path(home)]
    )
    for p in paths:
        text = fileedit.read(p)
        state = "absent" if text is None else "current" if rendered.get(p) == text else "differs"
        echo(f"{state:<8} {p}")
    tool = "systemctl" if m == "systemd" else "launchctl"
    if shutil.which(tool) is None:
        echo(f"{tool}: not available on this machine")
        return
    for cmd in svc.status_commands(m, os.getuid()):
        done = _run(cmd, check=False)
        out = (done.stdout.strip() or done.stderr.strip()).replace("\n", ", ")
        echo(f"{' '.join(cmd[1:])}: {out}")

"""``helixctl status | ping | rescan | flush | hook``: the daemon's state and the commands that
talk to it over its socket (``docs/socket-protocol.md``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixd.cli.common import EXIT_STORE, Context, describe, echo_json, json_flag, read_settings
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def status_arguments(p: ArgumentParser) -> None:
    json_flag(p, "Print the status document as JSON.")
    describe(p, status)


def status(ctx: Context, args: Namespace) -> None:
    """Daemon up or down, what it watches, how far ingest is behind, what the store holds,
    what keeps failing.  Exit 0 when the daemon runs and the store is usable; 3 when the
    daemon does not run or the store has a fault (named on stderr, with its fix)."""
    from helixd.cli.common import live_status
    from helixd.daemon import status as status_mod

    rc = read_settings(ctx)
    facts, fleet, fault, projects = (
        _status_facts(rc.store_db) if rc.store_db.exists() else (None, None, None, None)
    )
    doc = status_mod.gather(rc.store_db, facts, dict(rc.budgets), live_status(rc.store_db), fault)
    doc["sources"] = _survey(rc, projects)
    if rc.fleet.dsn or (fleet and fleet["recording"]):
        from helixd.fleet.status import local

        now = int(time.time() * 1000)
        doc["fleet"] = local(fleet, bool(rc.fleet.dsn), rc.fleet.outbox_warn_rows, now)
    if args.as_json:
        echo_json(doc)
    else:
        from helixd.cli.printers import print_status

        print_status(doc)
    problem = doc["store"]["fault"]
    if problem:
        echo(f"helixctl: {problem['message']}", err=True)
    ctx.exit(0 if doc["daemon"]["running"] and not problem else EXIT_STORE)


_Facts = tuple[
    dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None, list[str] | None
]


def _status_facts(db: Path) -> _Facts:
    """What the store holds, its fleet outbox and the project directories it knows (one
    connection for all three), or what keeps it from being read (projects: None, asked
    again on a connection of their own)."""
    from helixd.cli.common import CLI_BUSY_MS
    from helixd.paths import cache_dir
    from helixd.query import NoStore, open_reader
    from helixd.query.projects import projects_of
    from helixd.query.status import fleet_facts, store_facts

    try:
        con = open_reader(db, CLI_BUSY_MS)
    except NoStore as exc:
        from helixd.query import classify  # the store-fault rules: only once a read failed

        fault = classify(exc, db)
        return None, None, fault.as_dict() if fault else None, None
    try:
        memo = cache_dir() / "index-size.json"
        return store_facts(con, memo), fleet_facts(con), None, projects_of(con)
    except Exception as exc:
        from helixd.query import classify

        fault = classify(exc, db)
        if fault is None:
            raise
        return None, None, fault.as_dict(), None
    finally:
        con.close()


def _survey(rc: Any, projects: list[str] | None) -> dict[str, Any]:
    """The files under the roots and those Helix cannot read (nothing is opened): kept in
    the cache directory between runs and walked again when something it depended on
    changed (``helixd.sources.surveycache``).  ``projects``: the store's project
    directories when the facts' connection read them."""
    import os
    from pathlib import Path

    from helixd.paths import cache_dir
    from helixd.sources.surveycache import cached_survey

    if projects is None:
        from helixd.query.projects import known_projects

        projects = known_projects(rc.store_db)
    return cached_survey(rc, os.environ, Path.home(), projects, cache_dir() / "survey.json")


def _ask(ctx: Context, op: str, wait: float, as_json: bool, **fields: Any) -> dict[str, Any]:
    """The daemon's reply to ``op``; exit 3 when it does not answer, 1 when it says no."""
    from helixd.daemon.client import DaemonUnavailable, request

    try:
        reply = request(op, wait, **fields)
    except DaemonUnavailable as exc:
        echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_STORE)
    if as_json:
        echo_json(reply)
    elif not reply.get("ok"):
        echo(f"helixctl: the daemon says: {reply.get('error', 'no')}", err=True)
    if not reply.get("ok"):
        ctx.exit(1)
    return reply


def _reply_flag(p: ArgumentParser) -> None:
    json_flag(p, "Print the daemon's reply as JSON.")


def ping_arguments(p: ArgumentParser) -> None:
    _reply_flag(p)
    describe(p, ping)


def ping(ctx: Context, args: Namespace) -> None:
    """Ask the daemon whether it is alive (exit 3 when it does not answer)."""
    reply = _ask(ctx, "ping", 2.0, args.as_json)
    if not args.as_json:
        echo(f"helixd is up: pid {reply.get('pid')}, version {reply.get('version')}")


def rescan_arguments(p: ArgumentParser) -> None:
    _reply_flag(p)
    describe(p, rescan)


def rescan(ctx: Context, args: Namespace) -> None:
    """Ask the daemon for a full reconcile scan now."""
    _ask(ctx, "rescan", 5.0, args.as_json)
    if not args.as_json:
        echo("helixd will scan every root now")


def flush_arguments(p: ArgumentParser) -> None:
    p.add_argument("--timeout", default=60.0, type=float, help="Seconds to wait.  (default: 60.0)")
    _reply_flag(p)
    describe(p, flush)


def flush(ctx: Context, args: Namespace) -> None:
    """Wait until the daemon's work queue is empty."""
    _ask(ctx, "flush", args.timeout + 1, args.as_json, timeout=args.timeout)
    if not args.as_json:
        echo("helixd has read everything it was told about")


def hook_arguments(p: ArgumentParser) -> None:
    from argparse import REMAINDER

    p.add_argument("agent", metavar="AGENT")
    p.add_argument("args", metavar="ARG", nargs=REMAINDER)
    describe(p, hook)


def hook(ctx: Context, args: Namespace) -> None:
    """What agents' hooks run: hand AGENT's payload (stdin, or the JSON argument of Codex
    `notify`) to the daemon; it is spooled when the daemon is down.  Prints nothing and
    always exits 0 (an agent's hook must never fail because of Helix).  `helixctl hooks
    install` sets these up."""
    from helixd.cli.hook import main as hook_main

    sys.exit(hook_main([args.agent, *args.args]))

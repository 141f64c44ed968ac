"""``helixctl status | ping | rescan | flush | hook``: the daemon's state and the commands that
talk to it over its socket (``docs/socket-protocol.md``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from helixd.cli.common import EXIT_STORE, echo_json, read_settings


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Daemon up or down, what it watches, how far ingest is behind, what the store holds,
    what keeps failing.  Exit 0 when the daemon runs and the store is usable; 3 when the
    daemon does not run or the store has a fault (named on stderr, with its fix)."""
    from helixd.cli.common import live_status
    from helixd.daemon import status as status_mod

    rc = read_settings(ctx)
    facts, fleet, fault = _status_facts(rc.store_db) if rc.store_db.exists() else (None,) * 3
    doc = status_mod.gather(rc.store_db, facts, dict(rc.budgets), live_status(rc.store_db), fault)
    doc["sources"] = _survey(rc)
    if rc.fleet.dsn or (fleet and fleet["recording"]):
        from helixd.fleet.status import local

        now = int(time.time() * 1000)
        doc["fleet"] = local(fleet, bool(rc.fleet.dsn), rc.fleet.outbox_warn_rows, now)
    if as_json:
        echo_json(doc)
    else:
        from helixd.cli.printers import print_status

        print_status(doc)
    problem = doc["store"]["fault"]
    if problem:
        click.echo(f"helixctl: {problem['message']}", err=True)
    ctx.exit(0 if doc["daemon"]["running"] and not problem else EXIT_STORE)


def _status_facts(
    db: Path,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
    """What the store holds and its fleet outbox, or what keeps it from being read."""
    from helixd.cli.common import CLI_BUSY_MS
    from helixd.paths import cache_dir
    from helixd.query import NoStore, open_reader
    from helixd.query.status import fleet_facts, store_facts

    try:
        con = open_reader(db, CLI_BUSY_MS)
    except NoStore as exc:
        from helixd.query import classify  # the store-fault rules: only once a read failed

        fault = classify(exc, db)
        return None, None, fault.as_dict() if fault else None
    try:
        memo = cache_dir() / "index-size.json"
        return store_facts(con, memo), fleet_facts(con), None
    except Exception as exc:
        from helixd.query import classify

        fault = classify(exc, db)
        if fault is None:
            raise
        return None, None, fault.as_dict()
    finally:
        con.close()


def _survey(rc: Any) -> dict[str, Any]:
    """The files under the roots and those Helix cannot read (nothing is opened): kept in
    the cache directory between runs and walked again when something it depended on
    changed (``helixd.sources.surveycache``)."""
    import os
    from pathlib import Path

    from helixd.paths import cache_dir
    from helixd.query.projects import known_projects
    from helixd.sources.surveycache import cached_survey

    projects = known_projects(rc.store_db)
    return cached_survey(rc, os.environ, Path.home(), projects, cache_dir() / "survey.json")


def _ask(ctx: click.Context, op: str, wait: float, as_json: bool, **fields: Any) -> dict[str, Any]:
    """The daemon's reply to ``op``; exit 3 when it does not answer, 1 when it says no."""
    from helixd.daemon.client import DaemonUnavailable, request

    try:
        reply = request(op, wait, **fields)
    except DaemonUnavailable as exc:
        click.echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_STORE)
    if as_json:
        echo_json(reply)
    elif not reply.get("ok"):
        click.echo(f"helixctl: the daemon says: {reply.get('error', 'no')}", err=True)
    if not reply.get("ok"):
        ctx.exit(1)
    return reply


_JSON = click.option("--json", "as_json", is_flag=True, help="Print the daemon's reply as JSON.")


@click.command()
@_JSON
@click.pass_context
def ping(ctx: click.Context, as_json: bool) -> None:
    """Ask the daemon whether it is alive (exit 3 when it does not answer)."""
    reply = _ask(ctx, "ping", 2.0, as_json)
    if not as_json:
        click.echo(f"helixd is up: pid {reply.get('pid')}, version {reply.get('version')}")


@click.command()
@_JSON
@click.pass_context
def rescan(ctx: click.Context, as_json: bool) -> None:
    """Ask the daemon for a full reconcile scan now."""
    _ask(ctx, "rescan", 5.0, as_json)
    if not as_json:
        click.echo("helixd will scan every root now")


@click.command()
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait.")
@_JSON
@click.pass_context
def flush(ctx: click.Context, timeout: float, as_json: bool) -> None:
    """Wait until the daemon's work queue is empty."""
    _ask(ctx, "flush", timeout + 1, as_json, timeout=timeout)
    if not as_json:
        click.echo("helixd has read everything it was told about")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(agent: str, args: tuple[str, ...]) -> None:
    """What agents' hooks run: hand AGENT's payload (stdin, or the JSON argument of Codex
    `notify`) to the daemon; it is spooled when the daemon is down.  Prints nothing and
    always exits 0 (an agent's hook must never fail because of Helix).  `helixctl hooks
    install` sets these up."""
    from helixd.cli.hook import main as hook_main

    sys.exit(hook_main([agent, *args]))

"""``helixctl status | ping | rescan | flush | hook``: the daemon's state and the commands that
talk to it over its socket (``docs/socket-protocol.md``)."""

from __future__ import annotations

import sys
from typing import Any

import click

from helixd.cli.common import EXIT_STORE, echo_json, read_settings


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Daemon up or down, what it watches, how far ingest is behind, what the store holds.
    Exit 0 when the daemon runs, 3 when it does not."""
    from helixd.daemon import status as status_mod
    from helixd.query import NoStore, open_reader
    from helixd.query.status import store_facts

    rc = read_settings(ctx)
    facts = None
    if rc.store_db.exists():
        try:
            con = open_reader(rc.store_db)
        except NoStore:
            pass
        else:
            try:
                facts = store_facts(con)
            finally:
                con.close()
    doc = status_mod.gather(rc.store_db, facts, dict(rc.budgets))
    doc["sources"] = _survey(rc)
    if as_json:
        echo_json(doc)
    else:
        from helixd.cli.printers import print_status

        print_status(doc)
    ctx.exit(0 if doc["daemon"]["running"] else EXIT_STORE)


def _survey(rc: Any) -> dict[str, Any]:
    """The files under the roots and those Helix cannot read (nothing is opened)."""
    import os
    from pathlib import Path

    from helixd.adapters import REGISTRY
    from helixd.query.projects import known_projects
    from helixd.sources.discover import agent_roots, survey

    projects = known_projects(rc.store_db)
    return survey(agent_roots(rc, REGISTRY, os.environ, Path.home(), projects))


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

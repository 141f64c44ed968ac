"""``helixctl fleet push | status | migrate | off``: this machine's Tier 2 into the team's
PostgreSQL (``[fleet]`` in the config, docs/operations.md "Fleet"), and what is waiting.

Also the helpers ``report --fleet`` and ``stats --fleet`` use to reach the server.  Exit codes
as the rest of ``helixctl``: 2 when ``[fleet]`` is missing or wrong, 3 when the store or the
fleet database cannot be used.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import click

from helixd.cli.common import (
    EXIT_STORE,
    EXIT_USAGE,
    echo_json,
    fail,
    load_settings,
    open_store,
    read_settings,
)


def read_target(ctx: click.Context, section: Any = None) -> Any:
    """The fleet target of ``section`` (default: the light read settings' ``[fleet]``); exit
    2 when it has no dsn or the password file cannot be used."""
    from helixd.fleet.secret import SecretError
    from helixd.fleet.target import target_from

    try:
        target = target_from(section or read_settings(ctx).fleet)
    except SecretError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    if target is None:
        fail(ctx, "no fleet database configured: set dsn in [fleet] (or HELIX_FLEET__DSN)", 2)
    return target


def fleet_reader(ctx: click.Context) -> Any:
    """A read connection to the fleet database; exit 3 naming the problem."""
    from helixd.query.fleet import FleetDbError, open_fleet

    target = read_target(ctx)
    try:
        return open_fleet(target.dsn, target.password, target.connect_timeout)
    except FleetDbError as exc:
        fail(ctx, str(exc), EXIT_STORE)


@click.group()
def fleet() -> None:
    """Mirror this machine's sessions, digests, usage and signals into the team's PostgreSQL
    (`[fleet]` in the config); `report --fleet` and `stats --fleet` read it back."""


@fleet.command()
@click.option(
    "--batch-rows", type=click.IntRange(1, 100_000), default=None, help="Changes per transaction."
)
@click.option("--json", "as_json", is_flag=True, help="Print the push's summary as JSON.")
@click.pass_context
def push(ctx: click.Context, batch_rows: int | None, as_json: bool) -> None:
    """Push what changed since the last push (everything, the first time) now, whether or not
    the daemon runs.  Exit 3 when the fleet database cannot be used; what was not confirmed
    is pushed next time."""
    from helixd import __version__
    from helixd.fleet.push import PushError
    from helixd.fleet.push import push as run

    settings = load_settings(ctx)
    target = read_target(ctx, settings.fleet)
    if batch_rows:
        target = dataclasses.replace(target, batch_rows=batch_rows)

    def progress(r: Any) -> None:
        if not as_json and r.batches % 20 == 0:
            click.echo(f"  {r.entries:,} changes pushed ({r.rows:,} rows)", err=True)

    async def go() -> Any:
        store = await open_store(settings.store.db, readonly=False)
        try:
            return await run(store, target, __version__, on_batch=progress)
        finally:
            await store.close()

    try:
        result = asyncio.run(go())
    except PushError as exc:
        fail(ctx, f"push failed: {exc}", EXIT_STORE)
    if as_json:
        echo_json(result.as_dict())
        return
    extra = []
    if result.migrations:
        extra.append(f"migrated the server ({', '.join(result.migrations)})")
    if result.resync:
        extra.append("the server had lost earlier pushes: everything sent again")
    click.echo(
        f"pushed {result.entries:,} changes ({result.rows:,} rows) in {result.batches} batches,"
        f" {result.seconds:.2f} s, as {target.machine} ({target.user})"
        + (f"; {'; '.join(extra)}" if extra else "")
    )


@fleet.command()
@click.option("--json", "as_json", is_flag=True, help="Print the fleet status as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """What waits to be pushed and since when, the last push, and the server's side: its
    schema, every machine of the fleet with its last push.  Exit 3 when the server cannot be
    reached."""
    from helixd.fleet import status as fleet_status

    rc = read_settings(ctx)
    target = read_target(ctx)
    local = fleet_status.local(
        local_facts(rc.store_db), True, rc.fleet.outbox_warn_rows, int(time.time() * 1000)
    )
    doc = {"local": local, "server": fleet_status.probe(target, local.get("machine_id"))}
    if as_json:
        echo_json(doc)
    else:
        print_fleet(doc)
    ctx.exit(0 if doc["server"]["reachable"] and "error" not in doc["server"] else EXIT_STORE)


@fleet.command()
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Create or update the fleet schema on the server (as its owner: see docs/operations.md);
    pushes do it by themselves when their role may."""
    from helixd.fleet.push import PushError
    from helixd.fleet.push import migrate as run

    target = read_target(ctx)
    try:
        done = asyncio.run(run(target))
    except PushError as exc:
        fail(ctx, str(exc), EXIT_STORE)
    click.echo(f"applied {', '.join(done)}" if done else "the fleet schema is current")


@fleet.command()
@click.pass_context
def off(ctx: click.Context) -> None:
    """Stop recording changes for the fleet and drop what waits to be pushed (after removing
    [fleet] from the config).  The server keeps what it has; the next push starts over with
    everything."""
    from helixd.fleet.push import switch_off

    settings = load_settings(ctx)

    async def go() -> int:
        store = await open_store(settings.store.db, readonly=False)
        try:
            return int(await switch_off(store))
        finally:
            await store.close()

    dropped = asyncio.run(go())
    click.echo(f"fleet recording off; {dropped:,} waiting changes dropped")


def local_facts(db: Any) -> dict[str, Any] | None:
    """The store's outbox facts, or None without a store."""
    from helixd.query import NoStore, open_reader
    from helixd.query.status import fleet_facts

    if not db.exists():
        return None
    try:
        con = open_reader(db)
    except NoStore:
        return None
    try:
        return fleet_facts(con)
    finally:
        con.close()


def print_fleet(doc: dict[str, Any]) -> None:
    from helixd.cli.printers import fleet_line

    loc, srv = doc["local"], doc["server"]
    click.echo(fleet_line(loc))
    if not srv["reachable"]:
        click.echo(f"server {srv['server']}: unreachable: {srv.get('error')}")
        return
    due = srv.get("migrations_due") or []
    click.echo(
        f"server {srv['server']}: schema {', '.join(srv.get('schema') or ['none'])}"
        + (f" ({', '.join(due)} due: `helixctl fleet migrate`)" if due else "")
    )
    if srv.get("error"):
        click.echo(f"  error: {srv['error']}")
    for m in srv.get("machines") or []:
        mark = "*" if srv.get("this_machine") and m["machine_id"] == loc.get("machine_id") else " "
        click.echo(
            f" {mark}{m['machine']:<20} {m['user']:<12} {m['sessions']:>7,} sessions"
            f"  last push {m['last_push_at'] or '-'}"
        )

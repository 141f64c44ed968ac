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
from typing import TYPE_CHECKING, Any

from helixd.cli.common import (
    EXIT_STORE,
    EXIT_USAGE,
    Context,
    describe,
    echo_json,
    fail,
    int_range,
    json_flag,
    load_settings,
    open_store,
    read_settings,
    summary,
)
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def read_target(ctx: Context, section: Any = None) -> Any:
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


def fleet_reader(ctx: Context) -> Any:
    """A read connection to the fleet database; exit 3 naming the problem."""
    from helixd.query.fleet import FleetDbError, open_fleet

    target = read_target(ctx)
    try:
        return open_fleet(target.dsn, target.password, target.connect_timeout)
    except FleetDbError as exc:
        fail(ctx, str(exc), EXIT_STORE)


def fleet_arguments(p: ArgumentParser) -> None:
    p.description = (
        "Mirror this machine's sessions, digests, usage and signals into the team's PostgreSQL\n"
        "(`[fleet]` in the config); `report --fleet` and `stats --fleet` read it back."
    )
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    for name, run in (("push", push), ("status", status), ("migrate", migrate), ("off", off)):
        parser = sub.add_parser(name, help=summary(run))
        describe(parser, run)
        if name == "push":
            parser.add_argument(
                "--batch-rows",
                type=int_range(1, 100_000),
                default=None,
                help="Changes per transaction.",
            )
            json_flag(parser, "Print the push's summary as JSON.")
        elif name == "status":
            json_flag(parser, "Print the fleet status as JSON.")


def push(ctx: Context, args: Namespace) -> None:
    """Push what changed since the last push (everything, the first time) now, whether or not
    the daemon runs.  Exit 3 when the fleet database cannot be used; what was not confirmed
    is pushed next time."""
    from helixd import __version__
    from helixd.fleet.push import PushError
    from helixd.fleet.push import push as run

    batch_rows, as_json = args.batch_rows, args.as_json
    settings = load_settings(ctx)
    target = read_target(ctx, settings.fleet)
    if batch_rows:
        target = dataclasses.replace(target, batch_rows=batch_rows)

    def progress(r: Any) -> None:
        if not as_json and r.batches % 20 == 0:
            echo(f"  {r.entries:,} changes pushed ({r.rows:,} rows)", err=True)

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
    echo(
        f"pushed {result.entries:,} changes ({result.rows:,} rows) in {result.batches} batches,"
        f" {result.seconds:.2f} s, as {target.machine} ({target.user})"
        + (f"; {'; '.join(extra)}" if extra else "")
    )


def status(ctx: Context, args: Namespace) -> None:
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
    if args.as_json:
        echo_json(doc)
    else:
        print_fleet(doc)
    ctx.exit(0 if doc["server"]["reachable"] and "error" not in doc["server"] else EXIT_STORE)


def migrate(ctx: Context, args: Namespace) -> None:
    """Create or update the fleet schema on the server (as its owner: see docs/operations.md);
    pushes do it by themselves when their role may."""
    from helixd.fleet.push import PushError
    from helixd.fleet.push import migrate as run

    target = read_target(ctx)
    try:
        done = asyncio.run(run(target))
    except PushError as exc:
        fail(ctx, str(exc), EXIT_STORE)
    echo(f"applied {', '.join(done)}" if done else "the fleet schema is current")


def off(ctx: Context, args: Namespace) -> None:
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
    echo(f"fleet recording off; {dropped:,} waiting changes dropped")


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
    echo(fleet_line(loc))
    if not srv["reachable"]:
        echo(f"server {srv['server']}: unreachable: {srv.get('error')}")
        return
    due = srv.get("migrations_due") or []
    echo(
        f"server {srv['server']}: schema {', '.join(srv.get('schema') or ['none'])}"
        + (f" ({', '.join(due)} due: `helixctl fleet migrate`)" if due else "")
    )
    if srv.get("error"):
        echo(f"  error: {srv['error']}")
    for m in srv.get("machines") or []:
        mark = "*" if srv.get("this_machine") and m["machine_id"] == loc.get("machine_id") else " "
        echo(
            f" {mark}{m['machine']:<20} {m['user']:<12} {m['sessions']:>7,} sessions"
            f"  last push {m['last_push_at'] or '-'}"
        )

"""``helixctl evict``: the retention pass (spec §5.2) from the command line."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from helixd.cli.common import (
    EXIT_STORE,
    Context,
    describe,
    echo_json,
    json_flag,
    load_settings,
    open_store,
    price_table,
)
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def evict_arguments(p: ArgumentParser) -> None:
    p.add_argument(
        "--dry-run", action="store_true", help="Show what would go and why; change nothing."
    )
    json_flag(p, "Print the pass summary as JSON.")
    describe(p, evict)


def evict(ctx: Context, args: Namespace) -> None:
    """Run the retention pass: drop Tier 1 rows of analyzed sessions (oldest analysis first)
    while the raw tier is over its soft cap, and analyzed raw older than raw_max_age_days.
    Digests, usage and sessions are kept.  Prints what goes and why, bytes freed and the
    store file size before and after."""
    settings = load_settings(ctx)
    if not settings.store.db.exists():
        echo(f"helixctl: no store at {settings.store.db}", err=True)
        ctx.exit(EXIT_STORE)
    table = price_table(ctx, settings)
    summary = asyncio.run(_evict(settings, args.dry_run, table))
    if args.as_json:
        echo_json(summary)
    else:
        _print_evict(summary)
    ctx.exit(0)


async def _evict(settings: Any, dry_run: bool, table: Any) -> dict[str, Any]:
    from helixd import logs
    from helixd.ingest import digest
    from helixd.ingest.eviction import evict_pass
    from helixd.store.database import now_ms

    logs.configure("warning")  # data-loss and Tier 2 warnings on stderr; the rest is printed
    store = await open_store(settings.store.db, readonly=False)

    async def analyze_now() -> int:
        return await digest.analyze_stale(store, settings, table)

    try:
        return await evict_pass(
            store, settings.retention, now_ms(), None if dry_run else analyze_now, dry_run=dry_run
        )
    finally:
        await store.close()


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _print_evict(s: dict[str, Any]) -> None:
    from helixd.core.timeparse import iso

    for e in s["evictions"]:
        what = "raw blocks" if e["stage"] == 1 else "raw blocks + events + index"
        echo(
            f"{e['pass']:8}  {e['uid']:50}  {_mb(e['bytes']):>12}  {what:27}"
            f"  analyzed {iso(e['analyzed_at']) or 'never'}"
        )
    verb = "would free" if s["dry_run"] else "freed"
    freed = s["bytes_planned"] if s["dry_run"] else s["bytes_freed"]
    echo(
        f"{len(s['evictions'])} evictions, {verb} {_mb(freed)}; raw tier "
        f"{_mb(s['usage_before'])} -> {_mb(s['usage_after'])} "
        f"(soft cap {_mb(s['soft_cap'])}, hard cap {_mb(s['hard_cap'])}); of it the"
        f" full-text index {_mb(s['index_bytes_before'])}"
    )
    if not s["dry_run"]:
        echo(
            f"store file {_mb(s['file_bytes_before'])} -> {_mb(s['file_bytes_after'])}"
            f" in {s['seconds']:.2f} s"
        )
    if s["analyze_first"]:
        echo(
            "over the hard cap with un-analyzed data left"
            + (": analyzed now" if s["analyzed_now"] else " (a real pass analyzes it first)"),
            err=True,
        )
    for e in s["data_loss"]:
        echo(f"DATA LOSS: un-analyzed {e['uid']} ({_mb(e['bytes'])}) dropped", err=True)
    if s["tier2_over_cap"]:
        echo(
            f"warning: distilled tier {_mb(s['distilled_bytes'])} is over its cap "
            f"{_mb(s['distilled_cap'])} (nothing is dropped for it: review it)",
            err=True,
        )

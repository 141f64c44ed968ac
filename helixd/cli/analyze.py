"""``helixctl analyze`` and ``helixctl renormalize``: the analyze pass and re-normalization
on demand (the daemon runs both on its schedule)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from helixd.cli.common import Context, describe, json_flag, session_argument
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def analyze_arguments(p: ArgumentParser) -> None:
    session_argument(p, "uids", nargs="*")
    p.add_argument(
        "--all", dest="every", action="store_true", help="Rebuild every session's digest."
    )
    json_flag(p, "Print the summary as JSON.")
    describe(p, analyze)


def analyze(ctx: Context, args: Namespace) -> None:
    """Rebuild digests and signals: of the sessions named (UID, bare id or unique prefix),
    of every session with --all, else of every session that changed since it was last
    analyzed (and provisional digests now idle long enough to close)."""
    from helixd.cli.common import EXIT_NOT_FOUND, echo_json, load_settings, price_table

    settings = load_settings(ctx)
    table = price_table(ctx, settings)
    summary = asyncio.run(_analyze(settings, tuple(args.uids), args.every, table))
    if summary.get("unknown"):
        for uid in summary["unknown"]:
            echo(f"helixctl: no single session matches {uid!r}", err=True)
    if args.as_json:
        echo_json(summary)
    else:
        echo(
            f"analyzed {summary['digests']} sessions ({_mb(summary['raw_bytes'])} of raw lines)"
            f" in {summary['seconds']:.2f} s, prices of {summary['price_table_date']}"
        )
    ctx.exit(EXIT_NOT_FOUND if summary.get("unknown") else 0)


async def _analyze(settings: Any, uids: tuple[str, ...], every: bool, table: Any) -> dict[str, Any]:
    import time

    from helixd.cli.common import naming, open_store
    from helixd.ingest import digest
    from helixd.store.database import now_ms

    idle_ms = int(settings.daemon.idle_close_minutes * 60_000)
    store = await open_store(settings.store.db, readonly=False)
    try:
        unknown: list[str] = []
        now = now_ms()
        if uids:
            ids: list[int] = []
            for uid in uids:
                found = await store.find_sessions(uid)
                if len(found) == 1:
                    ids.append(int(found[0]["id"]))
                else:
                    unknown.append(uid)
        elif every:
            ids = await store.analyzable_session_ids()
        else:
            ids = await store.sessions_to_analyze(now, idle_ms)
        started = time.perf_counter()
        built = await digest.analyze(store, ids, now, idle_ms, table, naming(settings))
        seconds = time.perf_counter() - started
        raw = await store.raw_bytes_of(ids)
    finally:
        await store.close()
    return {
        "digests": built,
        "raw_bytes": raw,
        "seconds": round(seconds, 3),
        "mb_per_s": round(raw / 1e6 / seconds, 1) if seconds else 0.0,
        "price_table_date": table[0],
        "unknown": unknown,
    }


def renormalize_arguments(p: ArgumentParser) -> None:
    json_flag(p, "Print the summary as JSON.")
    describe(p, renormalize)


def renormalize(ctx: Context, args: Namespace) -> None:
    """Rebuild the rows and digests of every session an older adapter version produced,
    from the stored raw lines (the source files may be gone).  Sessions whose raw lines
    were evicted keep their rows and are listed as skipped."""
    from helixd.cli.common import echo_json, load_settings, price_table

    settings = load_settings(ctx)
    summary = asyncio.run(_renormalize(settings, price_table(ctx, settings)))
    if args.as_json:
        echo_json(summary)
    else:
        echo(
            f"renormalized {summary['sessions']} sessions in {summary['groups']} groups"
            f" ({summary['files']} files, {_mb(summary['bytes'])}) in {summary['seconds']:.2f} s;"
            f" digests rebuilt {summary['digests']}"
        )
        for line in summary["skipped"]:
            echo(f"  skipped {line}")
        if summary["retry"]:
            echo(f"  {summary['retry']} groups changed meanwhile: run again")
    ctx.exit(0)


async def _renormalize(settings: Any, table: Any) -> dict[str, Any]:
    from helixd import logs
    from helixd.adapters.registry import REGISTRY
    from helixd.cli.common import open_store
    from helixd.ingest import digest
    from helixd.ingest.renormalize import renormalize as run

    logs.configure("warning")  # the summary is printed; problems go to stderr
    store = await open_store(settings.store.db, readonly=False)
    try:
        stats = await run(store, REGISTRY, recheck=True)
        built = await digest.analyze_stale(store, settings, table)
        await store.checkpoint()
    finally:
        await store.close()
    return {**stats.as_dict(), "digests": built}

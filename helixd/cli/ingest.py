"""``helixctl ingest``: one sweep (design spec §8: discover → normalize → analyze → evict) —
read what is new in every transcript, rebuild the digests of the sessions that changed, then
run the retention pass (``--no-evict`` skips it).  The first step (``helixd.ingest.plan``)
finds out cheaply whether there is anything to do; only then does the full ingest start
(settings model, event loop, the store opened for writing)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixd.cli.common import (
    Context,
    agent_option,
    check_agents,
    describe,
    echo_json,
    load_settings,
    naming,
    open_store,
    price_table,
    read_settings,
)

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def _directory(text: str) -> Path:
    """``--root``: not a file (click's ``Path(file_okay=False)``)."""
    from argparse import ArgumentTypeError

    path = Path(text)
    if path.is_file():
        raise ArgumentTypeError(f"Directory {text!r} is a file.")
    return path


def ingest_arguments(p: ArgumentParser) -> None:
    agent_option(p)
    p.add_argument(
        "--root",
        dest="roots",
        metavar="DIR",
        action="append",
        default=[],
        type=_directory,
        help="Scan this directory instead of the agent's configured roots (repeatable).",
    )
    p.add_argument("--json", dest="as_json", action="store_true", help="Print the summary as JSON.")
    p.add_argument(
        "--no-evict",
        action="store_true",
        help="Skip the retention pass that ends a sweep (see `helixctl evict`).",
    )
    describe(p, ingest)


def ingest(ctx: Context, args: Namespace) -> None:
    """Backfill every transcript once; a second run reads only what is new.  The sweep ends
    with the retention pass (`helixctl evict`) unless --no-evict; a sweep that found
    nothing new changes nothing, so it skips the pass too."""
    from helixd.adapters.registry import REGISTRY
    from helixd.ingest.plan import Plan, idle_summary, plan, store_facts
    from helixd.query.projects import known_projects
    from helixd.sources.discover import root_pairs

    started = time.perf_counter()
    agents, roots, as_json, no_evict = tuple(args.agents), args.roots, args.as_json, args.no_evict
    check_agents(agents)
    rc = read_settings(ctx)
    chosen = [a for a in REGISTRY if not agents or a.name in agents]
    versions = {a.name: a.version for a in REGISTRY}
    facts = store_facts(rc.store_db, versions)  # one connection: the cursors and the projects
    if roots:
        pairs = [(a, r.expanduser().resolve()) for a in chosen for r in roots]
    elif isinstance(facts, Plan):  # no store yet, a migration due…: the projects on their own
        pairs = root_pairs(rc, chosen, os.environ, Path.home(), known_projects(rc.store_db))
    else:  # the projects read with the cursors
        pairs = root_pairs(rc, chosen, os.environ, Path.home(), facts["projects"])
    from helixd.paths import cache_dir

    first = plan(rc.store_db, pairs, versions, cache_dir() / "listings.json", facts)
    if first.idle:
        summary = idle_summary(first, rc.store_db, pairs, started)
    else:
        import asyncio  # the event loop only when there is work: ~40 ms of imports

        settings = load_settings(ctx)
        table = price_table(ctx, settings)
        summary = asyncio.run(_ingest(settings, pairs, table, evict=not no_evict))
    if as_json and first.idle:
        _echo_idle_json(summary)
    elif as_json:
        echo_json(summary)
    else:
        from helixd.cli.printers import print_summary

        print_summary(summary)


def _echo_idle_json(summary: dict[str, Any]) -> None:
    """``echo_json``'s output (orjson's two-space indent) with the standard library's json,
    which the plan has loaded: importing orjson costs a re-scan with nothing new ~5 ms (it
    loads uuid, platform, dataclasses and enum).  The summary holds only str, int, float,
    list and str-keyed dict."""
    import json

    sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


async def _ingest(
    settings: Any, pairs: list[Any], table: Any, *, evict: bool = True
) -> dict[str, Any]:
    from helixd.adapters.registry import REGISTRY
    from helixd.ingest import digest
    from helixd.ingest.eviction import sweep_evict
    from helixd.ingest.pipeline import Ingestor, discover
    from helixd.store.database import now_ms

    store = await open_store(settings.store.db, readonly=False, create=True)
    try:
        ingestor = Ingestor(
            store,
            chunk_bytes=settings.ingest.chunk_bytes,
            max_line_bytes=settings.ingest.max_line_bytes,
            keep_pool=True,  # a backlog's parse workers then build the digests
        )
        try:
            sources = discover(pairs)  # walked in a thread; reports what it skipped
            with _Progress() as progress:
                stats = await ingestor.backfill(sources, progress)
            changed = await store.session_ids_changed_since_analysis()
            digests = await digest.analyze(
                store,
                changed,
                now_ms(),
                table=table,
                naming=naming(settings),
                builder=ingestor.digest_builder(settings.store.db, table),
            )
        finally:
            await ingestor.close()
        summary = stats.as_dict()
        summary["digests_built"] = digests
        if evict:
            from helixd import logs

            logs.configure("warning")  # data-loss warnings on stderr; the rest is the summary
            summary["eviction"] = await sweep_evict(store, settings, table, now_ms())
        await store.checkpoint()
        summary["stale_files"] = await store.stale_file_count({a.name: a.version for a in REGISTRY})
        summary["store"] = str(settings.store.db)
        summary["roots"] = sorted({str(r) for _, r in pairs if Path(r).is_dir()})
        return summary
    finally:
        await store.close()


class _Progress:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""

    def __enter__(self) -> Any:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self.bar = Progress(
            "ingest",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.bar.start()
        self.task = self.bar.add_task("ingest", total=None)
        return self.update

    def update(self, done: int, total: int) -> None:
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if hasattr(self, "bar"):
            self.bar.stop()

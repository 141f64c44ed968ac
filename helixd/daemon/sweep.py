"""``helixd --once``: one full sweep (ingest, digests, retention) and its exit code."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import structlog

from helixd import config
from helixd.adapters.registry import REGISTRY
from helixd.ingest import digest, eviction
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store, now_ms
from helixd.store.faults import classify
from helixd.store.projects import known_projects

log = structlog.get_logger("helixd")


async def run_once(settings: config.Settings, *, evict: bool = True) -> int:
    """One full sweep (design spec §8): every file once, the digests of what changed, then
    the retention pass (unless ``evict`` is false)."""
    store = await Store.open(settings.store.db)
    try:
        projects = known_projects(settings.store.db)
        pairs = config.agent_roots(settings, REGISTRY, os.environ, Path.home(), projects)
        stats = await Ingestor(
            store,
            chunk_bytes=settings.ingest.chunk_bytes,
            max_line_bytes=settings.ingest.max_line_bytes,
        ).backfill(discover(pairs))
        now = now_ms()
        built = await digest.analyze_stale(store, settings, config.price_table(settings), now)
        evicted: dict[str, Any] = {}
        if evict:
            done = await eviction.sweep_evict(store, settings, config.price_table(settings), now)
            evicted = {"evicted_bytes": done.get("bytes_freed", 0), "tier1": done["usage_after"]}
        await store.checkpoint()
        log.info("sweep_done", digests=built, **evicted, **stats.as_dict())
    finally:
        await store.close()
    return 0


def sweep(settings: config.Settings, evict: bool = True) -> int:
    """``helixd --once``: exit 3 with one line when the store cannot be used."""
    try:
        return asyncio.run(run_once(settings, evict=evict))
    except Exception as exc:
        fault = classify(exc, settings.store.db)
        if fault is None:
            raise
        print(f"helixd: {fault}", file=sys.stderr)
        return 3

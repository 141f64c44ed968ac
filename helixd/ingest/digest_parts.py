"""The digests after a backfill built on two cores: parts of ``PIPELINE_BATCH`` sessions go
to a builder (the warm parse workers, ``ParsePool.digest_builder``) as far as it keeps up,
the rest are read and built here, and every part is saved here in order
(``helixd.ingest.digest.analyze`` with a ``builder``; issue 12)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

from helixd.ingest.digest import SCHEMA_VERSION, Builder, Built, build_all

if TYPE_CHECKING:
    from helixd.core.attribution import Naming
    from helixd.core.pricing import PriceTable
    from helixd.store.database import Store

PIPELINE_BATCH: Final = 100  # sessions per part when a builder is given (parts overlap)
# parts at the builder not built yet; beyond, the next is built here.  3: the store thread
# saves every part (~50 ms each on 1.3 GB), so this side is the longer one when it also
# reads and builds half the parts (2: 11 of 23 here, 2.8 s; 3: 7-8 here, 2.4-2.7 s; issue 12)
BUILDER_AHEAD: Final = 3
UNSAVED_PARTS: Final = 8  # parts built or building and not saved yet (the saves go in order)


async def analyze_in_parts(
    store: Store,
    ids: list[int],
    now: int,
    idle_ms: int,
    table: PriceTable,
    naming: Naming,
    builder: Builder,
) -> int:
    """``analyze`` with the parts built elsewhere as far as the builder keeps up: a part goes
    to the builder while it has fewer than ``BUILDER_AHEAD`` unbuilt, else it is read and
    built here meanwhile; the parts are saved in order, each as soon as it is built and the
    ones before it are saved (this process's saves, on the store's thread, were the longer
    side when every other part was built here: 2.8 s against the worker's 1.4 s on 1.3 GB).
    A part's projects are saved before it is read (the builder reads them from the store);
    each part keeps the instant its facts were read (``analyzed_at``), as above."""
    from helixd.ingest.attribution import resolve_projects, with_task_refs

    async def here(part: list[int]) -> tuple[int, list[Built]]:
        read_at = int(time.time() * 1000)
        facts = await store.digest_facts(part)
        return read_at, build_all(facts, now, idle_ms, table)

    async def save(
        part: list[int], projects: dict[int, Any], built: Awaitable[tuple[int, list[Built]]]
    ) -> None:
        try:
            read_at, saved = await built
        except Exception as exc:  # a worker gone or failing: this part is built here
            import structlog  # (not at the top: the read commands import this module)

            structlog.get_logger("helixd.digest").warning(
                "digest_builder_failed", sessions=len(part), error=repr(exc)
            )
            read_at, saved = await here(part)
        await store.save_attribution(with_task_refs(projects, saved, naming))
        await store.save_digests(saved, SCHEMA_VERSION, read_at)

    loop = asyncio.get_running_loop()
    Pending = tuple[list[int], dict[int, Any], asyncio.Future[tuple[int, list[Built]]]]
    pending: deque[Pending] = deque()
    at_builder: list[asyncio.Future[tuple[int, list[Built]]]] = []
    try:
        for i in range(0, len(ids), PIPELINE_BATCH):
            part = ids[i : i + PIPELINE_BATCH]
            projects = await resolve_projects(store, part, naming)
            built: asyncio.Future[tuple[int, list[Built]]]
            at_builder = [f for f in at_builder if not f.done()]
            if len(at_builder) < BUILDER_AHEAD:
                built = asyncio.ensure_future(builder(part, now, idle_ms))
                at_builder.append(built)
            else:  # this one here, while the builder works on its own
                built = loop.create_future()
                built.set_result(await here(part))
            pending.append((part, projects, built))
            while pending and (pending[0][2].done() or len(pending) >= UNSAVED_PARTS):
                await save(*pending.popleft())
        while pending:
            await save(*pending.popleft())
    finally:
        for _, _, unsaved in pending:  # failed midway: nothing waits for the rest
            unsaved.cancel()
    return len(ids)

"""Shared helpers for the golden tests of the agents added by issue 16 part B: parse a
fixture file whole, and ingest a root through the real pipeline into a real store; and the
step ingest of the rollup tests (fixtures arriving a few files at a time)."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from helixd.adapters.base import Adapter, Chunk, FileContext
from helixd.adapters.registry import REGISTRY
from helixd.core.records import Parsed
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.store.database import Store

FIXTURES = Path(__file__).parent / "fixtures"


def parse_fixture(adapter: Adapter, rel: str) -> Parsed:
    """The whole fixture file ``tests/fixtures/<agent>/<rel>`` in one read, with its sidecar."""
    path = FIXTURES / adapter.name / rel
    side_name = adapter.sidecar(str(path))
    side = Path(side_name).read_bytes() if side_name and Path(side_name).is_file() else None
    return adapter.parse(Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel, side)), {})


def kinds(parsed: Parsed) -> dict[str, int]:
    return dict(Counter(e.kind for e in parsed.events))


async def ingest(store: Store, adapter: Adapter, root: Path) -> IngestStats:
    return await Ingestor(store).backfill(discover([(adapter, root)]))


async def ingest_in_steps(
    store: Store,
    base: Path,
    agents: tuple[str, ...],
    every: int,
    after_step: Callable[[], Awaitable[object]],
) -> list[tuple[Adapter, Path]]:
    """The agents' real fixture files arriving one at a time under ``base/<agent>/p0..p2``,
    ingested after every ``every`` files of an agent (``after_step`` awaited after each of
    those ingests), then all ingested once more.  Returns the (adapter, root) pairs."""
    roots = {a.name: base / a.name for a in REGISTRY if a.name in agents}
    pairs = [(a, roots[a.name]) for a in REGISTRY if a.name in roots]
    for name, root in roots.items():
        files = sorted((FIXTURES / name).rglob("*.jsonl"))
        for i, f in enumerate(files):
            dest = root / f"p{i % 3}" / f.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest)
            if i % every == every - 1:
                await Ingestor(store).backfill(discover(pairs))
                await after_step()
    await Ingestor(store).backfill(discover(pairs))
    return pairs


async def one(store: Store, sql: str, *args: object) -> Any:
    rows = await store.db.execute(sql, args)
    row = rows[0] if rows else None
    assert row is not None
    return row[0] if len(row) == 1 else tuple(row)


async def usage_of(store: Store, uid: str, last: str = "cache_write_5m") -> Any:
    """(facts, input, output, cache read, ``last``) of one session in the store: the cache
    writes by default, ``reasoning`` for the agents that split it out (Gemini, Grok)."""
    assert last in ("cache_write_5m", "reasoning")
    return await one(
        store,
        "SELECT count(*), sum(u.input), sum(u.output), sum(u.cache_read), sum(u." + last + ")"
        " FROM usage u JOIN sessions s ON s.id = u.session_id WHERE s.uid = ?",
        uid,
    )


async def usage_with_reasoning(store: Store, uid: str) -> Any:
    """(facts, input, output, cache read, reasoning) of one session in the store."""
    return await usage_of(store, uid, "reasoning")


async def kinds_of(store: Store, uid: str) -> dict[str, int]:
    rows = await store.db.execute(
        "SELECT kind, count(*) FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.uid = ? GROUP BY kind",
        (uid,),
    )
    return {k: n for k, n in rows}

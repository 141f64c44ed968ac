"""Helpers for the adapter contract suite: feed a file to an adapter like ingest does."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any

from helixd.adapters import Adapter, Chunk, FileContext, Table
from helixd.core.records import Parsed
from helixd.sources import bundle, sqlite
from helixd.sources.gate import Source
from helixd.store import agentdb
from helixd.store.batch import merge_infos

FIXTURES = Path(__file__).parent / "fixtures"


def samples(adapter: Adapter, max_bytes: int = 400_000) -> list[tuple[Path, str]]:
    """``(path, rel)`` of every fixture file the adapter claims, smallest first."""
    base = FIXTURES / adapter.name
    found = [(p, p.relative_to(base).as_posix()) for p in base.rglob("*") if p.is_file()]
    chosen = [(p, rel) for p, rel in found if adapter.matches(rel)]
    if adapter.tables:  # a database's rows: few real databases, all of them count
        max_bytes = max(max_bytes, 1 << 20)
    return sorted(
        (x for x in chosen if len(sample_bytes(adapter, x[0])) <= max_bytes),
        key=lambda x: (len(sample_bytes(adapter, x[0])), x[1]),
    )


def sample_bytes(adapter: Adapter, path: Path) -> bytes:
    """What the adapter is given for a fixture file: its bytes, or for a SQLite source the
    row lines of a first read (``helixd/sources/sqlite.py``), or for a file read with its
    members the bundle's lines (``helixd/sources/bundle.py``)."""
    if adapter.tables:
        return _rows(adapter, path)
    base = FIXTURES / adapter.name
    rel = path.relative_to(base).as_posix() if path.is_relative_to(base) else ""
    if rel and adapter.bundle(rel) is not None:
        return bundle.read_bundle(Source(adapter, str(base), str(path), rel))[0]
    return path.read_bytes()


@cache
def _rows(adapter: Adapter, path: Path) -> bytes:
    return db_rows(path, adapter.tables)


def db_rows(path: Path, tables: Sequence[Table]) -> bytes:
    """Every row line of the database at ``path`` (what a first read gives), read from a
    private copy (nothing is created beside the fixture)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        agentdb.snapshot(agentdb.private_copy(str(path), tmp)) as conn,
    ):
        pieces = sqlite.read_rows(partial(agentdb.rows, conn), tables, {}, 0, 1 << 30)
        return b"".join(p.data for p in pieces)


def feed(
    adapter: Adapter,
    data: bytes,
    path: str,
    rel: str,
    cuts: Sequence[int],
    sidecar: bytes | None = None,
) -> dict[str, Any]:
    """Parse ``data`` as if the file had been written up to each cut in turn (each read
    reaches the end of what exists, so ``at_eof`` is true), then normalise the output."""
    ctx = FileContext(path, rel, sidecar)
    state: dict[str, Any] = {}
    offset = 0
    outs: list[Parsed] = []
    for cut in [*sorted(set(cuts)), len(data)]:
        if cut <= offset:
            continue
        if adapter.whole_file(rel) and cut < len(data):
            continue
        while offset < cut:
            parsed = adapter.parse(Chunk(data[offset:cut], offset, True, ctx), state)
            assert 0 <= parsed.consumed <= cut - offset
            if parsed.consumed == 0:
                break
            consumed_bytes = data[offset : offset + parsed.consumed]
            assert (
                cut == len(data)
                or consumed_bytes.endswith((b"\n", b"}"))
                or (not consumed_bytes.strip())
            ), "consumed must end on a record boundary"
            outs.append(parsed)
            state = parsed.state
            offset += parsed.consumed
    return normalise(outs)


def normalise(outs: Sequence[Parsed]) -> dict[str, Any]:
    unknown: Counter[str] = Counter()
    for p in outs:
        unknown.update(p.unknown_types)
    return {
        "events": sorted(repr(e) for p in outs for e in p.events),
        "usage": sorted(repr(u) for p in outs for u in p.usage),
        "bad": sorted((b.offset, b.length) for p in outs for b in p.bad),
        "unknown": dict(unknown),
        "sessions": merge_infos(s for p in outs for s in p.sessions),
        "lines": sum(p.lines for p in outs),
    }

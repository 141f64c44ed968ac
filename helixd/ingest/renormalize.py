"""Re-normalization: rebuild the rows an older adapter version produced, from the stored raw
lines (code-o11y "schema versioning").

Each file records the adapter version that parsed it.  When an adapter's ``version`` rises,
every group of sessions with a file parsed by an older version (``helixd.store.renorm``) is
re-parsed from its stored raw lines — never from the source files, which may be gone — and
its events, usage facts, index entries and bad-line records are replaced in one
transaction; then its digests are rebuilt.  The result equals a fresh ingest of the same
bytes by the new version.  A group whose raw lines were evicted (or are incomplete) keeps
its rows and digests and is reported as skipped.

The daemon runs this in the background at low priority: one group per store transaction,
and it stops as soon as files are waiting to be ingested (``should_stop``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
import zstandard

from helixd.adapters import Adapter, Chunk, FileContext
from helixd.adapters.guard import parse_total
from helixd.core.records import BadLine, Cursor, Parsed
from helixd.sources.gate import Refused, Source
from helixd.sources.tailer import masked_sidecar
from helixd.store.database import Batch, Store
from helixd.store.renorm import Group, StoredRaw

log = structlog.get_logger("helixd.renormalize")


@dataclass(slots=True)
class RenormalizeStats:
    groups: int = 0
    sessions: int = 0
    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    retry: int = 0  # groups an ingest changed meanwhile (taken again next run)
    seconds: float = 0.0
    session_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "sessions": self.sessions,
            "files": self.files,
            "bytes": self.bytes,
            "skipped": self.skipped,
            "retry": self.retry,
            "seconds": round(self.seconds, 3),
        }


def walk_order(c: Cursor) -> tuple[str, tuple[str, ...], str]:
    """The order ``ingest.discover`` meets files in (a directory's files before its
    subdirectories), so that ``seq`` comes out as in a fresh ingest."""
    rel = os.path.relpath(c.path, c.root).replace(os.sep, "/")
    *dirs, name = rel.split("/")
    return c.root, tuple(dirs), name


RETAKES: Final = 3  # passes over a graph that moved while the pass replayed


class Unrebuildable(Exception):
    """A group that no pass can rebuild now (raw lines gone or unreadable, an unknown
    agent): it keeps its rows and is reported as skipped."""


def replay_file(adapter: Adapter, raw: StoredRaw) -> tuple[list[Batch], int]:
    """Batches re-parsing one file's stored raw lines (each generation from byte 0 with a
    fresh state, as when it was read), ending with the file's own cursor; returns them and
    the bytes parsed.  Lines kept raw unparsed (over-long) stay bad lines with their
    recorded reason."""
    c = raw.cursor
    assert c is not None
    rel = os.path.relpath(c.path, c.root).replace(os.sep, "/")
    ctx = FileContext(c.path, rel, _sidecar(Source(adapter, c.root, c.path, rel), raw.sidecar))
    dctx = zstandard.ZstdDecompressor()
    batches: list[Batch] = []
    parsed_bytes = 0
    # as a fresh ingest writes them (``pipeline``): a document rewritten whole, or a
    # database's rows (rewritten in place, or the same row in two databases), replace the
    # events stored under their keys — the last read wins, in both
    whole = adapter.whole_file(rel) or bool(adapter.tables)
    state: dict[str, Any] = {}
    generation: int | None = None
    carry = b""
    for i, (gen, start, end, data_z) in enumerate(raw.blocks):
        if gen != generation:
            generation, state, carry = gen, {}, b""
        last = i + 1 == len(raw.blocks) or raw.blocks[i + 1][0] != gen
        cursor = c._replace(generation=gen, offset=end, adapter_version=adapter.version)
        reason = raw.oversized.get((gen, start))
        if reason is not None:
            bad = BadLine(start, end - start, reason)
            batches.append(
                Batch(
                    cursor=cursor._replace(state=state),
                    start=start,
                    raw=b"",
                    parsed=Parsed(consumed=end - start, state=state, bad=[bad]),
                    replay=True,
                )
            )
            continue
        data = carry + dctx.decompress(data_z, max_output_size=max(end - start, 1) + 1)
        base = start - len(carry)
        parsed = parse_total(adapter, Chunk(data, base, last, ctx), state)
        carry = data[parsed.consumed :]
        state = parsed.state
        parsed_bytes += parsed.consumed
        batches.append(
            Batch(
                cursor=cursor._replace(offset=base + parsed.consumed, state=state),
                start=base,
                raw=b"",
                parsed=parsed,
                replace_events=whole,
                replay=True,
                source=data[: parsed.consumed],
            )
        )
    # The file's own cursor last (its current generation's state: an empty state when that
    # generation has no stored bytes yet), so an older generation never overwrites it.
    final = state if generation == c.generation else {}
    # Entries a source edge keeps in the cursor ("~…": a database's watermarks) are not
    # the adapter's: they say what was read, and stay.
    final = {**final, **{k: v for k, v in c.state.items() if k.startswith("~")}}
    batches.append(
        Batch(
            cursor=c._replace(adapter_version=adapter.version, state=final),
            start=c.offset,
            raw=b"",
            parsed=Parsed(consumed=0, state=final),
            replay=True,
        )
    )
    return batches, parsed_bytes


def _sidecar(src: Source, stored: bytes | None) -> bytes | None:
    """The companion file ingest saw (stored with the cursor).  Stores written before it was
    kept have none: the file on disk is read then (through the path gate), if it is still
    there and readable, masked like ingest masks it."""
    if stored is not None:
        return stored
    try:
        return masked_sidecar(src)
    except (Refused, OSError):
        return None


async def renormalize(
    store: Store,
    adapters: Iterable[Adapter],
    *,
    should_stop: Callable[[], bool] | None = None,
    recheck: bool = False,
) -> RenormalizeStats:
    """Rebuild every stale group (see the module docstring); the digests are left to the
    caller's analyze pass (the sessions are marked changed).  Stale files an earlier pass
    found it cannot rebuild are not looked at again unless ``recheck``."""
    started = time.perf_counter()
    by_name = {a.name: a for a in adapters}
    stats = RenormalizeStats()
    versions = {n: a.version for n, a in by_name.items()}
    stale = await store.stale_file_count(versions)
    mark = f"{sorted(versions.items())} {stale}"
    if not stale or (not recheck and await store.renormalize_skipped_mark() == mark):
        # the usual case: one count, no graph (the daemon asks every few minutes); or only
        # files no pass can rebuild are left, as the last pass found
        return stats
    finished = True
    # A group refused because the graph moved while the pass replayed (the same event in two
    # sources, e.g. OpenCode's tree and database: replaying one gives its events back to
    # it, linking it to sessions the graph did not join to it) is taken again at once, from
    # a fresh graph, a few times at most; what is still refused then waits for the next run.
    for _ in range(RETAKES):
        stats.retry, stats.skipped = 0, []  # a fresh graph finds again what is left
        finished = await _pass(store, by_name, versions, stats, should_stop)
        if not finished or not stats.retry:
            break
    if finished and stats.skipped and not stats.retry:
        # What is still stale now is what no pass can rebuild: remember it.
        left = await store.stale_file_count(versions)
        await store.set_renormalize_skipped_mark(f"{sorted(versions.items())} {left}")
    stats.seconds = time.perf_counter() - started
    if stats.groups or stats.skipped:
        log.info("renormalized", **stats.as_dict())
    return stats


async def _pass(
    store: Store,
    by_name: dict[str, Adapter],
    versions: dict[str, int],
    stats: RenormalizeStats,
    should_stop: Callable[[], bool] | None,
) -> bool:
    """One pass over the stale groups of a fresh graph; False when asked to stop."""
    groups = await store.renormalize_groups(versions)
    for group in groups:
        if not group.complete:
            stats.skipped.append(f"{len(group.session_ids)} sessions: {group.why}")
            continue
        if should_stop is not None and should_stop():
            return False
        try:
            done = await _replay_group(store, by_name, group)
        except (zstandard.ZstdError, Unrebuildable) as exc:
            # A stored raw block that cannot be read, raw lines evicted meanwhile, an
            # unknown agent: this group keeps its rows, the others go on.
            where = ", ".join(c.path for c in group.cursors[:3])
            why = f"unreadable raw lines ({exc})" if isinstance(exc, zstandard.ZstdError) else exc
            stats.skipped.append(f"{len(group.session_ids)} sessions: {why}: {where}")
            log.warning("renormalize_skipped", reason=str(exc), files=where)
            continue
        if done is None:
            stats.retry += 1
            continue
        stats.groups += 1
        stats.sessions += len(group.session_ids)
        stats.files += len(group.cursors)
        stats.bytes += done
        stats.session_ids.extend(group.session_ids)
    return True


async def _replay_group(store: Store, by_name: dict[str, Adapter], group: Group) -> int | None:
    batches: list[Batch] = []
    expect: list[tuple[int, int, int, int]] = []
    parsed = 0
    for c in sorted(group.cursors, key=walk_order):
        assert c.file_id is not None
        adapter = by_name.get(c.agent)
        if adapter is None:
            raise Unrebuildable(f"no adapter for {c.agent!r}: {c.path}")
        raw = await store.stored_raw(c.file_id)
        if raw.cursor is None:
            return None  # the file row went away meanwhile: take the graph again
        if not raw.whole:
            raise Unrebuildable(f"raw lines incomplete: {c.path}")
        # parsing is pure: a thread keeps the daemon's loop answering meanwhile
        file_batches, n = await asyncio.to_thread(replay_file, adapter, raw)
        batches.extend(file_batches)
        expect.append((c.file_id, raw.cursor.generation, raw.cursor.offset, len(raw.blocks)))
        parsed += n
    ok = await store.replay(group.session_ids, expect, batches)
    return parsed if ok else None

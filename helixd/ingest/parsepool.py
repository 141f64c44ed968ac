"""Parsing on the other cores: redact, parse, prepare the rows of a piece and compress its
raw bytes in a worker process, so that the ingesting process only reads and runs SQL (the
writer's thread is the critical path).  Compression moved here in the third pass of issue
12: the ingesting process was the busier side (SQL + zstd + unpickling against the parse),
and the compressed block is about a quarter of the bytes, cheap to send back.

Used for a backlog (a first ingest, a catch-up): a pool lives as long as one ingest run and
is shut down with it, so the daemon at rest holds no extra process and a small live append
never pays for a process start (it is parsed inline; ``Ingestor.pool_min_bytes``).

Everything a worker does with a piece is pure: bytes in, records out (the adapters are
pure, redaction and compression are functions of the bytes).  It never opens a source
file; pieces are read by the ingesting process through the path gate and the single writer
commits what comes back, in the order the pieces were read.  After a backfill the same
workers can build the digests (``ParsePool.digest_builder``): there a worker opens the store
file read-only to read the facts and sends the digests back; the ingesting process saves
them.

A file's pieces must be parsed in order with the adapter state carried from one to the
next.  Each worker is its own single-process executor and a file's pieces all go to the
same one (by the file's token), which runs them first in, first out: the first piece
carries the file's starting state, later ones take the state the worker kept from the
piece before, so no piece waits for its predecessor to travel back and forth.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import operator
import os
import pickle
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.adapters.guard import parse_total
from helixd.core.records import Parsed, UsageFact
from helixd.core.redact import redact
from helixd.store.batch import Prepared, compress_raw, prepare_event

if TYPE_CHECKING:
    from helixd.core.pricing import PriceTable
    from helixd.ingest.digest import Builder, Built

MAX_WORKERS: Final = 3
# A usage fact crosses the process boundary as a plain tuple of its fields: a pickled
# record (a NamedTuple, rebuilt through its class) costs about 7 µs a round trip, the tuple 1.
_USAGE_FIELDS: Final = operator.attrgetter(*UsageFact._fields)
UsageTuple = tuple[Any, ...]


def default_workers() -> int:
    """One worker per core beyond the one the ingesting process (the writer) keeps busy."""
    return max(1, min(MAX_WORKERS, (os.cpu_count() or 2) - 1))


@dataclass(frozen=True, slots=True)
class PieceJob:
    """One piece of one file.  ``state`` is the file's starting state on its first piece;
    ``None`` on the later ones: the worker carries on from its own copy."""

    token: int
    adapter: str
    data: bytes
    base: int
    at_eof: bool
    ctx: FileContext
    state: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class PieceDone:
    """What came of a piece.  ``redacted`` is only sent back when redaction changed the
    bytes (the caller still holds the piece otherwise); ``rows`` are the writer's prepared rows
    (``Batch.prepare``), ``None`` if they could not be made here (the writer then prepares
    them itself and quarantines what fails); ``raw_z`` the consumed bytes compressed as the
    store keeps them (``None`` when nothing was consumed).  With ``rows``, ``parsed.events``
    is empty: the rows hold everything the writer stores of an event, and sending the events
    too cost as much again in pickling on each side (their payloads, tool output, included)."""

    redacted: bytes | None
    secrets: int
    parsed: Parsed  # its ``usage`` travels in ``usage`` (use ``records``)
    rows: list[Prepared] | None
    usage: list[UsageTuple]
    raw_z: bytes | None = None  # the consumed bytes (``redacted[:parsed.consumed]``), stored form

    def records(self) -> Parsed:
        """(in the ingesting process) The parse result with its usage facts rebuilt."""
        return self.parsed._replace(usage=[UsageFact(*t) for t in self.usage])


_carried: dict[int, dict[str, Any]] = {}  # in a worker: file token -> state after its last piece


def parse_piece(job: PieceJob) -> PieceDone:
    """(in a worker process) Redact, parse and prepare one piece."""
    state = job.state if job.state is not None else _carried.pop(job.token, {})
    redacted, secrets = redact(job.data)
    parsed = parse_total(
        adapter_named(job.adapter), Chunk(redacted, job.base, job.at_eof, job.ctx), state
    )
    if parsed.consumed == len(redacted) and not job.at_eof:
        _carried[job.token] = parsed.state  # the next piece of this file goes on from here
    else:
        _carried.pop(job.token, None)  # the file's end, or a stall: no next piece is used
    try:
        rows: list[Prepared] | None = [prepare_event(ev) for ev in parsed.events]
    except Exception:
        rows = None
    else:
        parsed = parsed._replace(events=[])
    usage = [_USAGE_FIELDS(fact) for fact in parsed.usage]
    consumed = parsed.consumed
    raw = redacted if consumed == len(redacted) else redacted[:consumed]
    raw_z = compress_raw(raw) if raw else None  # the worker's one thread: one compressor
    return PieceDone(
        redacted if secrets else None, secrets, parsed._replace(usage=[]), rows, usage, raw_z
    )


class ParsePool:
    """Worker processes for one ingest run (``close`` ends them).  Started with ``spawn``:
    forking the daemon (its threads hold locks: the store's, watchdog's) is not safe."""

    def __init__(self, workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.executors = [
            ProcessPoolExecutor(max_workers=1, mp_context=ctx) for _ in range(max(1, workers))
        ]
        self.next_token = 0
        self.digest_parts = 0  # parts of the digests sent to the workers (``digest_builder``)

    def digest_builder(self, db: str, table: PriceTable) -> Builder | None:
        """Digests built by the workers (``helixd.ingest.digest.build_from``: each reads the
        facts from the store file ``db``, read-only, and builds, priced by ``table``), one
        part after another round the workers: the backfill is over and they are warm and
        idle.  The table travels once to each worker.  ``None`` when it cannot be sent (a
        price layer that does not pickle): the digests are then built in this process.
        (Imported here: a worker that only parses never loads the digest code.)"""
        from helixd.ingest.digest import build_from

        try:
            pickle.dumps(table, pickle.HIGHEST_PROTOCOL)
        except Exception:
            return None
        key = id(table)
        sent: set[int] = set()

        def build(
            ids: Sequence[int], now: int, idle_ms: int
        ) -> asyncio.Future[tuple[int, list[Built]]]:
            n = self.digest_parts % len(self.executors)
            self.digest_parts += 1
            first = n not in sent
            sent.add(n)
            try:
                job = self.executors[n].submit(
                    build_from, db, list(ids), now, idle_ms, key, table if first else None
                )
            except Exception as exc:  # a worker died before (BrokenProcessPool): the
                failed: asyncio.Future[tuple[int, list[Built]]]  # part is built here
                failed = asyncio.get_running_loop().create_future()
                failed.set_exception(exc)
                return failed
            return asyncio.wrap_future(job)

        return build

    def token(self) -> int:
        """A token for a new file (its pieces then go to one worker)."""
        self.next_token += 1
        return self.next_token

    def submit(self, job: PieceJob) -> asyncio.Future[PieceDone]:
        executor = self.executors[job.token % len(self.executors)]
        return asyncio.wrap_future(executor.submit(parse_piece, job))

    def close(self) -> None:
        """(blocking: call it in a thread) Cancel what has not started, end the workers."""
        for executor in self.executors:
            executor.shutdown(wait=True, cancel_futures=True)

"""The daemon's only writer: takes items off the work queue one at a time — a changed path,
a reconcile scan, a session end, a store check — and never lets a failure stop it or drop
an item.

* A **store fault** (``helixd.store.faults``: locked, disk full, read-only, corrupt,
  deleted, replaced …) puts the item back in the queue and the worker waits the store's
  backoff (``StoreHealth``) before the next item: the work is delayed, never dropped, and
  done as soon as the store works again — no new file event needed.
* Any **other error** is the file's: it waits its own backoff (``FileFailures``, the item
  deferred in the queue) while the other files go on.  A scan that fails on a file it
  cannot name falls back to reading every file on its own, so the bad one is isolated.

Under load (many files appended at once) the worker takes every changed path that is
ready, up to ``GROUP_FILES``, and reads them in one ingest run: their batches share one
transaction, each with its own cursor.  Paths still in their debounce join the run too
(a run costs the same few thread hops and one commit whether it reads one file or
twenty; one event per append, so there is no burst to wait out, and a partial line is
left for the next event): ten files appended 20 times a second each were read in ~110
runs a second, one or two files each.  A group that fails (not the store) is tried again
one path at a time, so the failing file is still the only one held back.  Digests are
rebuilt right after an ingest when nothing else waits and the pace allows
(``helixd.daemon.pacing``: at least a second apart, and ten times the last rebuild's cost
apart); otherwise a ``DIGESTS`` item is queued (once) to run then, behind the paths
already waiting: reads of new lines never wait for digests, and a busy session's digest
(which reads the whole session) is rebuilt every few seconds, not after every append.
While files wait, a rebuild takes only ``pacing.PART`` of the stale sessions, in turn, and
queues another ``DIGESTS`` item for the rest: rebuilt all at once, 200 busy sessions of
~1 000 events each held every read back for about a second (the load bench's p99).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import structlog

from helixd.daemon.health import FileFailures, StoreHealth
from helixd.daemon.pacing import PART, DigestPace, DigestTurns, Pick
from helixd.daemon.scheduler import Scheduler
from helixd.daemon.storeguard import StoreGuard
from helixd.daemon.workqueue import RECONCILE, WorkQueue
from helixd.ingest.pipeline import Ingestor, SourceFailed, discover
from helixd.sources.discover import unreadable_summary
from helixd.sources.gate import MEMBER_UNNAMED, Gate, Refused
from helixd.store.database import Store
from helixd.store.faults import classify

log = structlog.get_logger("helixd")

SESSION_END: Final = "\0end:"  # queue item: a session-end signal for the uid that follows
CHECK_STORE: Final = "\0check-store"  # queue item: the store file changed under the daemon
SCAN_DIR: Final = "\0dir:"  # queue item: a directory that appeared inside a root, to scan
INLINE_DIGEST_EVENTS: Final = 20_000  # bigger sessions are re-digested by the scheduled pass
DIGESTS: Final = "\0digests"  # queue item: rebuild the digests of what was read
GROUP_FILES: Final = 256  # changed paths read in one ingest run

Analyze = Callable[[Store, int | None, Pick | None], Awaitable[int]]


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one read takes (from the settings; they may change on SIGHUP)."""

    chunk_bytes: int
    max_line_bytes: int
    max_read_bytes: int


class Worker:
    def __init__(
        self,
        store_path: Path,
        queue: WorkQueue,
        guard: StoreGuard,
        health: StoreHealth,
        files: FileFailures,
        scheduler: Scheduler,
        sources: Callable[[], Gate],
        limits: Callable[[], Limits],
        analyze: Analyze,
    ) -> None:
        self.store_path = store_path
        self.queue, self.guard, self.health, self.files = queue, guard, health, files
        self.scheduler = scheduler
        self.sources, self.limits, self.analyze = sources, limits, analyze
        self.idle = asyncio.Event()
        self.idle.set()
        self.wake = asyncio.Event()  # `helixctl rescan`: cut a backoff short
        self.totals: dict[str, Any] = {
            "files_read": 0,
            "bytes_read": 0,
            "events": 0,
            "malformed_lines": 0,
            "errors": 0,
            "last_error": None,
        }
        self.unreadable: dict[str, str] = {}  # path -> reason, as the last reads found
        # Before each reconcile scan: the daemon refreshes its roots (project directories
        # learned since the last scan, ``store.projects``).
        self.before_scan: Callable[[], Awaitable[None]] | None = None
        self.digest_pace = DigestPace()  # inline digest rebuilds spaced by their cost
        self.digest_turns = DigestTurns()  # ... and in parts while files wait

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            item = await self.queue.get()
            group = [item]
            if not item.startswith("\0"):
                group += self.queue.take_ready(GROUP_FILES - 1, early=self.queue.debounce)
            self.idle.clear()
            try:
                delay = await (self.attempt(item) if len(group) == 1 else self.attempt_group(group))
            finally:
                self.idle.set()
                for _ in group:
                    self.queue.done()
            if delay:
                await self._pause(delay, stop)

    async def _pause(self, seconds: float, stop: asyncio.Event) -> None:
        """Wait out a backoff; a stop or `helixctl rescan` ends it early."""
        self.wake.clear()
        stopped = asyncio.ensure_future(stop.wait())
        woken = asyncio.ensure_future(self.wake.wait())
        try:
            await asyncio.wait(
                {stopped, woken}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopped.cancel()
            woken.cancel()

    async def attempt(self, item: str) -> float:
        """Handle one item; a failure never stops the daemon and never drops the item.
        Returns how long the worker waits before the next item (a store fault's backoff)."""
        wait = self.files.wait_for(item)
        if wait > 0:  # a failing file's backoff is not cut short by its file events
            self.queue.defer(item, wait)
            return 0.0
        try:
            async with self.guard.use() as store:
                await self._handle(store, item)
        except Exception as exc:
            fault = classify(exc, self.store_path)
            if fault is None:
                self._item_failed(item, exc)
                return 0.0
            self.guard.noted(fault)
            self.totals["last_error"] = str(fault)
            self.queue.put(item)  # it waits for the store: delayed, never dropped
            return self.health.failed("ingest", fault)
        self.health.ok("ingest")
        if item == CHECK_STORE:
            self.health.ok("watch")
        if not self.files.wait_for(item):  # not held back again by this very attempt
            self.files.succeeded(item)
        return 0.0

    async def attempt_group(self, paths: list[str]) -> float:
        """Several changed paths in one ingest run; on an error that is not the store's,
        each path again on its own (``attempt``), so that only the failing file waits."""
        ready = []
        for path in paths:
            wait = self.files.wait_for(path)
            if wait > 0:
                self.queue.defer(path, wait)
            else:
                ready.append(path)
        try:
            async with self.guard.use() as store:
                await self._handle_paths(store, ready)
        except Exception as exc:
            fault = classify(exc, self.store_path)
            if fault is None:
                for path in ready:
                    if delay := await self.attempt(path):
                        return delay
                return 0.0
            self.guard.noted(fault)
            self.totals["last_error"] = str(fault)
            for path in ready:
                self.queue.put(path)  # they wait for the store: delayed, never dropped
            return self.health.failed("ingest", fault)
        self.health.ok("ingest")
        for path in ready:
            if not self.files.wait_for(path):
                self.files.succeeded(path)
        return 0.0

    async def _handle_paths(self, store: Store, paths: list[str]) -> None:
        limits = self.limits()
        ingestor = Ingestor(
            store, chunk_bytes=limits.chunk_bytes, max_line_bytes=limits.max_line_bytes
        )
        admitted, refused = await asyncio.to_thread(self.sources().admit_all, paths)
        for path, reason in refused.items():
            if reason == MEMBER_UNNAMED:  # a part not naming its bundle yet: the scan reads it
                log.debug("member_unnamed", path=path)
                continue
            self.unreadable[path] = reason
            log.warning("path_refused", path=path, reason=reason)
        known = await store.cursors_for([src.path for src in admitted])  # one hop
        todo = [(src, known.get(src.path)) for src in admitted]
        stats = await ingestor.ingest_files(todo, limits.max_read_bytes)
        for path in (*paths, *(src.path for src in admitted)):  # a member's path, its bundle's
            if path not in refused:
                self.unreadable.pop(path, None)
        self.unreadable.update(stats.skipped_paths)
        self._count_summary(stats.as_dict())
        self._files_unreadable(stats.failed)
        await self._digests_after_ingest(
            store, bool(stats.events or stats.sessions or stats.files_gone)
        )
        for path in stats.unfinished:
            self.queue.put(path)  # come back after the others had their turn

    async def _digests_after_ingest(self, store: Store, changed: bool) -> None:
        """Rebuild the digests of what was read now, or, when more files wait to be read,
        after those (a ``DIGESTS`` item queued behind them)."""
        if not changed:
            return
        wait = self.digest_pace.wait(time.monotonic())
        if self.queue.waiting() or wait > 0:
            self.queue.put(DIGESTS, after=wait)
            return
        await self._digests(store)

    async def _digests(self, store: Store) -> None:
        """The stale digests of sessions up to ``INLINE_DIGEST_EVENTS``; while files wait
        to be read, ``PART`` of them in turn, and a ``DIGESTS`` item queued (at the pace)
        for the rest: no read waits behind a rebuild of every busy session."""
        start = time.monotonic()
        part = PART if self.queue.waiting() else None
        turns = self.digest_turns
        try:
            await self._analyze_after_ingest(
                store, INLINE_DIGEST_EVENTS, lambda ids: turns.pick(ids, part)
            )
        finally:
            self.digest_pace.ran(start, time.monotonic())
        if turns.left:
            turns.left = 0
            self.queue.put(DIGESTS, after=self.digest_pace.wait(time.monotonic()))

    def _item_failed(self, item: str, exc: Exception) -> None:
        """Not the store: the file (or, for a scan, one of the files) is at fault."""
        self.totals["errors"] += 1
        self.totals["last_error"] = f"{type(exc).__name__}: {exc}"
        path = exc.path if isinstance(exc, SourceFailed) else item
        if path.startswith("\0"):
            # A scan failed on a file it cannot name: read every file on its own, so the
            # failing one is held back and the others go on.
            log.error("scan_failed", item=item.strip("\0"), error=str(exc), exc_info=exc)
            for each in self._every_source():
                self.queue.put(each)
            return
        log.error("ingest_failed", path=path, error=str(exc), exc_info=exc)
        self.queue.defer(path, self.files.failed(path, f"{type(exc).__name__}: {exc}"))
        if path != item:
            self.queue.put(item)  # the scan goes on without the failing file

    async def _handle(self, store: Store, item: str) -> None:
        limits = self.limits()
        ingestor = Ingestor(
            store, chunk_bytes=limits.chunk_bytes, max_line_bytes=limits.max_line_bytes
        )
        if item == CHECK_STORE:
            return  # `guard.use` has checked (and recovered) the store
        if item.startswith(SESSION_END):
            if await store.mark_ended(item[len(SESSION_END) :]):
                await self._analyze_after_ingest(store, INLINE_DIGEST_EVENTS)
            return
        if item == RECONCILE:
            await self._scan(store, ingestor)
            return
        if item == DIGESTS:
            await self._digests(store)
            return
        if item.startswith(SCAN_DIR):
            for path in await asyncio.to_thread(self._claimed_below, item[len(SCAN_DIR) :]):
                self.queue.put(path)
            return
        try:
            src = await asyncio.to_thread(self.sources().admit, item)
        except Refused as exc:  # a link out of the roots, a name no adapter claims…
            self.unreadable[item] = exc.reason
            log.warning("path_refused", path=item, reason=exc.reason)
            return
        cursor = await store.cursor_for(src.path)
        stats = await ingestor.ingest_file(src, cursor, limits.max_read_bytes)
        self.unreadable.pop(src.path, None)
        self.unreadable.update(stats.skipped_paths)
        self._count_summary(stats.as_dict())
        if stats.failed:
            self._files_unreadable(stats.failed)
            return
        # lookups see new lines at once (once no other file waits to be read)
        await self._digests_after_ingest(
            store, bool(stats.events or stats.sessions or stats.files_gone)
        )
        if stats.more:
            self.queue.put(item)  # come back after the others had their turn

    async def _scan(self, store: Store, ingestor: Ingestor) -> None:
        """The reconcile scan: every file not waiting out a backoff."""
        if self.before_scan is not None:
            await self.before_scan()
        held = {path for path in self.files.entries if self.files.wait_for(path)}
        found = discover(self.sources(), held=held.__contains__)  # walked in a thread
        stats = await self.scheduler.run_now(
            "reconcile_scan", lambda: ingestor.backfill(found), reraise=True
        )
        self.unreadable = dict(stats.skipped_paths)
        self._count_summary(stats.as_dict())
        self._files_unreadable(stats.failed)
        for path in self.files.entries.keys() - held - stats.failed.keys():
            self.files.succeeded(path)
        await self._analyze_after_ingest(store)

    async def _analyze_after_ingest(
        self, store: Store, max_events: int | None = None, pick: Pick | None = None
    ) -> None:
        """The digests of what was just read.  A digest that fails (not the store) is the
        analyze pass's problem, not the file's: logged and left to the scheduled pass."""
        try:
            await self.analyze(store, max_events, pick)
        except Exception as exc:
            if classify(exc, store.path) is not None:
                raise
            self.totals["errors"] += 1
            self.totals["last_error"] = f"analyze: {type(exc).__name__}: {exc}"
            log.error("analyze_failed", error=str(exc), exc_info=exc)

    def _every_source(self) -> list[str]:
        return [s.path for s in discover(self.sources()) if not self.files.wait_for(s.path)]

    def _claimed_below(self, path: str) -> list[str]:
        """(in a thread) The files below ``path`` some root's adapter claims (no link
        followed; each still passes the gate when it is read)."""
        found: list[str] = []
        if os.path.islink(path):  # a linked directory: its files are not read through it
            return found
        gate = self.sources()
        if not gate.may_hold(path):
            return found  # e.g. a directory beside OpenCode's databases (max_depth 0)
        for dirpath, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if gate.may_hold(os.path.join(dirpath, d))]
            for name in files:
                full = os.path.join(dirpath, name)
                if gate.claims(full):
                    found.append(full)
        return found

    def unreadable_summary(self) -> dict[str, Any]:
        return unreadable_summary(self.unreadable.items())

    def _files_unreadable(self, failed: dict[str, str]) -> None:
        for path, error in failed.items():
            self.queue.defer(path, self.files.failed(path, error))

    def _count_summary(self, summary: dict[str, Any]) -> None:
        self.totals["files_read"] += summary["files_read"]
        self.totals["bytes_read"] += summary["bytes"]
        self.totals["events"] += summary["events"]
        self.totals["malformed_lines"] += summary["malformed_lines"]

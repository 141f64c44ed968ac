"""A coalescing work queue of paths, with a short debounce.

``put`` is synchronous (it is called from the loop via ``call_soon_threadsafe`` by the
watcher): a path already pending is not queued twice, and a path becomes ready
``debounce`` seconds after its first event, so the burst of MODIFY events that one append
produces is read once.  ``get`` waits for the next ready path; ``wait_idle`` waits until
nothing is pending or in progress.  Besides paths, the queue carries *tasks* (a full
reconcile scan) which run in the same worker, so there is only ever one writer.

``defer`` parks an item until a later time (a file in backoff after failing): it is not
pending meanwhile — the queue can be idle — and becomes pending when its time comes.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

RECONCILE: Final = "\0reconcile"


@dataclass(frozen=True, slots=True)
class QueueStats:
    pending: int
    in_progress: int
    processed: int
    deferred: int = 0


class WorkQueue:
    def __init__(self, debounce: float = 0.02) -> None:
        self.debounce = debounce
        self._pending: OrderedDict[str, float] = OrderedDict()  # item -> ready time
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._busy = 0
        self._processed = 0
        self._deferred: dict[str, float] = {}  # item -> when it becomes pending
        self._later: list[tuple[float, str]] = []  # heap over _deferred

    def put(self, item: str, *, now: float | None = None, after: float = 0.0) -> None:
        """Queue ``item`` (a path or ``RECONCILE``) unless it is already pending.  ``after``:
        ready that many seconds later than the debounce (pending meanwhile: the queue is
        busy, unlike a deferred item)."""
        if item in self._pending or item in self._deferred:
            return
        at = (time.monotonic() if now is None else now) + self.debounce + after
        self._pending[item] = at
        self._idle.clear()
        self._wake.set()

    def defer(self, item: str, delay: float) -> None:
        """Park ``item`` for ``delay`` seconds (events for it meanwhile do not wake it)."""
        self._pending.pop(item, None)
        at = time.monotonic() + delay
        self._deferred[item] = at
        heapq.heappush(self._later, (at, item))
        if not self._pending and not self._busy:
            self._idle.set()
        self._wake.set()

    def _promote(self, now: float) -> float | None:
        """Deferred items whose time came become pending; seconds to the next one."""
        while self._later:
            at, item = self._later[0]
            if self._deferred.get(item) != at:  # superseded by a later defer
                heapq.heappop(self._later)
                continue
            if at > now:
                return at - now
            heapq.heappop(self._later)
            del self._deferred[item]
            self.put(item, now=now - self.debounce)
        return None

    async def get(self) -> str:
        """The next item whose debounce has passed (oldest first); marks it in progress."""
        while True:
            later = self._promote(time.monotonic())
            now = time.monotonic()
            for item, ready in self._pending.items():
                delay = ready - now
                if delay <= 0:
                    del self._pending[item]
                    self._busy += 1
                    return item
                later = delay if later is None else min(later, delay)
            self._wake.clear()
            if later is None:
                await self._wake.wait()
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), later)
            except TimeoutError:
                pass

    def take_ready(self, limit: int, early: float = 0.0) -> list[str]:
        """Up to ``limit`` more *paths* whose debounce has passed, or passes within ``early``
        seconds (tasks stay queued), marked in progress like ``get``'s item: the worker
        reads several changed files in one go."""
        now = time.monotonic() + early
        taken: list[str] = []
        for item, ready in self._pending.items():
            if len(taken) >= limit:
                break
            if ready <= now and not item.startswith("\0"):
                taken.append(item)
        for item in taken:
            del self._pending[item]
        self._busy += len(taken)
        return taken

    def waiting(self) -> bool:
        """Something is queued besides what is being handled."""
        return bool(self._pending)

    def done(self) -> None:
        """The item returned by the last ``get`` has been handled."""
        self._busy -= 1
        self._processed += 1
        if not self._pending and not self._busy:
            self._idle.set()

    def busy(self) -> bool:
        """Something is queued or being handled (background work should wait)."""
        return bool(self._pending or self._busy)

    async def wait_idle(self) -> None:
        await self._idle.wait()

    def statistics(self) -> QueueStats:
        return QueueStats(len(self._pending), self._busy, self._processed, len(self._deferred))

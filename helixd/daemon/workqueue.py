"""A coalescing work queue of paths, with a short debounce.

``put`` is synchronous (it is called from the loop via ``call_soon_threadsafe`` by the
watcher): a path already pending is not queued twice, and a path becomes ready
``debounce`` seconds after its first event, so the burst of MODIFY events that one append
produces is read once.  ``get`` waits for the next ready path; ``wait_idle`` waits until
nothing is pending or in progress.  Besides paths, the queue carries *tasks* (a full
reconcile scan) which run in the same worker, so there is only ever one writer.
"""

from __future__ import annotations

import asyncio
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


class WorkQueue:
    def __init__(self, debounce: float = 0.02) -> None:
        self.debounce = debounce
        self._pending: OrderedDict[str, float] = OrderedDict()  # item -> ready time
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._busy = 0
        self._processed = 0

    def put(self, item: str, *, now: float | None = None) -> None:
        """Queue ``item`` (a path or ``RECONCILE``) unless it is already pending."""
        if item in self._pending:
            return
        self._pending[item] = (time.monotonic() if now is None else now) + self.debounce
        self._idle.clear()
        self._wake.set()

    async def get(self) -> str:
        """The next item whose debounce has passed (oldest first); marks it in progress."""
        while True:
            if self._pending:
                item, ready = next(iter(self._pending.items()))
                delay = ready - time.monotonic()
                if delay <= 0:
                    del self._pending[item]
                    self._busy += 1
                    return item
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), delay)
                except TimeoutError:
                    pass
                continue
            self._wake.clear()
            await self._wake.wait()

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
        return QueueStats(len(self._pending), self._busy, self._processed)

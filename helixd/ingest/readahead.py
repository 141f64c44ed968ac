"""The plan's items read ahead in a worker thread, several per thread hop (moved from
``pipeline.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Generator
from typing import Final

from helixd.ingest.fileruns import Planned

READ_AHEAD_ITEMS: Final = 16  # items one thread hop of the reader brings at most
READ_AHEAD_BYTES: Final = 1 << 20  # ... or this many bytes of pieces
LIVE_READ_AHEAD_ITEMS: Final = 128  # the daemon's runs: many files of a few new lines each


class ReadAhead:
    """The plan's items, produced in a worker thread (files are never opened or read on
    the event loop), one hop ahead: the next items are read while these are parsed.  A
    hop brings up to ``READ_AHEAD_ITEMS`` items or ``READ_AHEAD_BYTES`` of pieces, so
    small chunks (or many small files) do not pay one thread hand-off each."""

    def __init__(self, plan: Generator[Planned, None, None], items: int = READ_AHEAD_ITEMS) -> None:
        self.plan = plan
        self.items = items
        self.ready: deque[Planned] = deque()
        self.pending: asyncio.Future[list[Planned]] | None = None
        self.done = False
        self.exhausted = False  # the plan has ended (no hop needed to learn it)

    def _take(self) -> list[Planned]:
        items: list[Planned] = []
        size = 0
        for item in self.plan:
            items.append(item)
            if item.piece is not None:
                size += len(item.piece.data) + len(item.raw_z or b"")
            if len(items) >= self.items or size >= READ_AHEAD_BYTES:
                break
        else:
            self.exhausted = True
        return items

    def _fetch(self) -> asyncio.Future[list[Planned]]:
        return asyncio.get_running_loop().run_in_executor(None, self._take)

    async def next(self) -> Planned | None:
        if not self.ready and not self.done:
            if self.pending is None:
                self.pending = self._fetch()
            # shielded: a cancelled caller leaves the read running; ``close`` waits for it
            items = await asyncio.shield(self.pending)
            self.ready.extend(items)
            self.done = not items or self.exhausted
            self.pending = None if self.done else self._fetch()
        return self.ready.popleft() if self.ready else None

    async def close(self) -> None:
        """Let a read in flight end, then close the plan (and the file it has open)."""
        if self.pending is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.pending)
        if self.pending is None or self.pending.done():
            self.plan.close()

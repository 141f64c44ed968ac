"""The backlog's and the live runs' writer: batches committed in order on a background task
while the caller parses the next ones, queued batches grouped into one transaction (moved
from ``pipeline.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Final

from helixd.store.database import Batch, Store

QUEUE_DEPTH: Final = 4  # a live run's hand-overs waiting for the writer
GROUP_BYTES: Final = 8 << 20  # a commit groups queued batches up to this many raw bytes
# A backlog's batches waiting for the writer, in raw bytes rather than a count: while a group
# commits, the next one fills, so the producer goes on taking the parse workers' results
# and feeding them new pieces (four batches were ~1.3 MB of the median file's pieces, less
# than one commit's time of parsing: the workers then waited for the commit).
QUEUE_BYTES: Final = GROUP_BYTES // 2
LIVE_GROUP_BYTES: Final = 256 << 10  # ... a live run (its first files visible sooner)
INLINE_REDACT: Final = 1 << 16

Item = tuple[Batch, Awaitable[None] | None]  # a batch and its preparation (None: done)


class GroupWriter:
    """Commits batches in order on a background task while the caller parses the next.

    A batch's raw bytes start compressing (in a thread: zstd releases the GIL) as soon as
    it is queued, so compression of one batch overlaps the commit of the one before.

    ``whole`` (the daemon's runs of changed files, a few lines each): the batches are held
    until they make ``LIVE_GROUP_BYTES`` or the run ends, then handed over together — one
    transaction for every file of the run rather than whatever happened to be queued — and
    a small batch is prepared on the loop (a thread hop costs more than the work).

    A failed commit (a locked or full store) ends the writing, and the queue is still
    emptied, so that a producer waiting for room is never left waiting: its next ``put``
    (or ``close``) raises the commit's error.  The batches not committed are read again
    from the file's cursor next time."""

    def __init__(self, store: Store, *, whole: bool = False) -> None:
        self.store = store
        self.whole = whole
        # a live run's queue holds QUEUE_DEPTH hand-overs; a backlog's, QUEUE_BYTES of batches
        self.queue: asyncio.Queue[list[Item] | None] = asyncio.Queue(QUEUE_DEPTH if whole else 0)
        self.queued_bytes = 0  # raw bytes of the batches queued and not taken yet (backlog)
        self.room = asyncio.Event()  # set while the queue holds less than QUEUE_BYTES
        self.room.set()
        self.held: list[Item] = []  # whole: batches not handed to the task yet
        self.held_bytes = 0
        self.error: BaseException | None = None
        self.ended = False  # the end of the batches (``None``) has been taken off the queue
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self._commit_queued()
        except Exception as exc:
            self.error = exc
            self.room.set()  # a producer waiting for room raises the error instead
            # let a waiting producer go on; the end may already be in the failed group
            while not self.ended and await self.queue.get() is not None:
                pass
        finally:
            self.room.set()

    async def _take(self, wait: bool = True) -> list[Item] | None:
        """The next queued item (``wait``: for one to come), its bytes no longer queued."""
        items = await self.queue.get() if wait else self.queue.get_nowait()
        if items is not None and not self.whole:
            self.queued_bytes -= sum(batch.held_bytes() for batch, _ in items)
            if self.queued_bytes < QUEUE_BYTES:
                self.room.set()
        return items

    async def _commit_queued(self) -> None:
        limit = LIVE_GROUP_BYTES if self.whole else GROUP_BYTES
        done = False
        while not done:
            items = await self._take()
            if items is None:
                self.ended = True
                return
            group = list(items)
            size = sum(batch.held_bytes() for batch, _ in items)
            # Whatever else is already queued joins this transaction (group commit).  A
            # backfill waits for more until the group is ``GROUP_BYTES``: the producers
            # (parse workers) hand over one piece at a time, so taking only what was queued
            # committed ~1.7 batches per transaction, and each commit rewrites the pages it
            # touches anywhere in the store (the usage table's keys are hashes: a random
            # page per fact), ~1.8x the bytes the rows themselves take in the WAL.
            while size < limit and (not self.whole or not self.queue.empty()):
                more = await self._take(wait=not self.whole)
                if more is None:
                    done = self.ended = True
                    break
                group += more
                size += sum(batch.held_bytes() for batch, _ in more)
            for _, prepared in group:
                if prepared is None:
                    continue
                try:
                    await prepared
                except Exception:  # the write prepares it again and quarantines what fails
                    pass  # (helixd/store/salvage.py)
            batches = [batch for batch, _ in group]
            await (self.store.commit_run if self.whole else self.store.commit_many)(batches)

    async def put(self, batch: Batch) -> None:
        if self.error is not None:
            raise self.error  # the writer's failure, in the producer
        if self.task.done():
            self.task.result()
        prepared: Awaitable[None] | None = None
        if batch.rows is not None and (batch.raw_z is not None or not batch.raw):
            pass  # prepared by a parse worker already
        elif self.whole and len(batch.raw) < INLINE_REDACT:
            try:
                batch.prepare()
            except Exception:  # as in the executor: the write prepares it again and
                pass  # quarantines the event no row can be made of (store/salvage.py)
        else:
            prepared = asyncio.get_running_loop().run_in_executor(None, batch.prepare)
        if not self.whole:
            while self.queued_bytes >= QUEUE_BYTES:  # the writer frees room as it takes
                if self.error is not None:
                    raise self.error
                if self.task.done():
                    self.task.result()  # ended without a commit error: cancelled
                    break
                self.room.clear()
                await self.room.wait()
            self.queued_bytes += batch.held_bytes()
            self.queue.put_nowait([(batch, prepared)])
            await asyncio.sleep(0)
            return
        self.held.append((batch, prepared))
        self.held_bytes += batch.held_bytes()
        if self.held_bytes >= LIVE_GROUP_BYTES:
            await self._hand_over()

    async def _hand_over(self) -> None:
        if self.held:
            items, self.held, self.held_bytes = self.held, [], 0
            await self.queue.put(items)

    async def close(self) -> None:
        if not self.task.done():
            await self._hand_over()
            await self.queue.put(None)
        await self.task
        if self.error is not None:
            raise self.error

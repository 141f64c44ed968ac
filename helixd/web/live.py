"""``GET /api/live``: the writer's commits pushed to the pages as Server-Sent Events.

The daemon's ``CommitHub`` calls ``on_commit`` right after each transaction (nothing polls
the database).  One feed task turns commits into messages once for every listener: it
gathers the commits of ~``GATHER_S`` (a backfill commits many times a second), reads the
cards of the sessions they touched (one query in a worker thread) and sends

* ``session:new`` ``{type, session}`` — a session got its first events,
* ``session:updated`` ``{type, session}`` — a session changed (new events, usage, digest),
* ``metrics:updated`` ``{type, metrics}`` — the last 7 days' summary, at most every
  ``METRICS_EVERY_S``,
* ``resync`` ``{type}`` — too much changed at once: reload what you show,

to every connected page.  With nobody connected, commits cost one list append.  A page that
cannot keep up is dropped (its browser reconnects on its own).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import orjson
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from helixd.core.commits import REBUILD, Commit
from helixd.web.reads import Reads

log = structlog.get_logger("helixd.web")
GATHER_S: Final = 0.1
METRICS_EVERY_S: Final = 5.0
MAX_SESSIONS: Final = 200  # more in one gathering: ``resync``
CLIENT_BUFFER: Final = 256
HEARTBEAT_S: Final = 25.0


def sse(kind: str, data: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data, default=str) + b"\n\n"


class LiveFeed:
    def __init__(self, reads: Reads, prices: Any) -> None:
        self.reads = reads
        self.prices = prices
        self._inbox_send: MemoryObjectSendStream[Commit] | None = None  # while ``run`` runs
        self._clients: set[MemoryObjectSendStream[bytes]] = set()
        self._last_metrics = 0.0
        self.closing = anyio.Event()
        self.sent = 0

    @property
    def clients(self) -> int:
        return len(self._clients)

    def on_commit(self, commit: Commit) -> None:
        """The hub's listener (on the event loop's thread; never blocks)."""
        if self._clients and self._inbox_send is not None:
            self._inbox_send.send_nowait(commit)

    async def run(self) -> None:
        """The feed task: commits in, messages out, until ``close``."""
        inbox: MemoryObjectReceiveStream[Commit]
        self._inbox_send, inbox = anyio.create_memory_object_stream[Commit](math.inf)
        if self.closing.is_set():
            self._inbox_send.close()
        async with inbox:
            async for first in inbox:
                batch = [first]
                with anyio.move_on_after(GATHER_S):
                    try:
                        while True:
                            batch.append(await inbox.receive())
                    except anyio.EndOfStream:
                        pass
                try:
                    await self._broadcast_for(batch)
                except Exception as exc:  # a failed read never stops the feed
                    log.warning("live_feed_failed", error=str(exc))

    async def _broadcast_for(self, batch: list[Commit]) -> None:
        if not self._clients:
            return
        from helixd.query import detail, metrics

        new: dict[str, None] = {}
        updated: dict[str, None] = {}
        for c in batch:
            new.update(dict.fromkeys(c.new))
            updated.update(dict.fromkeys(c.updated))
        rebuilt = any(c.what == REBUILD for c in batch)
        for uid in new:
            updated.pop(uid, None)
        if rebuilt or len(new) + len(updated) > MAX_SESSIONS:
            self.broadcast(sse("resync", {"type": "resync"}))
        elif new or updated:
            cards = await self.reads.run(detail.session_cards, [*new, *updated], self.prices)
            for card in cards:
                kind = "session:new" if card["uid"] in new else "session:updated"
                self.broadcast(sse(kind, {"type": kind, "session": card}))
        now = time.monotonic()
        if now - self._last_metrics >= METRICS_EVERY_S:
            self._last_metrics = now
            since = (int(time.time() * 1000) - 7 * 86_400_000) // 3_600_000 * 3_600_000
            summary = await self.reads.run(metrics.summary, metrics.Scope(since=since), self.prices)
            self.broadcast(sse("metrics:updated", {"type": "metrics:updated", "metrics": summary}))

    def broadcast(self, message: bytes) -> None:
        for client in list(self._clients):
            try:
                client.send_nowait(message)
                self.sent += 1
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._clients.discard(client)
                client.close()

    async def stream(self) -> AsyncIterator[bytes]:
        """One page's event stream (a ``hello`` first, a comment every ``HEARTBEAT_S``)."""
        send, receive = anyio.create_memory_object_stream[bytes](CLIENT_BUFFER)
        self._clients.add(send)
        try:
            yield b"retry: 1000\n" + sse("hello", {"type": "hello", "time": time.time()})
            async with receive:
                while not self.closing.is_set():
                    with anyio.move_on_after(HEARTBEAT_S) as scope:
                        message = await receive.receive()
                    if scope.cancelled_caught:
                        yield b": keep-alive\n\n"
                        continue
                    yield message
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return
        finally:
            self._clients.discard(send)
            send.close()

    def close(self) -> None:
        """End every stream and the feed task (the server is stopping)."""
        self.closing.set()
        for client in list(self._clients):
            client.close()
        self._clients.clear()
        if self._inbox_send is not None:
            self._inbox_send.close()

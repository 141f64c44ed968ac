"""Reads off the event loop: each query function runs in a worker thread on that thread's own
read-only connection (opened once, reused), at most ``threads`` at a time."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from helixd.query import open_reader

T = TypeVar("T")


class Reads:
    def __init__(self, db: Path, threads: int = 4) -> None:
        self.db = db
        self.limiter = anyio.CapacityLimiter(threads)
        self._local = threading.local()
        # (thread, its connection): closed when the thread has ended (worker threads come and
        # go), all of them at stop
        self._all: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._lock = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        """This thread's read-only connection (NoStore when there is no store yet)."""
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is None:
            con = open_reader(self.db)
            self._local.con = con
            with self._lock:
                for thread, old in [t for t in self._all if not t[0].is_alive()]:
                    old.close()
                    self._all.remove((thread, old))
                self._all.append((threading.current_thread(), con))
        return con

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(connection, *args, **kwargs)`` in a worker thread."""

        def call() -> T:
            return fn(self.connection(), *args, **kwargs)

        return await anyio.to_thread.run_sync(call, limiter=self.limiter)

    async def gather(self, *calls: tuple[Callable[..., Any], tuple[Any, ...]]) -> list[Any]:
        """Each ``(fn, args)`` as ``run`` does, at the same time (each its own worker thread
        and connection; SQLite lets go of the GIL while it reads): their results in order."""
        out: list[Any] = [None] * len(calls)

        async def one(i: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
            out[i] = await self.run(fn, *args)

        try:
            async with anyio.create_task_group() as tg:
                for i, (fn, args) in enumerate(calls):
                    tg.start_soon(one, i, fn, args)
        except BaseExceptionGroup as group:  # the handlers match by type (NoStore -> 503)
            raise group.exceptions[0] from group
        return out

    def close(self) -> None:
        with self._lock:
            for _, con in self._all:
                con.close()
            self._all.clear()

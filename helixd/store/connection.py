"""The store's SQLite connection on a thread of its own.

``sqlite3`` blocks, so every call on the connection runs off the event loop, on one
dedicated thread (a single-thread executor that the connection is created on and never
leaves): calls are served in the order they were made, one at a time, which is what a
single writer connection needs.  ``run(fn, *args)`` is one hop however many statements
``fn`` executes — a write batch of a dozen statements does not wait a dozen times for a
busy event loop.

Why not aiosqlite: its public API sends one statement per hop and offers no way to run a
function on its thread (only its private attributes do); an owned executor of a few lines
gives the one-hop call through public APIs only (``loop.run_in_executor``).

Why not ``anyio.to_thread.run_sync`` with a ``CapacityLimiter(1)``: that serializes the
calls but runs them on whichever pooled thread is free, and shares the pool with the
daemon's file reads; a connection that stays on its own thread keeps ``sqlite3``'s
same-thread check on and its calls never wait for a slow read (docs/architecture.md,
"Async plumbing").
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class Connection:
    """One ``sqlite3.Connection`` and the thread it lives on."""

    def __init__(self, executor: ThreadPoolExecutor, con: sqlite3.Connection) -> None:
        self._executor = executor
        self.con = con  # use it only inside ``run``: it belongs to the executor's thread

    @classmethod
    async def open(cls, connect: Callable[[], sqlite3.Connection]) -> Connection:
        """``connect()`` on a new thread that then serves every call of the connection."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="helix-store")
        try:
            con = await asyncio.get_running_loop().run_in_executor(executor, connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, con)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the connection's thread, in one hop.  A caller that is
        cancelled does not cancel a call already running (its transaction completes or
        rolls back on the thread as it would have)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    async def execute(self, sql: str, params: Any = ()) -> list[Any]:
        """One statement; its rows."""
        return await self.run(lambda: self.con.execute(sql, params).fetchall())

    @property
    def in_transaction(self) -> bool:
        return self.con.in_transaction

    async def close(self) -> None:
        """Close the connection on its thread, then let the thread end."""
        try:
            await self.run(self.con.close)
        finally:
            self._executor.shutdown(wait=False)

"""The daemon gives memory back when it comes to rest (``helixd.daemon.memory``,
``Store.release_memory``, ``StatusLoop._release_memory_at_rest``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from helixd.daemon.memory import trim_heap
from helixd.daemon.statusloop import StatusLoop
from helixd.store.database import Store


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _fill(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE filler (x BLOB)")
    con.execute("BEGIN")
    con.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(3000),) for _ in range(8000)])
    con.execute("COMMIT")


def _scan(con: sqlite3.Connection) -> int:
    return int(con.execute("SELECT sum(length(x)) FROM filler").fetchone()[0])


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux: RSS from /proc")
async def test_the_page_cache_and_the_heap_are_given_back(tmp_path: Path) -> None:
    if not trim_heap():
        pytest.skip("no glibc malloc_trim here")
    store = await Store.open(tmp_path / "helix.db")
    try:
        await store.run(_fill, store.con)
        assert await store.run(_scan, store.con) == 24_000_000  # ~24 MiB of pages cached
        trim_heap()
        warm = _resident_bytes()
        await store.release_memory()
        trim_heap()
        assert warm - _resident_bytes() > 12 << 20
        assert await store.run(_scan, store.con) == 24_000_000  # read back as before
    finally:
        await store.close()


class _Counting(Store):
    released: int

    async def release_memory(self) -> None:
        self.released += 1
        await super().release_memory()


async def test_memory_is_given_back_once_per_rest_after_reads(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "helix.db")
    counting = _Counting(store.db, store.path)
    counting.released = 0
    loop: Any = object.__new__(StatusLoop)
    loop.worker = SimpleNamespace(totals={"bytes_read": 0})
    loop.guard = SimpleNamespace(store=counting)
    loop._checkpointed_at = loop._released_at = 0
    loop.settings = SimpleNamespace(store=SimpleNamespace(db=tmp_path / "helix.db"))

    async def tick(read: int) -> None:
        loop.worker.totals["bytes_read"] += read
        await loop._release_memory_at_rest()
        await loop._checkpoint_when_written()

    try:
        await tick(0)
        assert counting.released == 0  # nothing was ever read: nothing to give back
        await tick(100)
        await tick(100)
        assert counting.released == 0  # busy: bytes came in every tick
        await tick(0)
        assert counting.released == 1  # the first quiet tick after reads
        await tick(0)
        await tick(0)
        assert counting.released == 1  # at rest: once
        await tick(5)
        await tick(0)
        assert counting.released == 2
    finally:
        await store.close()

"""The store's connection on its own thread (``helixd.store.connection``): public APIs only,
one thread that every call runs on, and a write batch in one hop."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

from helixd.store.database import Store

PACKAGE = Path(__file__).resolve().parent.parent / "helixd"


def test_no_private_aiosqlite_attributes_anywhere() -> None:
    """Nothing reaches into a library's private connection attributes."""
    pattern = re.compile(r"\._conn\b|\._execute\b")
    offenders = [
        f"{p.relative_to(PACKAGE)}:{n}"
        for p in PACKAGE.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


async def test_every_call_runs_on_the_one_store_thread(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "helix.db")
    try:
        names = await asyncio.gather(
            *(store.run(lambda: threading.current_thread().name) for _ in range(20))
        )
        assert len(set(names)) == 1 and names[0].startswith("helix-store")
        assert names[0] != threading.current_thread().name
        # the connection keeps sqlite3's same-thread check: used off its thread, it refuses
        try:
            store.con.execute("SELECT 1")
        except Exception as exc:  # sqlite3.ProgrammingError
            assert "thread" in str(exc)
        else:
            raise AssertionError("the connection was usable off its own thread")
    finally:
        await store.close()
    assert not any(t.name.startswith("helix-store") and t.is_alive() for t in _later())


def _later() -> list[threading.Thread]:
    for _ in range(100):  # the executor's thread ends shortly after close
        alive = [t for t in threading.enumerate() if t.name.startswith("helix-store")]
        if not alive:
            return []
        threading.Event().wait(0.01)
    return alive


async def test_calls_are_served_in_order_and_errors_come_back(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "helix.db")
    try:
        seen: list[int] = []
        await asyncio.gather(*(store.run(seen.append, i) for i in range(50)))
        assert seen == list(range(50))
        try:
            await store.db.execute("SELECT * FROM no_such_table")
        except Exception as exc:
            assert "no_such_table" in str(exc)
        else:
            raise AssertionError("a bad statement raised nothing")
        assert await store.db.execute("SELECT 1") == [(1,)]  # the connection goes on
    finally:
        await store.close()

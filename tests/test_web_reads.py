"""The web face's reads: ``Reads.gather`` runs its calls at the same time, each in its own
worker thread with its own read-only connection to a real store, and gives their results in
the order asked."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from helixd.store.database import Store
from helixd.web.reads import Reads


async def test_gather_runs_its_reads_at_the_same_time_in_order(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "s.db")
    await store.close()
    reads = Reads(tmp_path / "s.db", threads=4)
    # each call waits for the other two: run one after another, the barrier breaks
    barrier = threading.Barrier(3, timeout=10)
    seen: list[tuple[int, int]] = []

    def read(con: sqlite3.Connection, n: int) -> tuple[int, int]:
        barrier.wait()
        (version,) = con.execute("PRAGMA user_version").fetchone()
        seen.append((threading.get_ident(), id(con)))
        return n * 10, version

    try:
        out = await reads.gather((read, (1,)), (read, (2,)), (read, (3,)))
    finally:
        reads.close()
    assert [n for n, _ in out] == [10, 20, 30]
    assert all(v == out[0][1] for _, v in out)
    assert len({t for t, _ in seen}) == 3 and len({c for _, c in seen}) == 3


async def test_a_failing_read_in_gather_raises_its_own_exception(tmp_path: Path) -> None:
    """The web's handlers match errors by type (a missing store -> 503): ``gather`` raises
    the read's own exception, not a group around it (review finding)."""
    import pytest

    store = await Store.open(tmp_path / "s.db")
    await store.close()
    reads = Reads(tmp_path / "s.db", threads=2)

    def fails(con: sqlite3.Connection) -> None:
        raise LookupError("no such session")

    def fine(con: sqlite3.Connection) -> int:
        return 1

    try:
        with pytest.raises(LookupError, match="no such session"):
            await reads.gather((fails, ()), (fine, ()))
    finally:
        reads.close()

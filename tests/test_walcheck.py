"""The daemon's passive checkpoint from a connection of its own (``store.walcheck``): it
copies the log back while the writer's connection stays open and goes on writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from helixd.store import walcheck
from helixd.store.database import Store


def _fill(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    con.execute("BEGIN")
    con.executemany("INSERT INTO filler VALUES (?)", [(b"x" * 4000,) for _ in range(200)])
    con.execute("COMMIT")


async def test_a_large_log_is_copied_back_while_the_writer_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "helix.db"
    store = await Store.open(db)
    try:
        await store.run(_fill, store.con)
        assert walcheck.checkpoint(db, min_bytes=1 << 30) is None  # small: left to grow
        frames, copied = walcheck.checkpoint(db, min_bytes=1) or (0, 0)
        assert frames > 100 and copied == frames
        await store.run(_fill, store.con)  # the writer was never in the way, nor stopped
        assert await store.db.execute("SELECT count(*) FROM filler") == [(400,)]
    finally:
        await store.close()


def test_no_log_or_no_store_is_nothing_to_do_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "gone.db"
    assert walcheck.checkpoint(missing, min_bytes=0) is None
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "gone.db-wal").write_bytes(b"\0" * 64)  # a stray log without its database
    try:
        walcheck.checkpoint(missing, min_bytes=1)
    except sqlite3.Error:
        pass  # the daemon logs it; its writer's own checkpoint remains
    assert not missing.exists()

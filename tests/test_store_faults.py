"""Store faults classified from real errors: a real full file system, a real lock held by
another process, real damaged headers, deleted and replaced files; and the write path never
hides the real error behind "cannot rollback"."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from helixd.adapters.declared import claude
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store import probe
from helixd.store.database import Store
from helixd.store.faults import StoreFault, classify, rollback
from tests.fault_helpers import LockHolder, damage_header, fill, small_filesystem
from tests.test_ingest import record, session_file


async def test_a_full_disk_is_reported_as_disk_full_not_cannot_rollback_and_nothing_is_lost(
    tmp_path: Path, home: Path
) -> None:
    """SQLite rolls the transaction back itself on a full disk; the writer must not try a
    second rollback whose error ("no transaction is active") would replace the real one."""
    f = session_file(home)
    f.write_bytes(b"".join(record(n, "assistant" if n % 2 else "user") for n in range(40)))
    root = home / ".claude" / "projects"
    with small_filesystem(tmp_path / "fs", 4096) as fs:
        store = await Store.open(fs / "helix.db")
        try:
            filler = fill(fs)
            with pytest.raises(Exception) as raised:
                await Ingestor(store).backfill(discover([(claude.ADAPTER, root)]))
            assert "cannot rollback" not in str(raised.value)
            assert "database or disk is full" in str(raised.value)
            fault = classify(raised.value, fs / "helix.db")
            assert fault is not None and fault.kind == "disk_full"
            assert "free space" in fault.fix and "\n" not in str(fault)
            filler.unlink()
            stats = await Ingestor(store).backfill(discover([(claude.ADAPTER, root)]))
            assert stats.events == 40
            assert await store.db.execute("SELECT count(*) FROM events") == [(40,)]
        finally:
            await store.close()


def test_rollback_is_a_no_op_without_a_transaction_and_never_raises(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    rollback(con)  # nothing open: no "cannot rollback"
    con.execute("CREATE TABLE t (x)")
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (1)")
    rollback(con)
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)
    con.close()


async def test_a_write_lock_held_by_another_process_is_locked(tmp_path: Path) -> None:
    db = tmp_path / "helix.db"
    await (await Store.open(db)).close()  # a real store file
    store = await Store.open(db, busy_ms=200)
    try:
        with LockHolder(db):
            with pytest.raises(sqlite3.OperationalError) as raised:
                await store.mark_gone("/nowhere")
            fault = classify(raised.value, db)
            assert fault is not None and fault.kind == "locked"
            assert "another process" in str(fault)
        assert await store.mark_gone("/nowhere") is False  # the lock is gone: it works again
    finally:
        await store.close()


async def test_a_damaged_header_is_corrupt_before_and_after_connecting(tmp_path: Path) -> None:
    db = tmp_path / "helix.db"
    await (await Store.open(db)).close()
    damage_header(db)
    with pytest.raises(StoreFault) as raised:
        await Store.open(db, readonly=True)
    assert raised.value.kind == "corrupt" and "header" in raised.value.detail
    con = sqlite3.connect(db)
    with pytest.raises(sqlite3.DatabaseError) as err:
        con.execute("SELECT count(*) FROM sessions").fetchall()
    con.close()
    fault = classify(err.value, db)
    assert fault is not None and fault.kind == "corrupt" and "move" in fault.fix


async def test_a_missing_store_is_missing_for_readers_and_created_by_writers(
    tmp_path: Path,
) -> None:
    db = tmp_path / "deep" / "helix.db"
    with pytest.raises(StoreFault) as raised:
        await Store.open(db, readonly=True)
    assert raised.value.kind == "missing" and "helixctl ingest" in raised.value.fix
    store = await Store.open(db)
    await store.close()
    assert db.exists()


async def test_a_read_only_store_file_or_folder_is_not_opened_for_writing(tmp_path: Path) -> None:
    """The owner's write bit counts even for root: a store made read-only on purpose."""
    db = tmp_path / "store" / "helix.db"
    await (await Store.open(db)).close()
    os.chmod(db, 0o444)
    with pytest.raises(StoreFault) as raised:
        await Store.open(db)
    assert raised.value.kind == "read_only" and "chmod" in raised.value.fix
    reader = await Store.open(db, readonly=True)  # reading is fine
    await reader.close()
    os.chmod(db, 0o644)
    os.chmod(db.parent, 0o555)
    try:
        with pytest.raises(StoreFault) as raised:
            await Store.open(db)
        assert raised.value.kind == "read_only"
    finally:
        os.chmod(db.parent, 0o755)


async def test_a_read_only_file_system_is_read_only(tmp_path: Path) -> None:
    import subprocess

    with small_filesystem(tmp_path / "fs", 2048) as fs:
        await (await Store.open(fs / "helix.db")).close()
        subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)  # noqa: ASYNC221
        with pytest.raises(StoreFault) as raised:
            await Store.open(fs / "helix.db")
        assert raised.value.kind == "read_only"
        con = sqlite3.connect(f"file:{fs / 'helix.db'}?mode=ro", uri=True)
        with pytest.raises(sqlite3.OperationalError) as err:  # WAL needs its -shm file
            con.execute("SELECT 1 FROM sessions").fetchall()
        con.close()
        fault = classify(err.value, fs / "helix.db")
        assert fault is not None and fault.kind == "read_only"


async def test_check_sees_the_file_deleted_replaced_or_damaged_under_an_open_store(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store" / "helix.db"
    store = await Store.open(db)
    try:
        assert store.check() is None
        shutil.copy(db, tmp_path / "copy.db")
        old = damage_header(db)
        fault = store.check()
        assert fault is not None and fault.kind == "corrupt"
        with open(db, "r+b") as f:
            f.write(old)
        assert store.check() is None
        os.replace(tmp_path / "copy.db", db)
        fault = store.check()
        assert fault is not None and fault.kind == "replaced"
        db.unlink()
        fault = store.check()
        assert fault is not None and fault.kind == "deleted"
        shutil.rmtree(db.parent)
        fault = store.check()
        assert fault is not None and fault.kind == "deleted"
    finally:
        await store.close()


def test_source_file_errors_are_not_store_faults(tmp_path: Path) -> None:
    """An unreadable transcript is the file's problem, not the store's."""
    exc = PermissionError(13, "Permission denied", str(tmp_path / "agent" / "s.jsonl"))
    assert classify(exc, tmp_path / "store" / "helix.db") is None
    own = OSError(28, "No space left on device", str(tmp_path / "store" / "helix.db.helixd.json"))
    fault = classify(own, tmp_path / "store" / "helix.db")
    assert fault is not None and fault.kind == "disk_full"


def test_integrity_reports_damage_inside_the_file(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE migrations (id)")
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(os.urandom(300),) for _ in range(200)])
    con.commit()
    con.close()
    assert probe.integrity(db)[0] == "ok"
    with open(db, "r+b") as f:
        f.seek(4096 * 3 + 8)
        f.write(os.urandom(256))
    state, detail = probe.integrity(db)
    assert state == "corrupt" and detail


async def test_an_ingest_meeting_a_lock_fails_promptly_and_resumes_from_its_cursor(
    tmp_path: Path, home: Path
) -> None:
    """The commit fails while batches are still queued for it: the reader must not wait
    forever for room in the queue, and nothing committed is read twice afterwards."""
    f = session_file(home)
    f.write_bytes(b"".join(record(n, text="x" * 300) for n in range(300)))
    root = home / ".claude" / "projects"
    db = tmp_path / "helix.db"
    await (await Store.open(db)).close()
    store = await Store.open(db, busy_ms=100)
    try:
        with LockHolder(db):
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError) as raised:
                await asyncio.wait_for(
                    Ingestor(store, chunk_bytes=4096).backfill(discover([(claude.ADAPTER, root)])),
                    20,
                )
            assert time.monotonic() - started < 5  # not stuck waiting for queue room
            assert classify(raised.value, db).kind == "locked"  # type: ignore[union-attr]
        stats = await Ingestor(store, chunk_bytes=4096).backfill(discover([(claude.ADAPTER, root)]))
        assert stats.events == 300
        assert await store.db.execute("SELECT count(*) FROM events") == [(300,)]
    finally:
        await store.close()

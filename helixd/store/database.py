"""The store: the only code in Helix that speaks SQL (this package).

One SQLite file in WAL mode, opened through aiosqlite.  ``Store`` owns the connection,
runs the migrations and exposes the write path (``commit``: records + cursor in one
transaction) and the read queries the CLI and the digest builder need.

Connections: the daemon and ``helixctl ingest`` hold one writer connection; read-only
commands open their own short-lived connection.  ``busy_timeout`` lets a reader and a
writer overlap without "database is locked" errors.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import aiosqlite

from helixd import filemodes
from helixd.core.signals import Signals
from helixd.store import attribution, evict, facts, queries, reader, renorm, replay_write, writer
from helixd.store.schema import MIGRATIONS
from helixd.store.writer import Batch

__all__ = ["Batch", "Store", "StoreError"]

BUSY_TIMEOUT_MS = 30_000
T = TypeVar("T")


class StoreError(RuntimeError):
    """The store cannot be opened or used (bad path, newer schema, corrupt file)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def _private_files(path: Path) -> None:
    """The store's directory 0700; the database created 0600 before SQLite opens it (SQLite
    gives the ``-wal`` and ``-shm`` it creates the database's mode); existing files 0600."""
    filemodes.private_dir(path.parent)
    os.close(filemodes.open_private(path, os.O_RDWR, follow_links=True))
    for suffix in ("-wal", "-shm", "-journal"):
        filemodes.tighten(f"{path}{suffix}")


class Store:
    """An open Helix store.  Use ``await Store.open(path)`` or ``async with``."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self.db = db
        self.path = path
        self._writer = writer.Writer(db._conn)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the connection's own thread, in one hop.

        aiosqlite sends each statement to its thread separately; a write batch of a dozen
        statements would then wait a dozen times for the event loop, which during a backfill
        is busy parsing the next chunk.  ``Connection._execute`` is the primitive every
        aiosqlite method is built on; it is wrapped here, in one place, and covered by the
        store tests (``aiosqlite`` is pinned below 1.0 in pyproject.toml)."""
        result: T = await self.db._execute(fn, *args)  # type: ignore[no-untyped-call]
        return result

    @classmethod
    async def open(cls, path: Path, *, readonly: bool = False) -> Store:
        """Open (a writer creates) the store.  A writer makes the store's directory 0700 and
        the database, its ``-wal`` and ``-shm`` 0600 whatever the umask, and fixes those of
        a store an older version left readable by others (``helixd.filemodes``)."""
        if readonly and not path.exists():
            raise StoreError(f"no store at {path} (run `helixctl ingest` first)")
        if not readonly:
            try:
                await asyncio.to_thread(_private_files, path)
            except OSError as exc:
                raise StoreError(f"cannot open store {path}: {exc}") from exc
        try:
            if readonly:
                db = await aiosqlite.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
            else:
                db = await aiosqlite.connect(path, isolation_level=None)
        except Exception as exc:  # sqlite3.Error, OSError
            raise StoreError(f"cannot open store {path}: {exc}") from exc
        store = cls(db, path)
        try:
            await store._configure(readonly)
        except Exception:
            await db.close()
            raise
        return store

    async def _configure(self, readonly: bool) -> None:
        await self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if readonly:
            return
        async with self.db.execute("SELECT count(*) FROM sqlite_master") as cur:
            row = await cur.fetchone()
        if row is not None and row[0] == 0:
            # A new file: freed pages go back to the file system on `PRAGMA
            # incremental_vacuum` (eviction).  Only settable before the first table exists;
            # older stores are converted once by a VACUUM in the eviction path.
            await self.db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        await self.db.execute("PRAGMA journal_mode = WAL")
        await self.db.execute("PRAGMA synchronous = NORMAL")
        await self.db.execute("PRAGMA foreign_keys = OFF")
        await self.db.execute("PRAGMA journal_size_limit = 67108864")
        # Checkpoint every 32 MiB of WAL rather than 4 MiB: fewer, larger copies and syncs.
        await self.db.execute("PRAGMA wal_autocheckpoint = 8192")
        await self.db.execute("PRAGMA cache_size = -32000")
        await self._migrate()

    async def _migrate(self) -> None:
        await self.db.execute(
            "CREATE TABLE IF NOT EXISTS migrations"
            " (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, applied_at INTEGER NOT NULL)"
        )
        async with self.db.execute("SELECT name FROM migrations") as cur:
            done = {row[0] for row in await cur.fetchall()}
        known = {name for name, _ in MIGRATIONS}
        if done - known:
            newer = sorted(done - known)
            raise StoreError(f"store {self.path} was written by a newer Helix ({newer})")
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            # One script, one transaction: a migration applies whole or not at all.
            script = (
                f"BEGIN IMMEDIATE;\n{sql}\n;"
                f"INSERT INTO migrations (name, applied_at) VALUES ('{name}', {now_ms()});"
                "\nCOMMIT;"
            )
            try:
                await self.db.executescript(script)
            except BaseException:
                if self.db.in_transaction:
                    await self.db.execute("ROLLBACK")
                raise

    async def close(self) -> None:
        await self.db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- write path ------------------------------------------------------------------------
    async def commit(self, batch: Batch) -> int:
        """Write one batch of records and its cursor in one transaction; returns file id."""
        return await self.run(self._writer.commit, batch, now_ms())

    async def commit_many(self, batches: Sequence[Batch]) -> list[int]:
        """Write several batches, each with its cursor, in one transaction."""
        return await self.run(self._writer.commit_many, batches, now_ms())

    def take_refused_lines(self) -> int:
        """Lines the store quarantined (a value it refused) since the last call: call it
        once the commits are done."""
        n, self._writer.refused_lines = self._writer.refused_lines, 0
        return n

    async def mark_ended(self, uid: str) -> bool:
        """Record a session-end signal for ``uid``; False if unknown or already ended."""
        return await self.run(self._writer.mark_ended, uid, now_ms())

    async def mark_gone(self, path: str) -> bool:
        """Record that a source file vanished (its rows stay); False if already known."""
        return await self.run(self._writer.mark_gone, path, now_ms())

    async def save_digests(
        self,
        digests: Sequence[tuple[int, dict[str, Any], bool, Signals | None]],
        schema_version: int,
        analyzed_at: int | None = None,
    ) -> None:
        """Save ``(session_id, digest, provisional, signals)`` in one transaction (``None``
        signals: keep the stored ones).  ``analyzed_at``: when the facts they were built
        from were read (a change committed after that is then analyzed again)."""
        now = now_ms()
        await self.run(self._writer.save_digests, digests, schema_version, now, analyzed_at or now)

    async def checkpoint(self) -> None:
        await self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- read path -------------------------------------------------------------------------
    async def cursors(self) -> dict[str, Any]:
        return await reader.cursors(self.db)

    async def cursor_by_identity(self, dev: int, ino: int) -> Any:
        return await reader.cursor_by_identity(self.db, dev, ino)

    async def sessions(
        self, agent: str | None = None, limit: int | None = None, include_empty: bool = False
    ) -> list[dict[str, Any]]:
        return await reader.sessions(self.db, agent, limit, include_empty)

    async def find_sessions(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        return await reader.find_sessions(self.db, query, limit)

    async def digest(self, session_id: int) -> dict[str, Any] | None:
        return await reader.digest(self.db, session_id)

    async def digest_facts(self, session_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """What the digests of ``session_ids`` are built from (one hop, grouped scans)."""
        return await self.run(facts.digest_facts, self.db._conn, session_ids)

    async def cursor_for(self, path: str) -> Any:
        return await reader.cursor_for(self.db, path)

    async def sessions_to_analyze(
        self, now: int, idle_ms: int, max_events: int | None = None
    ) -> list[int]:
        return await reader.sessions_to_analyze(self.db, now, idle_ms, max_events)

    async def analyzable_session_ids(self) -> list[int]:
        return await reader.analyzable_session_ids(self.db)

    async def raw_bytes_of(self, session_ids: list[int]) -> int:
        return await reader.raw_bytes_of(self.db, session_ids)

    async def status_facts(self) -> dict[str, Any]:
        return await reader.status_facts(self.db)

    async def session_ids_changed_since_analysis(self) -> list[int]:
        return await reader.changed_since_analysis(self.db)

    async def file_problems(self, session_id: int) -> dict[str, int]:
        return await reader.file_problems(self.db, session_id)

    async def totals(self) -> dict[str, Any]:
        return await reader.totals(self.db)

    # -- re-normalization (helixd.store.renorm) -------------------------------------------
    async def renormalize_groups(self, versions: dict[str, int]) -> list[renorm.Group]:
        """The groups of sessions and files an older adapter version produced."""
        return await self.run(renorm.groups, self.db._conn, versions)

    async def stale_file_count(self, versions: dict[str, int]) -> int:
        """Files an older adapter version read (re-normalization would rebuild them)."""
        return await self.run(queries.stale_file_count, self.db._conn, versions)

    async def renormalize_skipped_mark(self) -> str | None:
        return await self.run(renorm.skipped_mark, self.db._conn)

    async def set_renormalize_skipped_mark(self, mark: str) -> None:
        await self.run(renorm.set_skipped_mark, self.db._conn, mark)

    async def stored_raw(self, file_id: int) -> renorm.StoredRaw:
        return await self.run(renorm.stored_raw, self.db._conn, file_id)

    async def replay(
        self, session_ids: Sequence[int], expect: Sequence[tuple[int, int, int, int]], batches: Any
    ) -> bool:
        """Rebuild a group's rows from re-parsed raw lines (``Writer.replay``)."""
        return await self.run(
            replay_write.replay, self._writer, session_ids, expect, batches, now_ms()
        )

    async def save_hook_event(self, row: tuple[Any, ...]) -> None:
        """A hook's shell command or edit: ``(at, agent, native id, what, tool, call id,
        target)`` (``helixd.store.hook_events``)."""
        from helixd.store import hook_events

        await self.run(hook_events.save, self.db._conn, row)

    async def get_digest(self, session_uid: str) -> dict[str, Any] | None:
        """The digest of the session ``session_uid`` (``<flavor>:<native id>``, exactly) as
        the analyze pass wrote it (design spec §11.2; fields in ``docs/api-python.md``), or
        None when there is no such session or no digest yet."""
        import orjson

        from helixd.store.session_queries import digest_of_uid

        raw = await self.run(digest_of_uid, self.db._conn, session_uid)
        return None if raw is None else dict(orjson.loads(raw))

    # -- attribution (helixd.store.attribution) --------------------------------------------
    async def attribution_inputs(
        self, session_ids: Sequence[int]
    ) -> tuple[list[tuple[Any, ...]], dict[str, tuple[str, str | None]]]:
        """``(id, cwd, git_branch)`` of these sessions, and the roots resolved so far."""

        def read(con: Any) -> tuple[list[tuple[Any, ...]], dict[str, tuple[str, str | None]]]:
            return attribution.session_inputs(con, session_ids), attribution.known_roots(con)

        return await self.run(read, self.db._conn)

    async def save_attribution(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """``(id, repo, repo_root, domain, task_ref)`` per session."""
        await self.run(attribution.save, self.db._conn, list(rows))

    # -- retention (helixd.store.evict) ----------------------------------------------------
    async def retention_usage(self) -> dict[str, Any]:
        """Tier 1 bytes per session (``SessionUsage`` rows), unattributed raw bytes and the
        distilled (Tier 2) bytes."""
        return await self.run(evict.measure, self.db._conn)

    async def evict(
        self, evictions: Sequence[Any], now: int, loss_reason: str = "hard cap"
    ) -> list[Any]:
        """Apply a retention plan's evictions; returns those applied."""
        return await self.run(evict.apply, self.db._conn, list(evictions), now, loss_reason)

    async def shrink(self) -> str:
        """Return freed pages to the file system (incremental vacuum + WAL truncate)."""
        return await self.run(evict.shrink, self.db._conn)

    async def retention_log(self) -> dict[str, Any]:
        return await self.run(evict.retention_log, self.db._conn)

    def file_bytes(self) -> int:
        return evict.file_bytes(str(self.path))

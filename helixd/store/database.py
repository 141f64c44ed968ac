"""The store: the only code in Helix that speaks SQL (this package).

One SQLite file in WAL mode, on a connection with a thread of its own (``connection``).
``Store`` owns the connection, runs the migrations and exposes the write path (``commit``:
records + cursor in one transaction) and the read queries the CLI and the digest builder
need.

Connections: the daemon and ``helixctl ingest`` hold one writer connection; read-only
commands open their own short-lived connection.  ``busy_timeout`` lets a reader and a
writer overlap without "database is locked" errors; past it, a lock is a ``StoreFault``.

Faults: ``open`` looks at the file first (``probe.condition``: missing, read-only, not an
SQLite file) and turns any error of the connection into a ``StoreFault`` naming the
condition and its fix (``faults.classify``).  Errors of later calls are raised as SQLite
raised them; callers classify them with ``faults.classify`` (the daemon backs off and
retries, ``helixctl`` exits 3).  ``check`` tells whether the file at the path is still the
one this connection has open.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from helixd import filemodes
from helixd.core.commits import DIGEST, INGEST, REBUILD, Commit
from helixd.core.signals import Signals
from helixd.store import (
    attribution,
    connection,
    digest_write,
    evict,
    facts,
    probe,
    queries,
    reader,
    renorm,
    replay_write,
    writer,
)
from helixd.store.batch import Batch
from helixd.store.faults import SQLITE_MAGIC, StoreError, StoreFault, classify
from helixd.store.schema import MIGRATIONS

__all__ = ["Batch", "Store", "StoreError", "StoreFault", "classify"]

BUSY_TIMEOUT_MS = 30_000
T = TypeVar("T")


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

    def __init__(self, db: connection.Connection, path: Path, readonly: bool = False) -> None:
        self.db = db
        self.con = db.con  # the ``sqlite3`` connection: only ever used inside ``run``
        self.path = path
        self.readonly = readonly
        self.identity = probe.identity(path)  # (dev, ino) of the file this connection opened
        self.companions: dict[str, probe.Identity | None] = {}  # "-wal"/"-shm" -> (dev, ino)
        self._head_fd: int | None = None  # kept open for ``check`` (see ``probe``)
        self._writer = writer.Writer(db.con)
        # Called with each ``Commit`` right after its transaction, on the event loop's
        # thread (the daemon points it at its ``CommitHub``); must not block.
        self.on_commit: Callable[[Commit], None] | None = None

    def _publish(self, what: str, new: Sequence[str] = (), updated: Sequence[str] = ()) -> None:
        if self.on_commit is not None:
            self.on_commit(Commit(what, tuple(new), tuple(updated), now_ms()))

    def _commit_batches(
        self, batches: Sequence[Batch], now: int
    ) -> tuple[list[int], tuple[tuple[str, ...], tuple[str, ...]]]:
        ids = self._writer.commit_many(batches, now)
        return ids, self._writer.take_changes()

    def _commit_run(
        self, batches: Sequence[Batch], now: int
    ) -> tuple[list[int], tuple[tuple[str, ...], tuple[str, ...]]]:
        ids = self._writer.commit_run(batches, now)
        return ids, self._writer.take_changes()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the connection's own thread, in one hop (a write batch of a
        dozen statements does not wait a dozen times for a busy event loop)."""
        return await self.db.run(fn, *args)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` on the store's thread: for the store functions that take
        the ``sqlite3`` connection (``helixd.store.outbox``), without reaching into it."""
        return await self.run(fn, self.con, *args)

    @classmethod
    async def open(
        cls, path: Path, *, readonly: bool = False, busy_ms: int = BUSY_TIMEOUT_MS
    ) -> Store:
        """Open (a writer creates) the store; a ``StoreFault`` when it cannot be used.  A
        writer makes the store's directory 0700 and the database, its ``-wal`` and ``-shm``
        0600 whatever the umask, and fixes those of a store an older version left readable
        by others (``helixd.filemodes``)."""
        fault = probe.condition(path, writing=not readonly)
        if fault is not None:
            raise fault
        try:
            if not readonly:
                await asyncio.to_thread(_private_files, path)
            if readonly:
                db = await connection.Connection.open(
                    lambda: sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
                )
            else:
                db = await connection.Connection.open(
                    lambda: sqlite3.connect(path, isolation_level=None)
                )
        except Exception as exc:  # sqlite3.Error, OSError
            raise _fault(exc, path, "cannot open the store") from exc
        store = cls(db, path, readonly)
        try:
            await store._configure(readonly, busy_ms)
        except Exception as exc:
            with contextlib.suppress(Exception):
                await db.close()
            if isinstance(exc, StoreError):
                raise
            raise _fault(exc, path, "cannot open the store") from exc
        store.identity = probe.identity(path)
        store.companions = {s: probe.identity(Path(f"{path}{s}")) for s in ("-wal", "-shm")}
        with contextlib.suppress(OSError):
            store._head_fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return store

    def drop_own_companions(self) -> None:
        """After ``close``: remove the ``-wal``/``-shm`` files this connection used if they
        are still at the path though its database file was deleted or replaced (SQLite
        would replay that WAL into whatever file is at the path next)."""
        for suffix, ident in self.companions.items():
            companion = Path(f"{self.path}{suffix}")
            if ident is not None and probe.identity(companion) == ident:
                companion.unlink(missing_ok=True)

    def check(self) -> StoreFault | None:
        """Is the file at the path still the one this connection has open, still usable?
        (a few ``stat`` calls and a 16-byte read: cheap enough for every commit cycle)."""
        head = None
        if self._head_fd is not None:
            with contextlib.suppress(OSError):
                head = os.pread(self._head_fd, len(SQLITE_MAGIC), 0)
        return probe.condition(
            self.path, writing=not self.readonly, opened=self.identity, head=head
        )

    async def backup_to(self, dest: Path) -> None:
        """Copy the open database (committed state) into a new file ``dest``: how the
        daemon puts back a store deleted under it (its connection can still read it)."""

        def copy() -> None:
            target = sqlite3.connect(dest, isolation_level=None)
            try:
                self.con.backup(target)
            finally:
                target.close()

        await self.run(copy)
        os.chmod(dest, 0o600)

    async def _configure(self, readonly: bool, busy_ms: int = BUSY_TIMEOUT_MS) -> None:
        await self.db.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
        if readonly:
            return
        ((tables, ours),) = await self.db.execute(
            "SELECT count(*), count(*) FILTER (WHERE name = 'migrations') FROM sqlite_master"
            " WHERE type = 'table'"
        )
        if tables and not ours:  # someone else's database: never add tables to it
            raise StoreFault("incompatible", self.path, f"not a Helix store ({tables} tables)")
        ((objects,),) = await self.db.execute("SELECT count(*) FROM sqlite_master")
        if objects == 0:
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
        done = {row[0] for row in await self.db.execute("SELECT name FROM migrations")}
        known = {name for name, _ in MIGRATIONS}
        if done - known:
            newer = sorted(done - known)
            raise StoreFault(
                "incompatible", self.path, f"written by a newer Helix: {', '.join(newer)}"
            )
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            # One script, one transaction: a migration applies whole or not at all.
            script = (
                f"BEGIN IMMEDIATE;\n{sql}\n;"
                f"INSERT INTO migrations (name, applied_at) VALUES ('{name}', {now_ms()});"
                "\nCOMMIT;"
            )
            await self.run(self._apply_script, script)

    def _apply_script(self, script: str) -> None:
        """(on the store's thread) A migration script; rolled back whole if it fails."""
        try:
            self.con.executescript(script)
        except BaseException:
            if self.con.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.con.execute("ROLLBACK")
            raise

    async def close(self) -> None:
        """Close the connection; an error of the close itself (a store already broken) is
        not raised: the connection's thread stops either way."""
        with contextlib.suppress(sqlite3.Error, ValueError, RuntimeError):
            await self.db.close()
        if self._head_fd is not None:  # only now: closing it drops this process's locks
            os.close(self._head_fd)
            self._head_fd = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- write path ------------------------------------------------------------------------
    async def commit(self, batch: Batch) -> int:
        """Write one batch of records and its cursor in one transaction; returns file id."""
        return (await self.commit_many([batch]))[0]

    async def commit_many(self, batches: Sequence[Batch]) -> list[int]:
        """Write several batches, each with its cursor, in one transaction."""
        ids, (new, updated) = await self.run(self._commit_batches, batches, now_ms())
        if new or updated:
            self._publish(INGEST, new, updated)
        return ids

    async def commit_run(self, batches: Sequence[Batch]) -> list[int]:
        """A live run's batches, each with its cursor, in one transaction, every statement
        once for the run (``Writer.commit_run``)."""
        ids, (new, updated) = await self.run(self._commit_run, batches, now_ms())
        if new or updated:
            self._publish(INGEST, new, updated)
        return ids

    def take_refused_lines(self) -> int:
        """Lines the store quarantined (a value it refused) since the last call: call it
        once the commits are done."""
        n, self._writer.refused_lines = self._writer.refused_lines, 0
        return n

    async def mark_ended(self, uid: str) -> bool:
        """Record a session-end signal for ``uid``; False if unknown or already ended."""
        ended = await self.run(self._writer.mark_ended, uid, now_ms())
        if ended:
            self._publish(INGEST, (), (uid,))
        return ended

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
        await self.run(
            digest_write.save_digests, self.con, digests, schema_version, now, analyzed_at or now
        )
        if self.on_commit is not None and digests:
            uids = await self.run(self._writer.uids_of, [d[0] for d in digests])
            self._publish(DIGEST, (), uids)

    async def release_memory(self) -> None:
        """Empty the connection's page cache (``PRAGMA shrink_memory``): the daemon at rest
        (``helixd.daemon.memory``); the next statements read their pages back."""
        await self.db.execute("PRAGMA shrink_memory")

    async def checkpoint(self) -> None:
        await self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- read path -------------------------------------------------------------------------
    async def cursors(self) -> dict[str, Any]:
        return await self.run(reader.cursors, self.con)

    async def cursor_by_identity(self, dev: int, ino: int) -> Any:
        return await self.run(reader.cursor_by_identity, self.con, dev, ino)

    async def sessions(
        self, agent: str | None = None, limit: int | None = None, include_empty: bool = False
    ) -> list[dict[str, Any]]:
        return await self.run(reader.sessions, self.con, agent, limit, include_empty)

    async def find_sessions(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        return await self.run(reader.find_sessions, self.con, query, limit)

    async def digest(self, session_id: int) -> dict[str, Any] | None:
        return await self.run(reader.digest, self.con, session_id)

    async def digest_facts(self, session_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """What the digests of ``session_ids`` are built from (one hop, grouped scans)."""
        return await self.run(facts.digest_facts, self.con, session_ids)

    async def cursor_for(self, path: str) -> Any:
        return await self.run(reader.cursor_for, self.con, path)

    async def cursors_for(self, paths: Sequence[str]) -> dict[str, Any]:
        """The known cursors of ``paths`` by path, in one hop."""
        return await self.run(reader.cursors_for, self.con, list(paths))

    async def sessions_to_analyze(
        self, now: int, idle_ms: int, max_events: int | None = None
    ) -> list[int]:
        return await self.run(reader.sessions_to_analyze, self.con, now, idle_ms, max_events)

    async def analyzable_session_ids(self) -> list[int]:
        return await self.run(reader.analyzable_session_ids, self.con)

    async def raw_bytes_of(self, session_ids: list[int]) -> int:
        return await self.run(reader.raw_bytes_of, self.con, session_ids)

    async def status_facts(self) -> dict[str, Any]:
        return await self.run(reader.status_facts, self.con)

    async def session_ids_changed_since_analysis(self) -> list[int]:
        return await self.run(reader.changed_since_analysis, self.con)

    async def file_problems(self, session_id: int) -> dict[str, int]:
        return await self.run(reader.file_problems, self.con, session_id)

    async def totals(self) -> dict[str, Any]:
        return await self.run(reader.totals, self.con)

    # -- re-normalization (helixd.store.renorm) -------------------------------------------
    async def renormalize_groups(self, versions: dict[str, int]) -> list[renorm.Group]:
        """The groups of sessions and files an older adapter version produced."""
        return await self.run(renorm.groups, self.con, versions)

    async def stale_file_count(self, versions: dict[str, int]) -> int:
        """Files an older adapter version read (re-normalization would rebuild them)."""
        return await self.run(queries.stale_file_count, self.con, versions)

    async def renormalize_skipped_mark(self) -> str | None:
        return await self.run(renorm.skipped_mark, self.con)

    async def set_renormalize_skipped_mark(self, mark: str) -> None:
        await self.run(renorm.set_skipped_mark, self.con, mark)

    async def stored_raw(self, file_id: int) -> renorm.StoredRaw:
        return await self.run(renorm.stored_raw, self.con, file_id)

    async def replay(
        self, session_ids: Sequence[int], expect: Sequence[tuple[int, int, int, int]], batches: Any
    ) -> bool:
        """Rebuild a group's rows from re-parsed raw lines (``Writer.replay``)."""
        done = await self.run(
            replay_write.replay, self._writer, session_ids, expect, batches, now_ms()
        )
        if done:
            self._publish(REBUILD)
        return done

    async def save_hook_event(self, row: tuple[Any, ...]) -> None:
        """A hook's shell command or edit: ``(at, agent, native id, what, tool, call id,
        target)`` (``helixd.store.hook_events``)."""
        from helixd.store import hook_events

        await self.run(hook_events.save, self.con, row)

    async def get_digest(self, session_uid: str) -> dict[str, Any] | None:
        """The digest of the session ``session_uid`` (``<flavor>:<native id>``, exactly) as
        the analyze pass wrote it (design spec §11.2; fields in ``docs/api-python.md``), or
        None when there is no such session or no digest yet."""
        import orjson

        from helixd.store.session_queries import digest_of_uid

        raw = await self.run(digest_of_uid, self.con, session_uid)
        return None if raw is None else dict(orjson.loads(raw))

    # -- attribution (helixd.store.attribution) --------------------------------------------
    async def attribution_inputs(
        self, session_ids: Sequence[int]
    ) -> tuple[list[tuple[Any, ...]], dict[str, tuple[str, str | None]]]:
        """``(id, cwd, git_branch)`` of these sessions, and the roots resolved so far."""

        def read(con: Any) -> tuple[list[tuple[Any, ...]], dict[str, tuple[str, str | None]]]:
            return attribution.session_inputs(con, session_ids), attribution.known_roots(con)

        return await self.run(read, self.con)

    async def save_attribution(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """``(id, repo, repo_root, domain, task_ref)`` per session."""
        await self.run(attribution.save, self.con, list(rows))

    # -- retention (helixd.store.evict) ----------------------------------------------------
    async def retention_usage(self) -> dict[str, Any]:
        """Tier 1 bytes per session (``SessionUsage`` rows), unattributed raw bytes and the
        distilled (Tier 2) bytes."""
        return await self.run(evict.measure, self.con)

    async def retention_bounds(self, backstop_stage: int) -> dict[str, Any]:
        """Tier 1's total from the running totals, the earliest activity of the sessions the
        backstop could take and the distilled bytes: enough to see that a pass has nothing
        to evict (``evict.bounds``)."""
        return await self.run(evict.bounds, self.con, backstop_stage)

    async def evict(
        self, evictions: Sequence[Any], now: int, loss_reason: str = "hard cap"
    ) -> list[Any]:
        """Apply a retention plan's evictions; returns those applied."""
        applied = await self.run(evict.apply, self.con, list(evictions), now, loss_reason)
        if applied:
            self._publish(REBUILD)
        return applied

    async def shrink(self) -> str:
        """Return freed pages to the file system (incremental vacuum + WAL truncate)."""
        return await self.run(evict.shrink, self.con)

    async def retention_log(self) -> dict[str, Any]:
        return await self.run(evict.retention_log, self.con)

    def file_bytes(self) -> int:
        return evict.file_bytes(str(self.path))


def _fault(exc: BaseException, path: Path, what: str) -> StoreError:
    """The ``StoreFault`` behind ``exc``; a plain ``StoreError`` when it names none."""
    return classify(exc, path) or StoreError(f"{what} {path}: {exc}")

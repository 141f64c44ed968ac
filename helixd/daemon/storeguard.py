"""The daemon's hold on its store: open it, notice when the file changes under it, put it
back when it was deleted.  Every job takes the store through ``use``.

What happens to the file at the store's path while the daemon runs (checked by ``use``, so
before every work item and job, and by the status loop every tick):

* **deleted** (the file, or its whole folder): the store the daemon still has open is
  copied back to the path (SQLite's online backup: nothing committed is lost, including
  history whose transcripts are gone), then reopened there.  The folder is recreated.
* **replaced** by another file: a Helix store (a backup put back, say) is adopted: the
  daemon reopens at the path and rescans the sources against that store's cursors.
  Anything else is left alone and nothing is written until it is moved away (then the
  store is put back as for a deletion) or helixd is restarted.
* **read-only, corrupt header, unreadable**: nothing is written; once the check passes
  again the connection is reopened.
* Faults met by the work itself (locked, disk full …) need no action here: the caller
  backs off and retries.

Not opened yet (the store was unusable at start): ``use`` opens it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Final

import structlog

from helixd.store import probe
from helixd.store.database import Store
from helixd.store.faults import StoreFault, classify

log = structlog.get_logger("helixd.store")

REOPEN_KINDS: Final = frozenset({"read_only", "corrupt", "io", "incompatible"})


class StoreGuard:
    """Owns the daemon's ``Store``: opens it lazily, checks it, recovers it (see module)."""

    def __init__(self, path: Path, busy_ms: int, on_reopened: Callable[[str], None]) -> None:
        self.path = path
        self.busy_ms = busy_ms
        self.on_reopened = on_reopened  # called with the reason after a reopen
        self.on_open: Callable[[Store], None] | None = None  # called with each store opened
        self.store: Store | None = None
        self._reopen = False
        self._users = 0
        self._recovering = False
        self._cond = asyncio.Condition()

    def _opened(self) -> None:
        if self.on_open is not None and self.store is not None:
            self.on_open(self.store)

    @property
    def _restoring(self) -> Path:
        """Where the copy of a deleted store is made before it is renamed into place."""
        return self.path.with_name(self.path.name + ".restoring")

    def check(self) -> StoreFault | None:
        """The open store's file is still there, the same, usable (None when not open)."""
        return self.store.check() if self.store is not None else None

    def noted(self, fault: StoreFault) -> None:
        """A fault met by the work: a connection that met these is opened afresh."""
        if fault.kind in REOPEN_KINDS:
            self._reopen = True

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[Store]:
        """The store, checked (and opened, put back or reopened when needed).  Raises the
        ``StoreFault`` that stands in the way.  Recovery waits until no job uses the old
        connection."""
        async with self._cond:
            await self._cond.wait_for(lambda: not self._recovering)
            if self.store is None or self._reopen or self.store.check() is not None:
                self._recovering = True
                try:
                    await self._cond.wait_for(lambda: self._users == 0)
                    await self._recover()
                except StoreFault:
                    raise
                except Exception as exc:  # whatever stops a recovery is the store's problem
                    raise classify(exc, self.path) or StoreFault("io", self.path, str(exc)) from exc
                finally:
                    self._recovering = False
                    self._cond.notify_all()
            assert self.store is not None
            store = self.store
            self._users += 1
        try:
            yield store
        finally:
            async with self._cond:
                self._users -= 1
                self._cond.notify_all()

    async def _recover(self) -> None:
        if self.store is None:
            if not self.path.exists() and self._restoring.exists():
                os.replace(self._restoring, self.path)  # a put-back cut short after its copy
            self.store = await Store.open(self.path, busy_ms=self.busy_ms)
            self._opened()
            self._reopen = False
            return
        fault = self.store.check()
        if fault is None:
            if self._reopen:  # the condition cleared: start from a fresh connection
                await self._reopen_at_path("reopened")
            return
        if fault.kind == "deleted":
            await self._put_back(fault)
        elif fault.kind == "replaced":
            await self._adopt(fault)
        else:
            self._reopen = True
            raise fault

    async def _reopen_at_path(self, reason: str) -> None:
        old, self.store = self.store, None
        if old is not None:
            await old.close()
            if old.check() is not None:  # deleted or replaced: its WAL must not be replayed
                old.drop_own_companions()
        self.store = await Store.open(self.path, busy_ms=self.busy_ms)
        self._opened()
        self._reopen = False
        log.warning("store_reopened", store=str(self.path), reason=reason)
        self.on_reopened(reason)

    async def _put_back(self, fault: StoreFault) -> None:
        """Copy the open store back to its path (its folder recreated), then reopen."""
        assert self.store is not None
        tmp = self._restoring
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            for leftover in (tmp, Path(f"{tmp}-journal")):
                leftover.unlink(missing_ok=True)
            await self.store.backup_to(tmp)
        except Exception as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise (classify(exc, self.path) or fault) from exc
        old, self.store = self.store, None
        await old.close()
        old.drop_own_companions()  # the deleted file's WAL would be replayed into the copy
        os.replace(tmp, self.path)
        log.warning("store_restored", store=str(self.path), reason=fault.detail)
        self.store = await Store.open(self.path, busy_ms=self.busy_ms)
        self._opened()
        self._reopen = False
        self.on_reopened("restored")

    async def _adopt(self, fault: StoreFault) -> None:
        """Another file is at the path: use it if it is a Helix store, else write nothing.
        Our ``-wal``/``-shm`` go from the path first: SQLite would read the new file through
        them (and later write our pages into it)."""
        assert self.store is not None
        self.store.drop_own_companions()  # the open connection keeps using them
        state, detail = await asyncio.to_thread(probe.integrity, self.path)
        if state not in ("ok", "unfinished"):
            raise StoreFault("replaced", self.path, f"the new file is unusable: {detail}")
        await self._reopen_at_path("replaced by another store")

    async def close(self) -> None:
        if self.store is not None:
            with contextlib.suppress(Exception):
                await self.store.checkpoint()
            await self.store.close()
            self.store = None

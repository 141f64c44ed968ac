"""The daemon's side of store faults: the store opened at start, a failed job's store
fault turned into a backoff, each opened store wired to the commit hub, a put-back store
re-checked, and the store file watched on each status tick (``daemon/storeguard.py`` owns
the store itself, ``daemon/health.py`` the backoffs)."""

from __future__ import annotations

import structlog

from helixd.daemon.state import DaemonState
from helixd.daemon.worker import CHECK_STORE
from helixd.daemon.workqueue import RECONCILE
from helixd.store.database import Store
from helixd.store.faults import StoreFault, classify

log = structlog.get_logger("helixd")


class StoreWatch(DaemonState):
    async def _open_store(self) -> None:
        """Open the store at start; an unusable store is reported and retried by the
        worker (the daemon runs on, its queue waits)."""
        try:
            async with self.guard.use():
                pass
        except StoreFault as fault:
            self.health.failed("ingest", fault)

    def _job_failed(self, name: str, exc: BaseException) -> float | None:
        """A scheduled job failed: a store fault is retried after a backoff."""
        fault = classify(exc, self.settings.store.db)
        if fault is None:
            return None
        self.guard.noted(fault)
        return self.health.failed(name, fault)

    def _opened(self, store: Store) -> None:
        """Each store the guard opens (at start, or again after a fault) tells the hub of
        its commits (the live feed of the web face)."""
        store.on_commit = self.hub.publish

    def _reopened(self, reason: str) -> None:
        """The store was put back, replaced or reopened: re-check every source against it
        (a restored or adopted store may hold older cursors) and retake the pid lock."""
        if self.lock is not None and self.lock.refresh():
            log.warning("pid_lock_retaken", path=str(self.lock.path))
        self.queue.put(RECONCILE)

    def _watch_store(self) -> None:
        """Each status tick: the store file still the one open, still usable?  A change is
        handled by the worker (``CHECK_STORE``), which owns the store."""
        fault = self.guard.check()
        if fault is not None:
            if "watch" not in self.health.failing or (
                self.health.failing["watch"].fault.kind != fault.kind
            ):
                self.health.failed("watch", fault)
            self.queue.put(CHECK_STORE)
        elif "watch" in self.health.failing and self.guard.store is not None:
            self.health.ok("watch")
        if self.lock is not None and self.lock.refresh():
            log.warning("pid_lock_retaken", path=str(self.lock.path))

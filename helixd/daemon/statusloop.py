"""The daemon's periodic ticks: the status document (``snapshot``), published to the
status file and sd_notify when it changed, with the store check, the held hook activity
and the passive checkpoint done on the same 2 s tick; and the sd_notify watchdog."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from typing import Any

import orjson
import structlog

from helixd import __version__
from helixd.daemon.memory import trim_heap
from helixd.daemon.notify import notify, watchdog_interval
from helixd.daemon.storewatch import StoreWatch
from helixd.store import walcheck
from helixd.store.faults import classify

log = structlog.get_logger("helixd")
STATUS_EVERY = 2.0


class StatusLoop(StoreWatch):
    def snapshot(self) -> dict[str, Any]:
        q = self.queue.statistics()
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.started,
            "store": str(self.settings.store.db),
            "roots": self.watcher.describe() if self.watcher else {},
            "queue": {
                "pending": q.pending,
                "in_progress": q.in_progress,
                "processed": q.processed,
                "deferred": q.deferred,
            },
            "ingest": {**self.worker.totals, "unreadable": self.worker.unreadable_summary()},
            "jobs": self.scheduler.describe(),
            "store_fault": self.health.describe(),
            "store_identity": self.guard.store.identity if self.guard.store else None,
            "failing_files": self.files.describe(),
            "hook_activity": {
                "held": len(self.hook_activity.held),
                "dropped": self.hook_activity.dropped,
            },
            "status_file_error": self.status_error,
            "web": self.web.describe() if self.web else None,
            "updated_at": time.time(),
        }

    async def _status_loop(self) -> None:
        """Watch the store file and publish the daemon's state for ``helixctl status`` when
        it changed (nothing is written while idle).  A status file that cannot be written
        (a full disk, a removed folder) is retried on the next tick; the daemon goes on."""
        last: Any = None
        while True:
            try:
                self._watch_store()
                if self.hook_activity.held and self.guard.store is not None:
                    await self.hook_activity.flush(self.guard.store)  # the store is back
                await self._release_memory_at_rest()
                await self._checkpoint_when_written()
                snap = self.snapshot()
                key = orjson.dumps(
                    {k: v for k, v in snap.items() if k not in ("updated_at", "status_file_error")},
                    default=str,
                )
                if key != last:
                    await self._publish(snap)
                    last = key if self.status_error is None else None
            except Exception as exc:  # the loop itself must never end
                log.error("status_loop_failed", error=str(exc), exc_info=exc)
            await asyncio.sleep(STATUS_EVERY)

    async def _release_memory_at_rest(self) -> None:
        """Once a tick passes with nothing read after some was (the daemon came to rest):
        the store's page cache emptied and the heap's free pages given back
        (``daemon.memory``).  Before the checkpoint of this tick, which still sees the
        last tick's bytes as new."""
        written = self.worker.totals["bytes_read"]
        if written != self._checkpointed_at or written == self._released_at:
            return
        if self.guard.store is None:
            return
        self._released_at = written
        try:
            await self.guard.store.release_memory()
        except sqlite3.Error as exc:
            log.warning("release_memory_failed", error=str(exc))
            return
        trim_heap()

    async def _checkpoint_when_written(self) -> None:
        """A passive checkpoint off the writer's commit path, when the worker wrote since
        the last tick (``store.walcheck``); nothing at rest.  A failure is only logged:
        the writer's own automatic checkpoint remains."""
        written = self.worker.totals["bytes_read"]
        if written == self._checkpointed_at or self.guard.store is None:
            return
        self._checkpointed_at = written
        try:
            done = await asyncio.to_thread(walcheck.checkpoint, self.settings.store.db)
        except sqlite3.Error as exc:
            log.warning("checkpoint_failed", error=str(exc))
            return
        if done is not None:
            log.debug("checkpoint", frames=done[0], copied=done[1])

    async def _publish(self, snap: dict[str, Any]) -> None:
        try:
            await asyncio.to_thread(self.status.write, snap)
        except OSError as exc:
            fault = classify(exc, self.settings.store.db)
            error = str(fault) if fault else f"{type(exc).__name__}: {exc}"
            if self.status_error is None or self.status_error["error"] != error:
                log.warning("status_write_failed", path=str(self.status.path), error=error)
                self.status_error = {
                    "path": str(self.status.path),
                    "error": error,
                    "since": time.time(),
                }
            return
        if self.status_error is not None:
            log.info("status_write_recovered", path=str(self.status.path))
            self.status_error = None
        notify(f"STATUS=queue {snap['queue']['pending']}, {snap['ingest']['bytes_read']} bytes")

    async def _watchdog_loop(self) -> None:
        interval = watchdog_interval()
        if interval is None:
            return
        while True:
            notify("WATCHDOG=1")
            await asyncio.sleep(interval)

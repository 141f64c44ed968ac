"""The scheduled passes: which jobs run how often (from the configuration, with the
fallback scan while a root cannot be watched), and each job's work (reconcile, analyze,
evict, renormalize, the fleet push); the digests the worker asks for after a batch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from helixd import __version__, config
from helixd.adapters.registry import REGISTRY
from helixd.daemon.dispatch import Dispatch
from helixd.daemon.pacing import PART, in_turns
from helixd.daemon.worker import Limits
from helixd.daemon.workqueue import RECONCILE
from helixd.fleet.job import FleetJob
from helixd.fleet.target import Target, target_from
from helixd.ingest import digest, eviction
from helixd.ingest.renormalize import renormalize
from helixd.store.database import Store, now_ms

log = structlog.get_logger("helixd")


class Jobs(Dispatch):
    def _schedule_jobs(self) -> None:
        """Jobs from the configuration.  While a root cannot be watched (watching is off, or
        an inotify limit was hit) the reconcile scan runs at the fallback interval."""
        d = self.settings.daemon
        blind = not d.watch or bool(self.watcher and self.watcher.failed)
        interval = (
            min(d.reconcile_seconds, d.fallback_scan_seconds) if blind else (d.reconcile_seconds)
        )
        self.scheduler.add("reconcile", self._job_reconcile, interval)
        self.scheduler.add("analyze", self._job_analyze, d.analyze_seconds)
        self.scheduler.add("evict", self._job_evict, d.evict_seconds)
        self.scheduler.add("renormalize", self._job_renormalize, d.renormalize_seconds)
        try:
            target = fleet_target(self.settings)
        except config.ConfigError as exc:  # the password file changed since it was checked
            log.error("fleet_off", error=str(exc))
            target = None
        if target is not None:
            f = self.settings.fleet
            self.fleet = FleetJob(
                target,
                __version__,
                f.push_seconds,
                f.retry_max_seconds,
                lambda seconds: self.scheduler.reschedule("fleet", seconds),
            )
            self.scheduler.add("fleet", self._job_fleet, f.push_seconds)
        else:
            self.fleet = None

    async def _job_fleet(self) -> dict[str, Any]:
        """Push the fleet outbox (docs/operations.md, "Fleet")."""
        if self.fleet is None:  # [fleet] removed by a reload
            return {"off": True}
        async with self.guard.use() as store:
            return await self.fleet(store)

    async def _job_reconcile(self) -> str:
        self.queue.put(RECONCILE)
        await self.scheduler.run_now("spool", self._drain_spool)  # if it failed at start
        return "queued"

    async def _job_evict(self) -> dict[str, Any]:
        """The retention pass (design spec §5); it may ask for an analysis first."""
        async with self.guard.use() as store:
            return await eviction.evict_pass(
                store, self.settings.retention, now_ms(), lambda: self._analyze(store)
            )

    async def _job_renormalize(self) -> dict[str, Any]:
        """Low priority: rebuild, group by group, the rows an older adapter version made
        (from the stored raw lines); stops while files wait to be ingested."""
        async with self.guard.use() as store:
            stats = await renormalize(store, REGISTRY, should_stop=self.queue.busy)
            if stats.groups:
                await self._analyze(store)
            return stats.as_dict()

    async def _renormalize_when_idle(self) -> None:
        """Once after start, as soon as the catch-up ingest is done."""
        await asyncio.sleep(0.5)
        await self.queue.wait_idle()
        await self.scheduler.run_now("renormalize", self._job_renormalize)

    async def _job_analyze(self) -> int:
        """The scheduled digest pass.  It runs beside the worker, on the store's one
        thread: while files wait to be read it goes ``PART`` sessions at a time
        (``pacing.in_turns``; one part's facts are one hop of that thread, its digests are
        built on the loop), so that the worker's commits wait for a part, not for every
        stale session — at 200 busy sessions of ~1 000 events the whole pass in one go held
        every append back for about a second, once a minute."""
        async with self.guard.use() as store:
            return await in_turns(
                lambda pick: self._analyze(store, None, pick),
                lambda: PART if self.queue.busy() else None,
            )

    async def _analyze(
        self,
        store: Store,
        max_events: int | None = None,
        pick: Callable[[list[int]], list[int]] | None = None,
    ) -> int:
        """Rebuild the digests that are stale (``max_events``: only of sessions that small;
        the scheduled pass takes the big ones, since a digest costs O(session); ``pick``:
        only those it picks, the worker's part while files wait)."""
        return await digest.analyze_stale(store, self.settings, self.prices, None, max_events, pick)

    def _limits(self) -> Limits:
        s = self.settings
        return Limits(s.ingest.chunk_bytes, s.ingest.max_line_bytes, s.daemon.max_read_bytes)


def fleet_target(settings: config.Settings) -> Target | None:
    """Where the fleet job pushes (None: no ``[fleet]`` dsn); ConfigError when the password
    file cannot be used."""
    from helixd.fleet.secret import SecretError

    try:
        return target_from(settings.fleet)
    except SecretError as exc:
        raise config.ConfigError(str(exc)) from None

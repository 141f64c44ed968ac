"""``helixd``: the long-running daemon, and its composition root.

The only place that wires edges together: settings -> logs -> lock -> store -> watcher ->
work queue -> one ingest worker -> scheduler.  All tasks live in one TaskGroup.
This module holds the wiring, the run loop, the signals and SIGHUP's reload; the daemon's
other jobs are the layers ``Daemon`` builds on, one module each (``state``, ``storewatch``,
``statusloop``, ``dispatch``, ``jobs``, ``webface``), and ``sweep`` is ``helixd --once``.

* ``helixd`` runs in the foreground (the service manager daemonizes); ``helixd --once``
  does one full sweep (ingest + digests) and exits.
* One instance per store (``pidlock``); a second start names the holder and exits 1.
* SIGTERM/SIGINT: stop taking work, let the batch in flight commit (at most
  ``daemon.shutdown_seconds``), stop the observer and the scheduler, close the store,
  exit 0.  A second signal exits at once (code 130).  SIGHUP re-reads the configuration.
* With ``NOTIFY_SOCKET`` set: READY=1, STATUS=…, WATCHDOG=1, STOPPING=1.
* Faults never stop it (docs/operations.md, "Faults").  A store fault (locked, disk full,
  read-only, corrupt, deleted or replaced under it, unusable at start) puts the work item
  back in the queue and the worker waits a capped exponential backoff before the next try;
  scheduled jobs are retried the same way (``StoreHealth``).  A file whose ingest fails
  for any other reason waits its own backoff (``FileFailures``) while the others go on.
  Both are published in the status document.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

import structlog

from helixd import __version__, config, logs, paths
from helixd.adapters.registry import REGISTRY
from helixd.core.commits import CommitHub
from helixd.daemon.control import Control
from helixd.daemon.health import FileFailures, StoreHealth
from helixd.daemon.hookactivity import HookActivity
from helixd.daemon.jobs import fleet_target
from helixd.daemon.notify import notify
from helixd.daemon.pidlock import AlreadyRunning, PidLock
from helixd.daemon.scheduler import Scheduler
from helixd.daemon.status import StatusFile
from helixd.daemon.storeguard import StoreGuard
from helixd.daemon.sweep import sweep
from helixd.daemon.watcher import Watcher
from helixd.daemon.webface import WebFace
from helixd.daemon.worker import SCAN_DIR, Worker
from helixd.daemon.workqueue import RECONCILE, WorkQueue
from helixd.sources.gate import Gate
from helixd.store.projects import known_projects

log = structlog.get_logger("helixd")


class Daemon(WebFace):
    """The composition root: builds the parts (``DaemonState``'s attributes) and runs them
    in one TaskGroup until a signal; SIGHUP re-reads the configuration and the roots."""

    def __init__(
        self, settings: config.Settings, config_path: Path | None, lock: PidLock | None = None
    ) -> None:
        self.settings = settings
        self.prices = config.price_table(settings)
        self.config_path = config_path
        self.lock = lock
        self.stop_event = asyncio.Event()
        self.signals = 0
        self.started = time.time()
        d = settings.daemon
        self.queue = WorkQueue(d.debounce_ms / 1000)
        self.health = StoreHealth(cap=d.retry_max_seconds)
        self.files = FileFailures(d.file_retry_seconds, d.file_retry_max_seconds)
        self.guard = StoreGuard(settings.store.db, d.busy_timeout_ms, self._reopened)
        self.hook_activity = HookActivity()
        self.scheduler = Scheduler(on_failure=self._job_failed, on_success=self.health.ok)
        pairs = self._pairs()
        self.index = Gate(pairs)
        self._roots_key = [(a.name, os.fspath(r)) for a, r in pairs]  # as the index was built
        self.watcher = None
        self.status_error = None
        self.worker = Worker(
            settings.store.db,
            self.queue,
            self.guard,
            self.health,
            self.files,
            self.scheduler,
            lambda: self.index,
            self._limits,
            self._analyze,
        )
        self.worker.before_scan = self._refresh_roots
        self.hub = CommitHub()  # the writer's commits, for the live feed (and whoever listens)
        self.guard.on_open = self._opened
        self.web = None
        self._background = set()
        self.fleet = None
        self.status = StatusFile(settings.store.db)
        self.control = Control(self._request)
        self.socket = paths.socket_path()
        self._checkpointed_at = 0  # the worker's bytes read at the last checkpoint tick
        self._released_at = 0  # ... when the daemon last gave memory back at rest

    def _pairs(self) -> list[tuple[Any, Path]]:
        projects = known_projects(self.settings.store.db)
        return config.agent_roots(self.settings, REGISTRY, os.environ, Path.home(), projects)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        _raise_fd_limit()
        try:
            await self._open_store()
            self.watcher = Watcher(
                self.index, self.queue.put, self._scan_dir, lambda: self.queue.put(RECONCILE)
            )
            if self.settings.daemon.watch:
                self.watcher.start(loop)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._on_stop_signal)
            loop.add_signal_handler(signal.SIGHUP, self._reload)
            how = await self.control.start(self.socket)
            log.info("socket", path=str(self.socket), how=how)
            await self.scheduler.run_now("spool", self._drain_spool)
            self.queue.put(RECONCILE)  # catch up with everything at start
            self._schedule_jobs()
            if self.watcher.failed:
                log.warning(
                    "scanning_fallback",
                    roots=sorted(self.watcher.failed),
                    every_s=self.settings.daemon.fallback_scan_seconds,
                )
            self.scheduler.start()
            async with asyncio.TaskGroup() as tg:
                worker = tg.create_task(self.worker.run(self.stop_event))
                tg.create_task(self._status_loop())
                tg.create_task(self._watchdog_loop())
                tg.create_task(self._renormalize_when_idle())
                web = tg.create_task(self._serve_web())
                notify(f"READY=1\nSTATUS=watching {len(self.index.roots())} roots")
                log.info(
                    "started",
                    pid=os.getpid(),
                    version=__version__,
                    store=str(self.settings.store.db),
                    roots=self.index.roots(),
                )
                await self.stop_event.wait()
                notify("STOPPING=1")
                log.info("stopping")
                if self.web is not None:
                    self.web.stop()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(web), 5)
                await self._drain(worker)
                raise _Stop
        except* _Stop:
            pass
        finally:
            await self._close()
        log.info("stopped")
        return 0

    async def _drain(self, worker: asyncio.Task[None]) -> None:
        """Let the item in flight finish (its batches commit), then cancel the worker."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.worker.idle.wait(), self.settings.daemon.shutdown_seconds)
        worker.cancel()

    async def _close(self) -> None:
        await self.control.close()
        self.scheduler.shutdown()
        if self.watcher is not None:
            await asyncio.to_thread(self.watcher.stop)
        await self.hook_activity.flush(self.guard.store)
        self.hook_activity.lost_at_stop()
        await self.guard.close()
        self.status.remove()

    def _on_stop_signal(self) -> None:
        self.signals += 1
        if self.signals > 1:
            log.warning("forced_exit")
            os._exit(130)
        self.stop_event.set()

    def _reload(self) -> None:
        """SIGHUP: re-read the configuration; roots and intervals take effect at once."""
        try:
            settings = config.load(self.config_path)
            prices = config.price_table(settings)
            fleet_target(settings)
        except config.ConfigError as exc:
            log.error("reload_failed", error=str(exc))
            return
        if settings.store.db != self.settings.store.db:
            log.warning("reload_store_change_ignored", store=str(settings.store.db))
            settings = settings.model_copy(update={"store": self.settings.store})
        self.settings = settings
        self.prices = prices
        self.queue.debounce = settings.daemon.debounce_ms / 1000
        self._schedule_jobs()
        # The roots (known project directories come from the store) in a thread, never on
        # the loop; the reconcile scan queued after them reads what the new roots hold.
        task = asyncio.get_running_loop().create_task(self._reload_roots())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _reload_roots(self) -> None:
        await self._refresh_roots()
        self.queue.put(RECONCILE)
        log.info("reloaded", roots=self.index.roots())

    async def _refresh_roots(self) -> None:
        """Project directories learned since the last scan become roots of the agents that
        keep their files in each project (``store.projects``); the watches follow.  The
        roots are read, and the gate of a changed set built, in a thread: with hundreds of
        known projects a gate is thousands of roots, and a reconcile that finds the same
        roots (the usual case) pays one comparison, nothing on the loop."""
        gate = await asyncio.to_thread(self._changed_gate)
        if gate is None:
            return
        self.index = gate
        if self.watcher is not None:
            self.watcher.index = self.index
            self.watcher.refresh()

    def _changed_gate(self) -> Gate | None:
        """(in a thread) The gate of the roots now, or None when they are those in use."""
        pairs = self._pairs()
        key = [(a.name, os.fspath(r)) for a, r in pairs]
        if key == self._roots_key:
            return None
        gate = Gate(pairs)
        self._roots_key = key
        if [(a.name, r) for a, r in gate.configured] == [
            (a.name, r) for a, r in self.index.configured
        ]:
            return None
        return gate

    def _scan_dir(self, path: str) -> None:
        """A directory appeared inside a root: queue a scan of what is already in it
        (``mkdir -p`` followed by a write can beat the new watch); the worker walks it in
        a thread."""
        self.queue.put(SCAN_DIR + path)


def _raise_fd_limit() -> None:
    """Socket clients and watched directories need descriptors: lift the soft limit."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = 8192 if hard == resource.RLIM_INFINITY else min(hard, 8192)
        if soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


class _Stop(Exception):
    """Leaves the TaskGroup so that its other tasks are cancelled."""


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="helixd",
        allow_abbrev=False,
        description="Watch the agents' log directories and keep the Helix store up to date.",
    )
    parser.add_argument("--version", action="version", version=f"helixd, version {__version__}")
    parser.add_argument(
        "--once",
        action="store_true",
        help="Do one full sweep (ingest, digests, retention) and exit.",
    )
    parser.add_argument(
        "--no-evict", action="store_true", help="With --once: skip the retention pass."
    )
    parser.add_argument(
        "--config", dest="config_path", type=Path, metavar="FILE", help="TOML config file."
    )
    args = parser.parse_args(argv)
    if args.config_path is not None and args.config_path.is_dir():
        parser.error(f"argument --config: {args.config_path} is a directory")
    return args


def main(argv: list[str] | None = None) -> None:
    """Watch the agents' log directories and keep the Helix store up to date."""
    args = _arguments(argv)
    once, no_evict, config_path = args.once, args.no_evict, args.config_path
    try:
        settings = config.load(config_path)
        config.price_table(settings)
        fleet_target(settings)
    except config.ConfigError as exc:
        print(f"helixd: {exc}", file=sys.stderr)
        sys.exit(2)
    logs.configure(settings.daemon.log_level)
    os.umask(0o077)  # whatever the daemon (or SQLite for it) creates is the user's alone
    lock = PidLock(settings.store.db)
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        print(f"helixd: {exc}", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:  # the store's folder cannot hold the lock (yet): retried
        log.warning("pid_lock_unavailable", path=str(lock.path), error=str(exc))
    try:
        code = (
            sweep(settings, evict=not no_evict)
            if once
            else asyncio.run(Daemon(settings, config_path, lock).run())
        )
    finally:
        lock.release()
    sys.exit(code)


if __name__ == "__main__":
    main()

"""``helixd``: the long-running daemon, and its composition root.

The only place that wires edges together: settings -> logs -> lock -> store -> watcher ->
work queue -> one ingest worker -> scheduler.  All tasks live in one TaskGroup.

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
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import structlog

from helixd import __version__, config, logs, paths
from helixd.adapters.hooktargets import hook_agent
from helixd.adapters.registry import REGISTRY
from helixd.adapters.toolkinds import hook_activity
from helixd.core import protocol
from helixd.core.attribution import Naming
from helixd.core.commits import CommitHub
from helixd.daemon import webhost
from helixd.daemon.control import Control
from helixd.daemon.health import FileFailures, StoreHealth
from helixd.daemon.hookactivity import HookActivity, masked_row
from helixd.daemon.notify import notify, watchdog_interval
from helixd.daemon.pidlock import AlreadyRunning, PidLock
from helixd.daemon.scheduler import Scheduler
from helixd.daemon.status import StatusFile
from helixd.daemon.storeguard import StoreGuard
from helixd.daemon.watcher import Watcher
from helixd.daemon.worker import CHECK_STORE, SCAN_DIR, SESSION_END, Limits, Worker
from helixd.daemon.workqueue import RECONCILE, WorkQueue
from helixd.fleet.job import FleetJob
from helixd.fleet.target import Target, target_from
from helixd.ingest import digest, eviction
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.renormalize import renormalize
from helixd.sources.gate import NOT_CLAIMED, Gate, Refused, open_regular
from helixd.store import walcheck
from helixd.store.database import Store, now_ms
from helixd.store.faults import StoreFault, classify
from helixd.store.projects import known_projects

log = structlog.get_logger("helixd")
STATUS_EVERY = 2.0


class Daemon:
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
        self.watcher: Watcher | None = None
        self.status_error: dict[str, Any] | None = None
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
        self.web: Any = None
        self._background: set[asyncio.Task[Any]] = set()
        self.fleet: FleetJob | None = None
        self.status = StatusFile(settings.store.db)
        self.control = Control(self._request)
        self.socket = paths.socket_path()
        self._checkpointed_at = 0  # the worker's bytes read at the last checkpoint tick

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

    async def _serve_web(self) -> None:
        """The web face, once the worker and the status are running.  (Its modules are
        imported here, on the loop: imported in a worker thread, the background
        re-normalization at start failed — tests/test_renormalize.py.)"""
        if not self.settings.web.enabled:
            return
        await asyncio.sleep(0)  # the other tasks take their first step
        webhost.preload()
        if self.stop_event.is_set():
            return
        self.web = self._start_web()
        if self.web is not None:
            await self.web.serve()

    def _start_web(self) -> Any:
        """The HTTP API and dashboard (``[web]``), or None (disabled, or the port is taken:
        the daemon goes on without it)."""
        w = self.settings.web

        async def import_now() -> dict[str, Any]:
            self.queue.put(RECONCILE)
            return {"queued": ["reconcile"]}

        async def renormalize_now() -> dict[str, Any]:
            task = asyncio.create_task(self.scheduler.run_now("renormalize", self._job_renormalize))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return {"queued": ["renormalize"]}

        return webhost.start(
            enabled=w.enabled,
            host=w.host,
            port=w.port,
            allowed_hosts=w.allowed_hosts,
            store_db=self.settings.store.db,
            prices=self.prices,
            hub=self.hub,
            actions={"import": import_now, "renormalize": renormalize_now},
            status=self.snapshot,
        )

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
        async with self.guard.use() as store:
            return await self._analyze(store)

    async def _analyze(self, store: Store, max_events: int | None = None) -> int:
        """Rebuild the digests that are stale (``max_events``: only of sessions that small;
        the scheduled pass takes the big ones, since a digest costs O(session))."""
        idle_ms = int(self.settings.daemon.idle_close_minutes * 60_000)
        now = now_ms()
        ids = await store.sessions_to_analyze(now, idle_ms, max_events)
        return await digest.analyze(
            store, ids, now, idle_ms, self.prices, Naming.from_settings(self.settings.repos)
        )

    def _limits(self) -> Limits:
        s = self.settings
        return Limits(s.ingest.chunk_bytes, s.ingest.max_line_bytes, s.daemon.max_read_bytes)

    # -- faults ----------------------------------------------------------------------------
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

    async def _request(self, req: protocol.Request) -> dict[str, Any]:
        """One control-socket request (see ``docs/socket-protocol.md``)."""
        if req.op == "ping":
            return {"pong": True, "pid": os.getpid(), "version": __version__}
        if req.op == "status":
            return {"status": self.snapshot()}
        if req.op == "rescan":
            self.queue.put(RECONCILE)
            self.worker.wake.set()
            return {"queued": ["reconcile"]}
        if req.op == "flush":
            try:
                await asyncio.wait_for(self.queue.wait_idle(), req.timeout or 30)
            except TimeoutError:
                fault = self.health.fault
                why = f": {fault}" if fault else ""
                raise protocol.ProtocolError(
                    f"flush timed out; the queue is still busy{why}"
                ) from None
            return {"idle": True}
        return await self._hook(hook_agent(req.agent, req.payload, req.env), req.payload)

    async def _keep_hook_activity(
        self, agent: str | None, sid: str | None, activity: tuple[str, str | None, str, str]
    ) -> None:
        """A hook's shell command or edit, redacted, into ``hook_events`` (Tier 2: Hegel's
        hook activity per phase); the time is when it arrived.  Never fails the hook, never
        waits for a store recovery: activity met by a store fault is held and written once
        the store takes writes again (``helixd/daemon/hookactivity.py``)."""
        if agent is None or agent not in {a.name for a, _ in self.index.configured}:
            return  # an agent not read here (unknown, or disabled): nothing of it is kept
        await self.hook_activity.keep(self.guard.store, masked_row(now_ms(), agent, sid, activity))

    async def _hook(self, agent: str | None, payload: dict[str, Any]) -> dict[str, Any]:
        """An agent's hook ping: read its transcript now; a session end closes the session.
        A payload sent without naming its agent is attributed by its transcript's root.
        The path passes the gate (in a thread): one outside the roots, not a file the
        agent writes, or in another agent's root is refused (said in the reply) and a
        reconcile scan is queued instead."""
        path = protocol.transcript_path(payload)
        queued: list[str] = []
        reply: dict[str, Any] = {}
        src = None
        if path:
            try:
                src = await asyncio.to_thread(self.index.admit, path)
                if agent and src.adapter.name != agent:
                    raise Refused(path, NOT_CLAIMED, f"in {src.adapter.name}'s root, not {agent}'s")
            except Refused as exc:
                src = None
                reply["refused"] = str(exc)
                log.warning("hook_path_refused", agent=agent, path=path[:500], reason=exc.reason)
        if src is not None:
            agent = agent or src.adapter.name
            self.queue.put(src.path)
            queued.append(src.path)
        else:  # no usable path (Codex notify, Grok, Gemini): a stat scan finds what changed
            self.queue.put(RECONCILE)
            queued.append("reconcile")
        sid = protocol.session_id(payload)
        activity = hook_activity(payload)
        if activity is not None:
            await self._keep_hook_activity(agent, sid, activity)
        ended = bool(sid and agent) and protocol.session_ended(payload)
        if ended:  # applied by the worker after the transcript queued above was read
            self.queue.put(f"{SESSION_END}{agent}:{sid}")
        return {"queued": queued, "session_end": ended, **reply}

    async def _drain_spool(self) -> None:
        """Hook messages written while the daemon was down are served now, then dropped
        (read in a thread, opened like a source: a FIFO there cannot stall the start).  A
        drain that failed midway (an unreadable state folder) is taken up again by the
        next reconcile job, its file first."""
        spool = paths.spool_path()
        taken = spool.with_name(spool.name + ".draining")
        if not taken.exists():
            try:
                os.replace(spool, taken)
            except FileNotFoundError:
                return
        try:
            data = await asyncio.to_thread(_read_all, taken)
        except Refused as exc:
            log.error("spool_unreadable", path=str(taken), error=str(exc))
            data = b""
        served = 0
        for line in data.splitlines():
            with contextlib.suppress(protocol.ProtocolError):
                req = protocol.decode(line)
                if req.op == "hook":
                    await self._hook(hook_agent(req.agent, req.payload, req.env), req.payload)
                    served += 1
        taken.unlink()
        log.info("spool_drained", messages=served)

    def _scan_dir(self, path: str) -> None:
        """A directory appeared inside a root: queue a scan of what is already in it
        (``mkdir -p`` followed by a write can beat the new watch); the worker walks it in
        a thread."""
        self.queue.put(SCAN_DIR + path)

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


def _read_all(path: Path) -> bytes:
    with open_regular(path) as f:
        return f.read()


def _raise_fd_limit() -> None:
    """Socket clients and watched directories need descriptors: lift the soft limit."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = 8192 if hard == resource.RLIM_INFINITY else min(hard, 8192)
        if soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def fleet_target(settings: config.Settings) -> Target | None:
    """Where the fleet job pushes (None: no ``[fleet]`` dsn); ConfigError when the password
    file cannot be used."""
    from helixd.fleet.secret import SecretError

    try:
        return target_from(settings.fleet)
    except SecretError as exc:
        raise config.ConfigError(str(exc)) from None


class _Stop(Exception):
    """Leaves the TaskGroup so that its other tasks are cancelled."""


async def run_once(settings: config.Settings, *, evict: bool = True) -> int:
    """One full sweep (design spec §8): every file once, the digests of what changed, then
    the retention pass (unless ``evict`` is false)."""
    store = await Store.open(settings.store.db)
    try:
        projects = known_projects(settings.store.db)
        pairs = config.agent_roots(settings, REGISTRY, os.environ, Path.home(), projects)
        stats = await Ingestor(
            store,
            chunk_bytes=settings.ingest.chunk_bytes,
            max_line_bytes=settings.ingest.max_line_bytes,
        ).backfill(discover(pairs))
        idle_ms = int(settings.daemon.idle_close_minutes * 60_000)
        now = now_ms()
        built = await digest.analyze(
            store,
            await store.sessions_to_analyze(now, idle_ms),
            now,
            idle_ms,
            config.price_table(settings),
            Naming.from_settings(settings.repos),
        )
        evicted: dict[str, Any] = {}
        if evict:
            done = await eviction.sweep_evict(store, settings, config.price_table(settings), now)
            evicted = {"evicted_bytes": done.get("bytes_freed", 0), "tier1": done["usage_after"]}
        await store.checkpoint()
        log.info("sweep_done", digests=built, **evicted, **stats.as_dict())
    finally:
        await store.close()
    return 0


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
            _once(settings, evict=not no_evict)
            if once
            else asyncio.run(Daemon(settings, config_path, lock).run())
        )
    finally:
        lock.release()
    sys.exit(code)


def _once(settings: config.Settings, evict: bool = True) -> int:
    """``helixd --once``: exit 3 with one line when the store cannot be used."""
    try:
        return asyncio.run(run_once(settings, evict=evict))
    except Exception as exc:
        fault = classify(exc, settings.store.db)
        if fault is None:
            raise
        print(f"helixd: {fault}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    main()

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
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click
import structlog

from helixd import __version__, config, logs, paths
from helixd.adapters import REGISTRY
from helixd.adapters.hooktargets import hook_agent
from helixd.adapters.toolkinds import hook_activity
from helixd.core import protocol
from helixd.core.attribution import Naming
from helixd.core.redact import redact
from helixd.daemon.control import Control
from helixd.daemon.notify import notify, watchdog_interval
from helixd.daemon.pidlock import AlreadyRunning, PidLock
from helixd.daemon.scheduler import Scheduler
from helixd.daemon.status import StatusFile
from helixd.daemon.watcher import Watcher
from helixd.daemon.workqueue import RECONCILE, WorkQueue
from helixd.ingest import digest, eviction
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.ingest.renormalize import renormalize
from helixd.sources.discover import unreadable_summary
from helixd.sources.gate import NOT_CLAIMED, Gate, Refused, open_regular
from helixd.store.database import Store, now_ms

log = structlog.get_logger("helixd")
STATUS_EVERY = 2.0
SESSION_END = "\0end:"  # queue item: a session-end signal for the uid that follows
SCAN_DIR = "\0dir:"  # queue item: a directory that appeared inside a root, to scan
INLINE_DIGEST_EVENTS = 20_000  # bigger sessions are re-digested by the scheduled pass


class Daemon:
    def __init__(self, settings: config.Settings, config_path: Path | None) -> None:
        self.settings = settings
        self.prices = config.price_table(settings)
        self.config_path = config_path
        self.stop_event = asyncio.Event()
        self.signals = 0
        self.idle = asyncio.Event()
        self.idle.set()
        self.started = time.time()
        self.queue = WorkQueue(settings.daemon.debounce_ms / 1000)
        self.scheduler = Scheduler()
        self.index = Gate(self._pairs())
        self.store: Store | None = None
        self.watcher: Watcher | None = None
        self.totals: dict[str, Any] = {
            "files_read": 0,
            "bytes_read": 0,
            "events": 0,
            "malformed_lines": 0,
            "errors": 0,
            "last_error": None,
        }
        self.unreadable: dict[str, str] = {}  # path -> reason, as the last reads found
        self.status = StatusFile(settings.store.db)
        self.control = Control(self._request)
        self.socket = paths.socket_path()

    def _pairs(self) -> list[tuple[Any, Path]]:
        return config.agent_roots(self.settings, REGISTRY, os.environ, Path.home())

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        _raise_fd_limit()
        self.store = await Store.open(self.settings.store.db)
        try:
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
            await self._drain_spool()
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
                worker = tg.create_task(self._worker())
                tg.create_task(self._status_loop())
                tg.create_task(self._watchdog_loop())
                tg.create_task(self._renormalize_when_idle())
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
            await asyncio.wait_for(self.idle.wait(), self.settings.daemon.shutdown_seconds)
        worker.cancel()

    async def _close(self) -> None:
        await self.control.close()
        self.scheduler.shutdown()
        if self.watcher is not None:
            await asyncio.to_thread(self.watcher.stop)
        if self.store is not None:
            with contextlib.suppress(Exception):
                await self.store.checkpoint()
            await self.store.close()
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
        except config.ConfigError as exc:
            log.error("reload_failed", error=str(exc))
            return
        if settings.store.db != self.settings.store.db:
            log.warning("reload_store_change_ignored", store=str(settings.store.db))
            settings = settings.model_copy(update={"store": self.settings.store})
        self.settings = settings
        self.prices = prices
        self.queue.debounce = settings.daemon.debounce_ms / 1000
        self.index = Gate(self._pairs())
        if self.watcher is not None:
            self.watcher.index = self.index
            self.watcher.refresh()
        self._schedule_jobs()
        self.queue.put(RECONCILE)
        log.info("reloaded", roots=self.index.roots())

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

    async def _job_reconcile(self) -> str:
        self.queue.put(RECONCILE)
        return "queued"

    async def _job_evict(self) -> dict[str, Any]:
        """The retention pass (design spec §5); it may ask for an analysis first."""
        assert self.store is not None
        return await eviction.evict_pass(
            self.store, self.settings.retention, now_ms(), self._job_analyze
        )

    async def _job_renormalize(self) -> dict[str, Any]:
        """Low priority: rebuild, group by group, the rows an older adapter version made
        (from the stored raw lines); stops while files wait to be ingested."""
        assert self.store is not None
        stats = await renormalize(self.store, REGISTRY, should_stop=self.queue.busy)
        if stats.groups:
            await self._job_analyze()
        return stats.as_dict()

    async def _renormalize_when_idle(self) -> None:
        """Once after start, as soon as the catch-up ingest is done."""
        await asyncio.sleep(0.5)
        await self.queue.wait_idle()
        await self.scheduler.run_now("renormalize", self._job_renormalize)

    async def _job_analyze(self, max_events: int | None = None) -> int:
        """Rebuild the digests that are stale (``max_events``: only of sessions that small;
        the scheduled pass takes the big ones, since a digest costs O(session))."""
        assert self.store is not None
        idle_ms = int(self.settings.daemon.idle_close_minutes * 60_000)
        now = now_ms()
        ids = await self.store.sessions_to_analyze(now, idle_ms, max_events)
        return await digest.analyze(
            self.store, ids, now, idle_ms, self.prices, Naming.from_settings(self.settings.repos)
        )

    async def _request(self, req: protocol.Request) -> dict[str, Any]:
        """One control-socket request (see ``docs/socket-protocol.md``)."""
        if req.op == "ping":
            return {"pong": True, "pid": os.getpid(), "version": __version__}
        if req.op == "status":
            return {"status": self.snapshot()}
        if req.op == "rescan":
            self.queue.put(RECONCILE)
            return {"queued": ["reconcile"]}
        if req.op == "flush":
            try:
                await asyncio.wait_for(self.queue.wait_idle(), req.timeout or 30)
            except TimeoutError:
                raise protocol.ProtocolError("flush timed out; the queue is still busy") from None
            return {"idle": True}
        return await self._hook(hook_agent(req.agent, req.payload, req.env), req.payload)

    async def _keep_hook_activity(
        self, agent: str | None, sid: str | None, activity: tuple[str, str | None, str, str]
    ) -> None:
        """A hook's shell command or edit, redacted, into ``hook_events`` (Tier 2: Hegel's
        hook activity per phase); the time is when it arrived.  Never fails the hook."""
        if self.store is None:
            return
        tool, call_id, what, target = activity
        masked, _ = redact(target.encode("utf-8", "replace"))
        row = (now_ms(), agent, sid, what, tool, call_id, masked.decode("utf-8", "replace"))
        try:
            await self.store.save_hook_event(row)
        except Exception as exc:  # a store fault must not cost the agent its hook reply
            log.warning("hook_activity_not_kept", error=f"{type(exc).__name__}: {exc}")

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
        (read in a thread, opened like a source: a FIFO there cannot stall the start)."""
        spool = paths.spool_path()
        taken = spool.with_name(spool.name + ".draining")
        try:
            os.replace(spool, taken)
        except FileNotFoundError:
            return
        try:
            data = await asyncio.to_thread(_read_all, taken)
        except (Refused, OSError) as exc:
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

    def _claimed_below(self, path: str) -> list[str]:
        """(in a thread) The files below ``path`` some root's adapter claims (no link
        followed; each still passes the gate when it is read)."""
        found: list[str] = []
        if os.path.islink(path):  # a linked directory: its files are not read through it
            return found
        for dirpath, _, files in os.walk(path):
            for name in files:
                full = os.path.join(dirpath, name)
                if self.index.claims(full):
                    found.append(full)
        return found

    async def _worker(self) -> None:
        """The only writer: takes paths (and reconcile scans) off the queue, one at a time."""
        while not self.stop_event.is_set():
            item = await self.queue.get()
            self.idle.clear()
            try:
                await self._handle(item)
            except Exception as exc:  # one bad file or a full disk never stops the daemon
                self.totals["errors"] += 1
                self.totals["last_error"] = f"{type(exc).__name__}: {exc}"
                log.error("ingest_failed", item=item, error=str(exc), exc_info=True)
            finally:
                self.idle.set()
                self.queue.done()

    async def _handle(self, item: str) -> None:
        assert self.store is not None
        ingestor = Ingestor(
            self.store,
            chunk_bytes=self.settings.ingest.chunk_bytes,
            max_line_bytes=self.settings.ingest.max_line_bytes,
        )
        if item.startswith(SESSION_END):
            if await self.store.mark_ended(item[len(SESSION_END) :]):
                await self._job_analyze(INLINE_DIGEST_EVENTS)
            return
        if item.startswith(SCAN_DIR):
            for path in await asyncio.to_thread(self._claimed_below, item[len(SCAN_DIR) :]):
                self.queue.put(path)
            return
        if item == RECONCILE:
            scanned: list[IngestStats] = []

            async def scan() -> IngestStats:
                scanned.append(await ingestor.backfill(discover(self.index)))
                return scanned[0]

            stats = await self.scheduler.run_now("reconcile_scan", scan)
            if isinstance(stats, dict):
                self._count_summary(stats)
                self.unreadable = dict(scanned[0].skipped_paths)
                await self._job_analyze()
            return
        try:
            src = await asyncio.to_thread(self.index.admit, item)
        except Refused as exc:  # a link out of the roots, a name no adapter claims…
            self.unreadable[item] = exc.reason
            log.warning("path_refused", path=item, reason=exc.reason)
            return
        cursor = await self.store.cursor_for(src.path)
        stats = await ingestor.ingest_file(src, cursor, self.settings.daemon.max_read_bytes)
        self.unreadable.pop(src.path, None)
        self.unreadable.update(stats.skipped_paths)
        self._count_summary(stats.as_dict())
        if stats.events or stats.files_gone:
            await self._job_analyze(INLINE_DIGEST_EVENTS)  # lookups see new lines at once
        if stats.more:
            self.queue.put(item)  # come back after the others had their turn

    def _count_summary(self, summary: dict[str, Any]) -> None:
        self.totals["files_read"] += summary["files_read"]
        self.totals["bytes_read"] += summary["bytes"]
        self.totals["events"] += summary["events"]
        self.totals["malformed_lines"] += summary["malformed_lines"]

    def snapshot(self) -> dict[str, Any]:
        q = self.queue.statistics()
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.started,
            "store": str(self.settings.store.db),
            "roots": self.watcher.describe() if self.watcher else {},
            "queue": {"pending": q.pending, "in_progress": q.in_progress, "processed": q.processed},
            "ingest": {**self.totals, "unreadable": unreadable_summary(self.unreadable.items())},
            "jobs": self.scheduler.describe(),
            "updated_at": time.time(),
        }

    async def _status_loop(self) -> None:
        """Publish the daemon's state for ``helixctl status`` when it changed (nothing is
        written while idle)."""
        last: Any = None
        while True:
            snap = self.snapshot()
            key = (snap["queue"], snap["ingest"], snap["jobs"], snap["roots"])
            if key != last:
                await asyncio.to_thread(self.status.write, snap)
                notify(
                    f"STATUS=queue {snap['queue']['pending']}, "
                    f"{snap['ingest']['bytes_read']} bytes ingested"
                )
                last = key
            await asyncio.sleep(STATUS_EVERY)

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


class _Stop(Exception):
    """Leaves the TaskGroup so that its other tasks are cancelled."""


async def run_once(settings: config.Settings, *, evict: bool = True) -> int:
    """One full sweep (design spec §8): every file once, the digests of what changed, then
    the retention pass (unless ``evict`` is false)."""
    store = await Store.open(settings.store.db)
    try:
        pairs = config.agent_roots(settings, REGISTRY, os.environ, Path.home())
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


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="helixd")
@click.option(
    "--once", is_flag=True, help="Do one full sweep (ingest, digests, retention) and exit."
)
@click.option("--no-evict", is_flag=True, help="With --once: skip the retention pass.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="TOML config file.",
)
def main(once: bool, no_evict: bool, config_path: Path | None) -> None:
    """Watch the agents' log directories and keep the Helix store up to date."""
    try:
        settings = config.load(config_path)
        config.price_table(settings)
    except config.ConfigError as exc:
        click.echo(f"helixd: {exc}", err=True)
        sys.exit(2)
    logs.configure(settings.daemon.log_level)
    os.umask(0o077)  # whatever the daemon (or SQLite for it) creates is the user's alone
    lock = PidLock(settings.store.db)
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        click.echo(f"helixd: {exc}", err=True)
        sys.exit(1)
    try:
        if once:
            code = asyncio.run(run_once(settings, evict=not no_evict))
        else:
            code = asyncio.run(Daemon(settings, config_path).run())
    finally:
        lock.release()
    sys.exit(code)


if __name__ == "__main__":
    main()

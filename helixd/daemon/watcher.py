"""Filesystem events -> the work queue.  The only code that talks to watchdog.

Events are hints, never trusted: the watcher only says "look at this path" (a lexical
filter, no I/O on the loop); the worker passes it through the path gate
(``helixd.sources.gate``) in a thread, then ingest re-stats the file and compares it with
its cursor.  Rules (``../shared/notes/ecosystem.md`` §7.2):

* one recursive watch per adapter root that exists; a root that does not exist yet is
  waited for by watching its nearest existing ancestor (non-recursively), and the watches
  are rebuilt when a directory appears there;
* a project directory (an agent keeping its files in each project: ``Gate.watches``) is
  watched non-recursively, with the directories holding the agent's files; a change of a
  database's ``-wal`` file names the database;
* on Linux, watchdog's inotify layer read by one thread (``helixd.daemon.inotify``): all
  the events pending are read at once, turned into a set of paths, and handed to the loop
  with one ``loop.call_soon_threadsafe`` per read (none while a wake-up is pending);
  elsewhere watchdog's observer, whose handler (``_Handler``) wakes the loop once per burst
  of events.  Only creations, modifications, deletions and moves are listened to (the
  inotify mask: opening and closing a file, the daemon's own reads included, wakes
  nothing);
* an overflow of the kernel's event queue (events lost) queues the reconcile scan;
* a directory created inside a root is scanned at once (files written by ``mkdir -p``
  before the new watch existed are otherwise missed);
* a watch that cannot be added (inotify watch or instance limit) is logged once and the
  root falls back to the periodic reconcile scan.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import structlog
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from helixd.daemon import inotify
from helixd.sources.gate import Gate

log = structlog.get_logger("helixd.watcher")
WAL = "-wal"


# What the daemon listens to, which is also the inotify mask (watchdog builds it from the
# filter): never opens and closes — the daemon's own reads open every file it reads, and
# each append by a writer that opens, writes and closes would otherwise cost three events
# (modified, closed, and its directory modified) instead of one.
EVENTS: Final[list[type[FileSystemEvent]]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


class _Handler(FileSystemEventHandler):
    """On the observer thread: collects events and wakes the event loop once per burst
    (``call_soon_threadsafe`` writes to the loop's wake-up pipe: one per event cost the
    daemon more CPU under load than reading the appended lines).  The same event for the
    same path is delivered once per wake-up."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, callback: Callable[[str, bool, str], None]
    ) -> None:
        self.loop = loop
        self.callback = callback
        self._lock = threading.Lock()
        self._batch: dict[tuple[str, bool, str], None] = {}  # insertion-ordered set
        self.wakeups = 0  # how many times the loop was woken (tests, status)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed", "closed_no_write"):
            return
        wake = False
        with self._lock:
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if raw:
                    wake = wake or not self._batch
                    self._batch[(os.fsdecode(raw), event.is_directory, event.event_type)] = None
        if wake:
            try:
                self.loop.call_soon_threadsafe(self._deliver)
            except RuntimeError:  # the loop is closing
                return

    def _deliver(self) -> None:
        """(on the loop) Everything collected since the wake-up was asked for."""
        with self._lock:
            batch, self._batch = self._batch, {}
        self.wakeups += 1
        for path, is_dir, kind in batch:
            self.callback(path, is_dir, kind)


class Watcher:
    """Keeps watches on the roots and forwards events to ``on_path``/``on_dir``;
    ``on_root_change`` when a waited-for root appears or events were lost (overflow)."""

    def __init__(
        self,
        index: Gate,
        on_path: Callable[[str], None],
        on_dir: Callable[[str], None],
        on_root_change: Callable[[], None],
        *,
        native: bool = inotify.AVAILABLE,
    ) -> None:
        self.index = index
        self.on_path = on_path
        self.on_dir = on_dir
        self.on_root_change = on_root_change
        self.native = native  # watchdog's inotify layer read here, else watchdog's observer
        self.observer: Any = None
        self.inotify: Any = None  # inotify.InotifyWatches
        self.watched: dict[str, bool] = {}  # path -> recursive
        self.failed: set[str] = set()
        self.waiting: set[str] = set()  # roots that do not exist yet
        self.overflows = 0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.native:
            try:
                self.inotify = inotify.InotifyWatches(loop, self._changes)
            except Exception as exc:  # watchdog's inner layer changed shape: its observer
                log.warning("inotify_layer_unusable_using_observer", error=repr(exc))
                self.native = False
        if not self.native:
            self.observer = Observer()
            self._handler = _Handler(loop, self._event)
        self._schedule()
        if self.observer is not None:
            self.observer.start()

    @property
    def wakeups(self) -> int:
        """How many times the loop was woken with events (tests, status)."""
        if self.inotify is not None:
            return int(self.inotify.batches.wakeups)
        handler = getattr(self, "_handler", None)
        return handler.wakeups if handler is not None else 0

    def _changes(self, changes: list[inotify.Change], overflowed: bool) -> None:
        """(on the loop) One batch from the inotify reader."""
        if overflowed:
            self.overflows += 1
            log.warning("inotify_overflow_rescan", overflows=self.overflows)
            self.on_root_change()
        for path, is_dir, kind in changes:
            self._event(path, is_dir, kind)

    def _schedule(self) -> None:
        if self.inotify is not None:
            self.inotify.unwatch_all()
        else:
            self.observer.unschedule_all()
        self.watched.clear()
        self.waiting.clear()
        for root, recursive in self.index.watches():
            if not recursive:  # a project directory: watched when it exists, never waited for
                if os.path.isdir(root) and root not in self.watched:
                    self._watch(root, recursive=False)
                continue
            if os.path.isdir(root):
                self._watch(root, recursive=True)
                continue
            self.waiting.add(root)
            parent = Path(root).parent
            while not parent.is_dir() and parent != parent.parent:
                parent = parent.parent
            if str(parent) not in self.watched:
                self._watch(str(parent), recursive=False)

    def _watch(self, path: str, recursive: bool) -> None:
        try:
            if self.inotify is not None:
                self.inotify.watch(path, recursive)
            else:
                self.observer.schedule(
                    self._handler, path, recursive=recursive, event_filter=EVENTS
                )
            self.watched[path] = recursive
        except Exception as exc:  # OSError; or watchdog's inner layer of another shape
            if path not in self.failed:
                self.failed.add(path)
                log.warning("watch_failed_fallback_to_scan", path=path, error=str(exc))

    def refresh(self) -> None:
        """Rebuild the watches (a root appeared, or the configuration changed)."""
        if self.observer is not None or self.inotify is not None:
            self._schedule()

    def _event(self, path: str, is_dir: bool, kind: str) -> None:
        if is_dir:
            if any(root == path or root.startswith(path + os.sep) for root in self.waiting):
                self.refresh()
                self.on_root_change()
            elif kind in ("created", "moved") and self._scannable(path):
                self.on_dir(path)
            return
        if self.index.claims(path):  # lexical, no I/O: the worker's gate decides
            self.on_path(path)
        elif path.endswith(WAL) and self.index.claims(path[: -len(WAL)]):
            self.on_path(path[: -len(WAL)])  # a database's write-ahead log: read the database

    def _scannable(self, path: str) -> bool:
        """A new directory worth scanning: inside a recursively watched root, or one of the
        few directories of a project that hold an agent's files (then watched from now on);
        never any other directory of a project's tree."""
        deep = [root for root, recursive in self.watched.items() if recursive]
        if any(path.startswith(root + os.sep) for root in deep):
            return True
        if path in dict(self.index.watches()):
            self.refresh()
            return True
        return False

    def stop(self) -> None:
        if self.inotify is not None:
            self.inotify.stop()
            self.inotify = None
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)
            self.observer = None

    def describe(self) -> dict[str, Any]:
        return {
            "watched": sorted(self.watched),
            "waiting_for": sorted(self.waiting),
            "failed": sorted(self.failed),
        }

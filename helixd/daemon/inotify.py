"""Linux: the watches on watchdog's own inotify layer, read by one thread that hands the
event loop one batch of paths per read (issue 12).

watchdog's observer moves every inotify event over three threads — its inotify reader,
an emitter per watch (a 0.5 s delay queue pairing moves, an event object per event), the
observer's dispatcher — and under load (200 files appended at 20 lines/s) those threads
took about a third of the daemon's CPU.  Here the same watchdog parts do the watching
(``InotifyFD``: the inotify instance, its read and parse; ``InotifyWatchGroup``: a
recursive watch, new directories watched as they appear, watches moved with their
directory, rebuilt after an overflow, links not followed), and the group's event queue is
replaced by ``_Sink``, which turns each event into ``(path, is_dir, kind)`` in the
reader's batch.  After each read (all the events pending, up to watchdog's buffer) the
reader wakes the loop once, unless a wake-up is still pending, and lets the next events
gather for ``GATHER_SECONDS`` before it reads again.

Kinds: ``created`` (a creation or a move into a watched directory), ``modified`` (a
write), ``deleted`` (a deletion, a move out, or the move's old name).  A directory moved
within a root also reports every file below its new name as created and below its old
name as deleted (as watchdog's moved events did).  An overflow of the kernel's queue
(``IN_Q_OVERFLOW``: events were lost) is reported to the loop as such.

Where this layer is missing (macOS, BSD, Windows: ``AVAILABLE`` is false) the watcher
keeps watchdog's observer.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
from watchdog.utils import UnsupportedLibcError

try:
    from watchdog.observers.inotify import InotifyWatchGroup
    from watchdog.observers.inotify_c import InotifyConstants, InotifyFD, Mask
    from watchdog.observers.inotify_move_event_grouper import PathedInotifyEvent
except (ImportError, OSError, UnsupportedLibcError):  # not Linux
    AVAILABLE = False
else:
    AVAILABLE = True

log = structlog.get_logger("helixd.watcher")

Change = tuple[str, bool, str]  # path, is a directory, kind
MOVES_REMEMBERED: Final = 1024  # moves out whose other half may still come
# After a read, the reader lets events gather this long before reading again: a read that
# follows quiet time wakes the loop at once, a stream of events (an agent writing, 200 busy
# files) is read and handed over at most ~200 times a second, far under the work queue's
# debounce (20 ms).  Without it a free loop was woken for every two or three events.
GATHER_SECONDS: Final = 0.005
READ_RETRY_SECONDS: Final = 1.0  # after a failed read (events may be lost: a rescan is run)


def _mask() -> int:
    c = InotifyConstants
    # Never opens, closes or attribute changes: the daemon's own reads open every file, and
    # watchdog's observer read IN_ATTRIB and dropped it.
    return int(
        c.IN_MODIFY | c.IN_MOVED_FROM | c.IN_MOVED_TO | c.IN_CREATE | c.IN_DELETE | c.IN_DELETE_SELF
    )


class Batches:
    """The reader thread's batch of changes, handed to the loop once per wake-up."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, deliver: Callable[[list[Change], bool], None]
    ) -> None:
        self.loop = loop
        self.deliver = deliver
        self._lock = threading.Lock()
        self._changes: dict[Change, None] = {}  # insertion-ordered set
        self._overflowed = False
        self._pending = False  # a wake-up asked for and not yet run
        self.wakeups = 0  # how many times the loop was woken (tests, status)
        self.reads = 0  # inotify reads that brought events

    def add(self, change: Change) -> None:
        with self._lock:
            self._changes[change] = None

    def overflow(self) -> None:
        with self._lock:
            self._overflowed = True

    def after_read(self) -> None:
        """(on the reader thread) One read handled: wake the loop if there is something
        and no wake-up is pending."""
        self.reads += 1
        with self._lock:
            if self._pending or not (self._changes or self._overflowed):
                return
            self._pending = True
        try:
            self.loop.call_soon_threadsafe(self._run)
        except RuntimeError:  # the loop is closing
            return

    def _run(self) -> None:
        """(on the loop) Everything collected since the wake-up was asked for."""
        with self._lock:
            changes, self._changes = list(self._changes), {}
            overflowed, self._overflowed = self._overflowed, False
            self._pending = False
        self.wakeups += 1
        self.deliver(changes, overflowed)


if AVAILABLE:

    class _Reader(InotifyFD):
        """watchdog's inotify instance and reader thread, with one hand-off per read."""

        def __init__(self, batches: Batches) -> None:
            super().__init__()
            self.name = "helix-inotify"
            self.batches = batches

        def run(self) -> None:
            while self.should_keep_running():
                try:
                    events = self.read_events()
                except Exception as exc:  # never a silent end: say so, rescan, go on
                    if not self.should_keep_running():
                        return
                    log.error("inotify_read_failed", error=repr(exc))
                    self.batches.overflow()  # the loop runs the reconcile scan
                    self.batches.after_read()
                    time.sleep(READ_RETRY_SECONDS)
                    continue
                for event in events:
                    try:
                        self.handle_event(event)
                    except Exception as exc:  # one odd event never stops the watching
                        log.warning("inotify_event_failed", event=repr(event), error=str(exc))
                self.batches.after_read()
                if events:
                    time.sleep(GATHER_SECONDS)

    class _Sink:
        """Stands in for the watch group's move-event queue (read by an emitter thread in
        watchdog's observer): adds each event's change to the batch at once, on the
        reader thread, under the group's lock.  Remembers moves out by cookie so that the
        group can move its watches with a directory renamed inside the root."""

        def __init__(self, batches: Batches, root: bytes, recursive: bool) -> None:
            self.batches = batches
            self.root = root
            self.recursive = recursive
            self._moved_from: OrderedDict[int, PathedInotifyEvent] = OrderedDict()

        def put_event(self, event: PathedInotifyEvent) -> None:
            ev, raw = event.ev, event.path
            is_dir = bool(ev.is_directory)
            path = os.fsdecode(raw)
            add = self.batches.add
            if ev.is_moved_from:
                self._moved_from[ev.cookie] = event
                if len(self._moved_from) > MOVES_REMEMBERED:
                    self._moved_from.popitem(last=False)
                add((path, is_dir, "deleted"))
            elif ev.is_moved_to:
                source = self._moved_from.pop(ev.cookie, None)
                add((path, is_dir, "created"))
                if is_dir and self.recursive and source is not None:
                    self._moved_below(os.fsdecode(source.path), path)
            elif ev.is_create:
                add((path, is_dir, "created"))
            elif ev.is_delete:
                add((path, is_dir, "deleted"))
            elif ev.is_delete_self:
                if raw == self.root:  # a directory below: its parent reported it
                    add((path, True, "deleted"))
            elif ev.is_modify and not is_dir:
                add((path, False, "modified"))

        def _moved_below(self, src: str, dest: str) -> None:
            """A directory renamed inside the root: its files have new names (links not
            followed; the directory's own ``created`` has it scanned as well)."""
            for top, _dirs, files in os.walk(dest):
                rel = os.path.relpath(top, dest)
                old = src if rel == "." else os.path.join(src, rel)
                for name in files:
                    self.batches.add((os.path.join(old, name), False, "deleted"))
                    self.batches.add((os.path.join(top, name), False, "created"))

        def get_queued_moved_from_event(self, cookie: int) -> PathedInotifyEvent | None:
            return self._moved_from.get(cookie)

        def discard_pending_events(self) -> None:
            self._moved_from.clear()

        def read_event(self) -> None:
            return None

        def close(self) -> None:
            self._moved_from.clear()

    @dataclass
    class _Group(InotifyWatchGroup):
        """watchdog's watch group with ``_Sink`` for its queue, and an overflow that is
        also reported to the loop (watchdog rebuilds the watches; what changed meanwhile
        is for the reconcile scan to find)."""

        sink: Any = field(default=None, kw_only=True)

        def __post_init__(self) -> None:
            self._move_event_grouper = self.sink
            super().__post_init__()

        def on_queue_overflow(self) -> None:
            super().on_queue_overflow()
            self.sink.batches.overflow()


class InotifyWatches:
    """The watches of one watcher: one inotify instance, one reader thread."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, deliver: Callable[[list[Change], bool], None]
    ) -> None:
        self.batches = Batches(loop, deliver)
        self._reader = _Reader(self.batches)
        self._groups: dict[tuple[str, bool], Any] = {}
        self._reader.start()

    def watch(self, path: str, recursive: bool) -> None:
        """Watch a directory (and, recursively, every directory below it, as they
        appear).  Raises OSError when the directory cannot be watched (gone, or an
        inotify limit)."""
        raw = os.fsencode(path)
        sink = _Sink(self.batches, raw, recursive)
        group = _Group(
            self._reader, raw, event_mask=Mask(_mask()), is_recursive=recursive, sink=sink
        )
        self._groups[(path, recursive)] = group

    def unwatch_all(self) -> None:
        groups, self._groups = list(self._groups.values()), {}
        for group in groups:
            group.deactivate()

    def stop(self) -> None:
        self.unwatch_all()
        self._reader.stop()
        self._reader.join(timeout=5)

"""What the daemon holds: the attributes its parts share, declared once.

The daemon is one object built in layers, each a module with one job, each layer a class
that builds on the one below (``state`` <- ``storewatch`` <- ``statusloop`` <- ``dispatch`` <-
``jobs`` <- ``webface`` <- ``app.Daemon``).  ``app.Daemon.__init__`` assigns every attribute
declared here; nothing here does any work.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helixd import config
from helixd.core.commits import CommitHub
from helixd.daemon.control import Control
from helixd.daemon.health import FileFailures, StoreHealth
from helixd.daemon.hookactivity import HookActivity
from helixd.daemon.pidlock import PidLock
from helixd.daemon.scheduler import Scheduler
from helixd.daemon.status import StatusFile
from helixd.daemon.storeguard import StoreGuard
from helixd.daemon.watcher import Watcher
from helixd.daemon.worker import Worker
from helixd.daemon.workqueue import WorkQueue
from helixd.fleet.job import FleetJob
from helixd.sources.gate import Gate


class DaemonState:
    """The daemon's attributes (assigned by ``app.Daemon.__init__``)."""

    settings: config.Settings
    prices: Any
    config_path: Path | None
    lock: PidLock | None
    stop_event: asyncio.Event
    signals: int
    started: float
    queue: WorkQueue
    health: StoreHealth
    files: FileFailures
    guard: StoreGuard
    hook_activity: HookActivity
    scheduler: Scheduler
    index: Gate
    _roots_key: list[tuple[str, str]]
    watcher: Watcher | None
    status_error: dict[str, Any] | None
    worker: Worker
    hub: CommitHub
    web: Any
    _background: set[asyncio.Task[Any]]
    fleet: FleetJob | None
    status: StatusFile
    control: Control
    socket: Path
    _checkpointed_at: int
    _released_at: int

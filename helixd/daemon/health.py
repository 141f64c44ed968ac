"""What keeps failing in the daemon, and when to try again: the store's condition as its
jobs meet it (``StoreHealth``) and the source files whose ingest fails (``FileFailures``).

Both back off the same way (``Backoff``: capped exponential) and both are published in the
status document (``helixctl status``, ``helixctl doctor``).  A fault is logged when it
starts, when its kind changes and when it clears — not on every retry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from helixd.store.faults import StoreFault

log = structlog.get_logger("helixd.health")

LOCKED_CAP: Final = 2.0  # a lock is short-lived: look again soon (each try waits busy_timeout)
FILES_SHOWN: Final = 50


@dataclass(slots=True)
class Backoff:
    """Capped exponential delays: ``base``, ``2 base``, ``4 base`` … up to ``cap``."""

    base: float
    cap: float
    failures: int = 0

    def fail(self, cap: float | None = None) -> float:
        """Count one more failure; the delay before the next try."""
        self.failures += 1
        limit = self.cap if cap is None else min(cap, self.cap)
        return float(min(limit, self.base * 2 ** min(self.failures - 1, 32)))


@dataclass(slots=True)
class _StoreFailing:
    fault: StoreFault
    since: float
    backoff: Backoff
    retry_at: float = 0.0


class StoreHealth:
    """The store faults the daemon's jobs (``who``: ingest, analyze, evict …) are meeting.

    ``failed`` records one and returns how long that job should wait before it tries
    again; ``ok`` clears the job's entry.  The store is healthy when no job is failing."""

    def __init__(self, base: float = 0.5, cap: float = 10.0) -> None:
        self.base, self.cap = base, cap
        self.failing: dict[str, _StoreFailing] = {}
        self.recoveries = 0
        self.last_recovered_at: float | None = None

    def failed(self, who: str, fault: StoreFault) -> float:
        entry = self.failing.get(who)
        now = time.time()
        if entry is None or entry.fault.kind != fault.kind:
            log.warning(
                "store_fault",
                job=who,
                kind=fault.kind,
                error=fault.detail,
                fix=fault.fix,
                store=str(fault.path),
            )
            entry = _StoreFailing(fault, now, Backoff(self.base, self.cap))
            self.failing[who] = entry
        entry.fault = fault
        delay = entry.backoff.fail(LOCKED_CAP if fault.kind == "locked" else None)
        entry.retry_at = now + delay
        return delay

    def ok(self, who: str) -> None:
        entry = self.failing.pop(who, None)
        if entry is None:
            return
        self.recoveries += 1
        self.last_recovered_at = time.time()
        log.info(
            "store_recovered",
            job=who,
            kind=entry.fault.kind,
            after_s=round(self.last_recovered_at - entry.since, 1),
            retries=entry.backoff.failures,
        )

    @property
    def fault(self) -> StoreFault | None:
        """The most recent condition met (None: the store works)."""
        if not self.failing:
            return None
        return max(self.failing.values(), key=lambda e: e.retry_at).fault

    def describe(self) -> dict[str, Any] | None:
        if not self.failing:
            return None
        latest = max(self.failing.values(), key=lambda e: e.retry_at)
        return {
            **latest.fault.as_dict(),
            "since": min(e.since for e in self.failing.values()),
            "retries": sum(e.backoff.failures for e in self.failing.values()),
            "next_retry_at": min(e.retry_at for e in self.failing.values()),
            "jobs": {
                who: {"kind": e.fault.kind, "retries": e.backoff.failures}
                for who, e in sorted(self.failing.items())
            },
        }


@dataclass(slots=True)
class _FileFailing:
    error: str
    since: float
    backoff: Backoff
    retry_at: float = 0.0
    last_at: float = field(default_factory=time.time)


class FileFailures:
    """Source files whose ingest keeps failing (a bad file, not the store): each waits its
    own capped exponential backoff while the other files go on."""

    def __init__(self, base: float = 5.0, cap: float = 600.0) -> None:
        self.base, self.cap = base, cap
        self.entries: dict[str, _FileFailing] = {}

    def failed(self, path: str, error: str) -> float:
        """Record a failure of ``path``; seconds until it is tried again."""
        now = time.time()
        entry = self.entries.get(path)
        if entry is None:
            entry = self.entries[path] = _FileFailing(error, now, Backoff(self.base, self.cap))
        entry.error, entry.last_at = error, now
        delay = entry.backoff.fail()
        entry.retry_at = now + delay
        log.warning(
            "file_failing",
            path=path,
            error=error,
            failures=entry.backoff.failures,
            retry_in_s=round(delay, 1),
        )
        return delay

    def succeeded(self, path: str) -> None:
        entry = self.entries.pop(path, None)
        if entry is not None:
            log.info("file_recovered", path=path, failures=entry.backoff.failures)

    def wait_for(self, path: str) -> float:
        """Seconds ``path`` must still wait before its next try (0: go ahead)."""
        entry = self.entries.get(path)
        return max(entry.retry_at - time.time(), 0.0) if entry else 0.0

    def describe(self) -> dict[str, Any]:
        shown = sorted(self.entries.items(), key=lambda kv: kv[1].since)[:FILES_SHOWN]
        return {
            "count": len(self.entries),
            "files": [
                {
                    "path": path,
                    "error": e.error,
                    "failures": e.backoff.failures,
                    "since": e.since,
                    "last_failed_at": e.last_at,
                    "next_retry_at": e.retry_at,
                }
                for path, e in shown
            ],
        }

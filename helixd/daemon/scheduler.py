"""Time: APScheduler 3.x (``AsyncIOScheduler``) wiring only.

Each job is an async callable; the scheduler runs it on the loop with ``coalesce`` and
``max_instances=1`` (a slow pass is never run twice at once, missed runs collapse into one).
A job that raises is logged and recorded, and simply runs again at its next time: it never
takes the daemon down.  ``results`` keeps the last run of each job for ``helixctl status``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = structlog.get_logger("helixd.scheduler")

Job = Callable[[], Awaitable[Any]]


@dataclass(slots=True)
class JobResult:
    last_run: float | None = None
    seconds: float | None = None
    ok: bool | None = None
    result: Any = None
    error: str | None = None
    runs: int = 0
    failures: int = 0


_FIELDS = ("last_run", "seconds", "ok", "result", "error", "runs", "failures")


class Scheduler:
    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
        )
        self.results: dict[str, JobResult] = {}

    def add(self, name: str, job: Job, seconds: float) -> None:
        """Run ``job`` every ``seconds`` (the first run after one interval)."""
        self.results.setdefault(name, JobResult())
        self._scheduler.add_job(
            self._guarded(name, job),
            "interval",
            seconds=seconds,
            id=name,
            name=name,
            replace_existing=True,
        )

    def reschedule(self, name: str, seconds: float) -> None:
        self._scheduler.reschedule_job(name, trigger="interval", seconds=seconds)

    def _guarded(self, name: str, job: Job) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await self.run_now(name, job)

        return run

    async def run_now(self, name: str, job: Job) -> Any:
        """Run a job immediately, recording its result like a scheduled run."""
        res = self.results.setdefault(name, JobResult())
        started = time.monotonic()
        res.last_run = time.time()
        res.runs += 1
        try:
            result = await job()
            # Keep a small, JSON-ready summary (never a live object with big collections).
            res.result = result.as_dict() if hasattr(result, "as_dict") else result
            res.ok, res.error = True, None
        except Exception as exc:  # a job never kills the daemon
            res.ok, res.error = False, f"{type(exc).__name__}: {exc}"
            res.failures += 1
            log.error("job_failed", job=name, error=res.error, exc_info=True)
        finally:
            res.seconds = round(time.monotonic() - started, 3)
        return res.result

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def describe(self) -> dict[str, Any]:
        return {name: {f: getattr(r, f) for f in _FIELDS} for name, r in self.results.items()}

"""Time: APScheduler 3.x (``AsyncIOScheduler``) wiring only.

Each job is an async callable; the scheduler runs it on the loop with ``coalesce`` and
``max_instances=1`` (a slow pass is never run twice at once, missed runs collapse into one).
A job that raises is logged and recorded, and runs again at its next time: it never takes
the daemon down.  When ``on_failure`` gives a delay for the error (a store fault: the daemon
decides), the job is also retried after that delay, so a pass that met a locked or full
store runs again as soon as the backoff allows rather than an interval later.
``results`` keeps the last run of each job for ``helixctl status``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = structlog.get_logger("helixd.scheduler")

Job = Callable[[], Awaitable[Any]]
# (job name, error) -> seconds until a retry, or None: wait for the next scheduled run.
OnFailure = Callable[[str, BaseException], float | None]


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
    def __init__(
        self, on_failure: OnFailure | None = None, on_success: Callable[[str], None] | None = None
    ) -> None:
        self._scheduler = AsyncIOScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
        )
        self.results: dict[str, JobResult] = {}
        self.on_failure = on_failure
        self.on_success = on_success

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

    async def run_now(self, name: str, job: Job, *, reraise: bool = False) -> Any:
        """Run a job immediately, recording its result like a scheduled run; returns what
        the job returned (None when it failed).  ``reraise``: the caller handles a failure
        itself (it is recorded, not retried here)."""
        res = self.results.setdefault(name, JobResult())
        started = time.monotonic()
        res.last_run = time.time()
        res.runs += 1
        result = None
        try:
            result = await job()
            # Keep a small, JSON-ready summary (never a live object with big collections).
            res.result = result.as_dict() if hasattr(result, "as_dict") else result
            res.ok, res.error = True, None
        except Exception as exc:  # a job never kills the daemon
            res.ok, res.error = False, f"{type(exc).__name__}: {exc}"
            res.failures += 1
            if reraise:
                raise
            self._failed(name, job, exc)
        else:
            if self.on_success is not None and not reraise:
                self.on_success(name)
        finally:
            res.seconds = round(time.monotonic() - started, 3)
        return result

    def _failed(self, name: str, job: Job, exc: Exception) -> None:
        delay = self.on_failure(name, exc) if self.on_failure is not None else None
        if delay is None:
            log.error("job_failed", job=name, error=f"{type(exc).__name__}: {exc}", exc_info=exc)
            return
        log.info("job_retry", job=name, error=f"{type(exc).__name__}: {exc}", in_s=delay)
        if self._scheduler.running:
            self._scheduler.add_job(
                self._guarded(name, job),
                "date",
                run_date=datetime.now().astimezone() + timedelta(seconds=delay),
                id=f"{name}:retry",
                name=f"{name}:retry",
                replace_existing=True,
            )

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def describe(self) -> dict[str, Any]:
        return {name: {f: getattr(r, f) for f in _FIELDS} for name, r in self.results.items()}

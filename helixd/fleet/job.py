"""The daemon's fleet job: a push every ``fleet.push_seconds``; after a failed push the next
one waits longer (``backoff.retry_delay``: doubling up to ``fleet.retry_max_seconds``), and
the first success brings the interval back.  Meanwhile the outbox keeps every change.

A daemon without ``[fleet]`` never loads psycopg: this module imports the push lazily."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import structlog

from helixd.fleet.backoff import retry_delay
from helixd.fleet.target import Target
from helixd.store.database import Store

log = structlog.get_logger("helixd.fleet")


class FleetJob:
    """``await job(store)`` pushes once.  ``reschedule(seconds)`` sets the interval until the next
    run (the scheduler's), so that a run is always a real attempt."""

    def __init__(
        self,
        target: Target,
        version: str,
        every: float,
        retry_max: float,
        reschedule: Callable[[float], None],
    ) -> None:
        self.target = target
        self.version = version
        self.every = every
        self.retry_max = retry_max
        self.reschedule = reschedule
        self.failures = 0
        self.retry_in: float | None = None

    async def __call__(self, store: Store) -> dict[str, Any]:
        from helixd.fleet.push import PushError, push  # psycopg: loaded when the job first runs

        try:
            result = await push(store, self.target, self.version)
        except PushError as exc:
            self.failures += 1
            self.retry_in = round(
                retry_delay(self.failures, self.every, self.retry_max, random.random()), 1
            )
            self.reschedule(self.retry_in)
            # The scheduler logs it (job_failed) and shows it in `status` until a push works.
            raise PushError(
                f"{exc} (failure {self.failures} in a row; next try in {self.retry_in} s)"
            ) from None
        if self.failures:
            log.info("fleet_push_recovered", after_failures=self.failures)
            self.reschedule(self.every)
        self.failures, self.retry_in = 0, None
        if result.entries or result.seeded or result.migrations:
            log.info("fleet_pushed", **result.as_dict())
        return result.as_dict()

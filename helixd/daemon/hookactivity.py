"""Hook activity (a shell command or an edit an agent's hook reported) on its way into
``hook_events``: masked whole, then cut, then written.  A hook reply never waits for the
store, so activity that meets a store fault (or a store being recovered) is held here, in
order and already masked, and written ahead of the next activity once the store takes
writes again.  The hold is bounded (``HOLD_MAX`` rows, the oldest dropped and counted past
that) and lives as long as the daemon: a daemon stopped during a fault loses what it held,
which the log says."""

from __future__ import annotations

from collections import deque
from typing import Any, Final, Protocol

import structlog

from helixd.adapters.toolkinds import SUMMARY_CHARS
from helixd.core.redact import redact

log = structlog.get_logger("helixd.hooks")

HOLD_MAX: Final = 10_000

Row = tuple[Any, ...]  # (at, agent, native id, what, tool, call id, target)


class HookEventSink(Protocol):
    async def save_hook_event(self, row: Row) -> None: ...


def masked_row(
    at_ms: int, agent: str, sid: str | None, activity: tuple[str, str | None, str, str]
) -> Row:
    """The row kept for one activity: its target masked whole, then cut (a cut first could
    leave part of a secret unmatched)."""
    tool, call_id, what, target = activity
    masked, _ = redact(target.encode("utf-8", "replace"))
    return (
        at_ms,
        agent,
        sid,
        what,
        tool,
        call_id,
        masked.decode("utf-8", "replace")[:SUMMARY_CHARS],
    )


class HookActivity:
    """Writes activity rows, holding them across store faults."""

    def __init__(self) -> None:
        self.held: deque[Row] = deque()
        self.dropped = 0

    async def keep(self, store: HookEventSink | None, row: Row) -> None:
        """Write ``row`` after whatever is held; hold it (and what is left) when the store is
        away or fails.  Never raises: a store fault must not cost the agent its hook reply."""
        self._hold(row)
        await self.flush(store)

    async def flush(self, store: HookEventSink | None) -> None:
        """Write what is held, oldest first, until the store fails again."""
        while store is not None and self.held:
            try:
                await store.save_hook_event(self.held[0])
            except Exception as exc:
                log.warning(
                    "hook_activity_held", held=len(self.held), error=f"{type(exc).__name__}: {exc}"
                )
                return
            self.held.popleft()

    def _hold(self, row: Row) -> None:
        if len(self.held) >= HOLD_MAX:
            self.held.popleft()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.error("hook_activity_dropped", dropped=self.dropped, held=len(self.held))
        self.held.append(row)

    def lost_at_stop(self) -> None:
        if self.held:
            log.warning("hook_activity_lost_at_stop", rows=len(self.held))

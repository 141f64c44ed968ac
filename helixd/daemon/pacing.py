"""When the daemon may rebuild digests again while files are busy.

A digest rebuild reads every changed session whole, so under a steady stream of appends
its cost grows with the sessions, not with the new lines: rebuilt after every read it ends
up taking most of the worker's time and the reads fall behind.  ``DigestPace`` spaces the
rebuilds by their own cost — after one that took ``d`` seconds the next waits at least
``SHARE_INVERSE * d`` (so digests take at most about a tenth of the worker's time), and
never less than ``EVERY`` — while a rebuild after a quiet spell runs at once.  While
files wait, a rebuild takes at most ``PART`` of the stale sessions (``DigestTurns``), so
that no read waits behind a long one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

EVERY: Final = 1.0  # seconds between rebuilds at least, however cheap
SHARE_INVERSE: Final = 10  # a rebuild's cost times this: the wait before the next
PART: Final = 8  # stale sessions rebuilt at a time while files wait to be read


@dataclass(slots=True)
class DigestPace:
    last_start: float = float("-inf")  # monotonic time the last rebuild started
    last_cost: float = 0.0  # how long it took (seconds)

    def wait(self, now: float) -> float:
        """Seconds until the next rebuild may start (0: now)."""
        gap = max(EVERY, SHARE_INVERSE * self.last_cost)
        return max(self.last_start + gap - now, 0.0)

    def ran(self, start: float, end: float) -> None:
        """A rebuild ran from ``start`` to ``end`` (monotonic seconds)."""
        self.last_start, self.last_cost = start, max(end - start, 0.0)


@dataclass(slots=True)
class DigestTurns:
    """Which of the stale sessions an inline rebuild takes while files wait to be read: at
    most ``part`` (``None``: all), in id order from after the last one taken, round and
    round — a rebuild of every busy session at once reads them all whole, and the reads of
    every file wait behind it (200 sessions of 1 000 events: about a second); in parts the
    reads go on between them, and every busy session still has its turn.  ``left``: how
    many stale sessions the last pick did not take."""

    last: int = -1  # the highest id the last pick took
    left: int = 0

    def pick(self, ids: list[int], part: int | None) -> list[int]:
        if part is None or len(ids) <= part:
            self.left = 0
            return ids
        ordered = sorted(ids)
        after = [i for i in ordered if i > self.last]
        taken = (after + [i for i in ordered if i <= self.last])[:part]
        self.last = taken[-1]  # the last taken in turn (after a wrap: one from the start)
        self.left = len(ids) - len(taken)
        return taken


Pick = Callable[[list[int]], list[int]]  # which of the stale sessions to rebuild now


async def in_turns(
    analyze: Callable[[Pick], Awaitable[int]], part: Callable[[], int | None]
) -> int:
    """One round over the sessions stale when it starts, in parts: ``analyze(pick)`` (it
    rebuilds those ``pick`` takes of the stale ones and says how many) again until every
    session stale at the start has been rebuilt or is no longer stale (the worker's inline
    rebuilds take some meanwhile), ``part()`` sessions at a time (``None``: the rest at
    once).  Busy sessions go stale again as soon as they are rebuilt, so "until none is
    stale" would never end; and counting rebuilds instead of tracking the first ones let
    sessions that went stale meanwhile, ahead in id order, use up the round, so that a
    session behind them was passed over on every pass.  Returns how many were rebuilt."""
    turns = DigestTurns()
    first: set[int] | None = None  # stale at the start and not rebuilt yet

    def pick(ids: list[int]) -> list[int]:
        nonlocal first
        if first is None:
            first = set(ids)
        first.intersection_update(ids)  # those rebuilt meanwhile are not stale now
        taken = turns.pick(sorted(first), part())
        first.difference_update(taken)
        return taken

    done = await analyze(pick)
    while first:
        done += await analyze(pick)
    return done

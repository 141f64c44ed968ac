"""What the status line shows: one session's spend (with its subagents), today's spend across
every agent, and the burn rate (the spend of the last hour).

Light on purpose (the status line runs after every assistant message, whole process in a few
tens of milliseconds): no dataclasses, no datetime unless a zone is given."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, NamedTuple

from helixd.core.usage_report import priced, priced_usd
from helixd.store import now_queries

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from datetime import tzinfo
    from typing import Any

    from helixd.core.pricing import Prices

BUCKET_MS = 900_000  # the usage rollup's 15-minute buckets


class Spend(NamedTuple):
    usd: float
    tokens: int


class Now(NamedTuple):
    session: Spend | None  # None: the session is not in the store (yet)
    today: Spend
    last_hour: Spend  # the current 15-minute bucket and the three before it


def _spend(rows: Iterable[Sequence[Any]], prices: Prices) -> Spend:
    """Priced as the reports' default ``--cost auto`` prices (the dollars agents recorded,
    the table for the rest)."""
    usd, tokens = 0.0, 0
    for model, *c in rows:
        usd += priced_usd(prices, model, priced(c, model, prices, "auto"))
        tokens += sum(c[:5])
    return Spend(usd, tokens)


def local_midnight_ms(now_ms: int, tz: tzinfo | None = None) -> int:
    """The epoch ms of the local midnight that starts ``now_ms``'s day in ``tz`` (None:
    the machine's zone)."""
    if tz is None:
        t = time.localtime(now_ms / 1000)
        return int(time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1)) * 1000)
    from datetime import datetime

    day = datetime.fromtimestamp(now_ms / 1000, tz)
    return int(day.replace(hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)


def now(
    con: sqlite3.Connection,
    session_id: str | None,
    now_ms: int,
    prices: Prices,
    tz: tzinfo | None = None,
) -> Now:
    """The status line's figures at ``now_ms``."""
    session = None
    if session_id and now_queries.known_session(con, session_id):
        session = _spend(now_queries.session_usage(con, session_id), prices)
    midnight = local_midnight_ms(now_ms, tz)
    return Now(
        session=session,
        today=_spend(now_queries.usage_since(con, midnight // BUCKET_MS), prices),
        last_hour=_spend(now_queries.usage_since(con, now_ms // BUCKET_MS - 3), prices),
    )

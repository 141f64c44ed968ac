"""Token usage and cost: per day, week, month or session (ccusage's JSON shapes), and every
session and file of a repo in a time range, optionally per phase (the Hegel attribution).

Reports read the usage rollups (15-minute buckets, and hours for whole-hour zones), never the
per-response rows, so they cost a few hundred rows whatever the history; ``tokens`` reads the
per-response rows of its range for exact boundaries.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from datetime import date, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from helixd.core.phase_usage import attribute
from helixd.core.pricing import PriceBook
from helixd.core.timeparse import iso
from helixd.core.toolnames import SHELL_TOOLS
from helixd.core.usage_report import (
    BUCKET_MS,
    day_start_ms,
    offset_segments,
    period_report,
    session_report,
    usable_buckets,
    with_undated,
)
from helixd.store import queries

if TYPE_CHECKING:
    from helixd.core.pricing import Prices

PERIODS: Final = ("daily", "weekly", "monthly", "session")
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


class ReportQuery(NamedTuple):
    """``period`` of ``PERIODS``; ``first_day``/``last_day`` inclusive, local days in ``tz``
    (None: the system's zone); ``week_start`` an index of ``WEEKDAYS``; ``cost`` one of
    ``COST_MODES`` (the dollars the agents recorded, or the price table's)."""

    period: str
    first_day: date | None = None
    last_day: date | None = None
    tz: tzinfo | None = None
    agents: Sequence[str] = ()
    repo: str | None = None
    model: str | None = None
    week_start: int = 6
    cost: str = "auto"


def report(
    con: sqlite3.Connection, q: ReportQuery, prices: Prices, now_ms: int | None = None
) -> dict[str, Any]:
    """The report document: ``{daily|weekly|monthly|sessions: [...], totals: {...}}``,
    ``undated`` (usage whose time is unknown, in no period) when there is any, and ``prices``
    (their source and date, and the source of each model's price)."""
    if q.period not in PERIODS:
        raise ValueError(f"unknown period {q.period!r} (one of {', '.join(PERIODS)})")
    lo = day_start_ms(q.first_day, q.tz) // BUCKET_MS if q.first_day else None
    hi = day_start_ms(q.last_day + timedelta(days=1), q.tz) // BUCKET_MS if q.last_day else None
    doc = priced_by(_report(con, q, prices, now_ms, lo, hi), prices)
    doc["costMode"] = q.cost
    return doc


def priced_by(doc: dict[str, Any], prices: Prices) -> dict[str, Any]:
    """``doc`` with ``prices``: the source and date of the prices, and which source priced
    each model in it (None: no price known, counted as 0)."""
    if isinstance(prices, PriceBook):
        models = {b["modelName"] for e in _entries(doc) for b in e["modelBreakdowns"]}
        doc["prices"] = prices.describe(models)
    return doc


def _entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = [e for key in (*PERIODS, "sessions") for e in doc.get(key, [])]
    return out + ([doc["undated"]] if "undated" in doc else [])


def _report(
    con: sqlite3.Connection,
    q: ReportQuery,
    prices: Prices,
    now_ms: int | None,
    lo: int | None,
    hi: int | None,
) -> dict[str, Any]:
    if q.period == "session":
        rows = queries.usage_by_session(con, lo, hi, q.agents, q.repo, q.model)
        return session_report(rows, prices, iso, q.cost)
    # Days only for times that can be true: a response with no time, or one before 2000 or
    # in the future (an unparseable timestamp in an older store), is in no day; it is
    # reported apart (``undated``) rather than as a 1970-01-01 row.
    floor, ceiling = usable_buckets(int(time.time() * 1000) if now_ms is None else now_ms)
    lo, hi = max(lo or floor, floor), min(hi or ceiling, ceiling)
    undated = queries.usage_outside(con, floor, ceiling, q.agents, q.repo, q.model)
    if lo >= hi:
        doc = period_report([], q.period, prices, q.week_start, q.cost)
        return with_undated(doc, undated, prices, q.cost)
    span = queries.bucket_span(con)
    first, last = span or (0, 0)
    segments = offset_segments(max(first, lo or 0), min(last, hi or last), q.tz)
    hourly = not q.repo and all(off % 3600 == 0 for _, off in segments)
    hourly = hourly and all(b is None or b % 4 == 0 for b in (lo, hi))
    if hourly:
        rows = queries.usage_by_day_hourly(con, segments, lo, hi, q.agents, q.model)
    else:
        rows = queries.usage_by_day(con, segments, lo, hi, q.agents, q.repo, q.model)
    doc = period_report(rows, q.period, prices, q.week_start, q.cost)
    return with_undated(doc, undated, prices, q.cost)


def tokens(
    con: sqlite3.Connection,
    repo: str,
    since: int,
    until: int | None,
    prices: Prices,
    agents: Sequence[str] = (),
    transitions: Sequence[tuple[int, str]] = (),
    mode: str = "auto",
) -> dict[str, Any]:
    """Usage of every session of ``repo`` in ``[since, until)``: the sessions, their files,
    totals, and per phase when ``transitions`` (``(ms, phase)``, in order) are given."""
    records, sessions = queries.usage_records(con, since, until, repo, agents)
    activity, files = queries.activity_records(con, since, until, repo, agents, sorted(SHELL_TOOLS))
    doc = attribute(records, list(transitions), prices, activity, mode)
    for p in doc["phases"]:
        p["start"], p["end"] = iso(p["start"]), iso(p["end"])
    models = {b["modelName"] for b in doc["total"]["modelBreakdowns"]}
    described = prices.describe(models) if isinstance(prices, PriceBook) else None
    return {
        "prices": described,
        "costMode": mode,
        "repo": repo,
        "since": iso(since),
        "until": iso(until),
        "sessions": [
            {"uid": u, "agent": a, "cwd": c, "started_at": iso(s), "ended_at": iso(e), "files": f}
            for u, a, c, s, e, f in sessions
        ],
        "files": sum(s[5] for s in sessions),
        "transcript_files": files,
        **doc,
    }

"""Fleet reads: the usage report and the stats of every machine that pushes to the fleet's
PostgreSQL — the documents ``query/usage.py`` and ``query/stats.py`` make of one store, in the
same shapes (the same pure shaping: ``core/usage_report.py``, ``query.stats.shape``), broken
down by machine and by user as well as by agent, repo and model.

A machine is named by its configured name; two machines with the same name (two laptops both
called ``laptop``) are told apart by the first characters of their ids.  Any face can point
at the fleet: it opens a connection (``open_fleet``) and calls these instead of the local
ones.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from helixd.core.fleet_report import fleet_period_report, fleet_session_report
from helixd.core.timeparse import iso
from helixd.core.usage_report import (
    BUCKET_MS,
    day_start_ms,
    offset_segments,
    usable_buckets,
    with_undated,
)

if TYPE_CHECKING:
    from helixd.core.pricing import Prices
from helixd.query.stats import shape
from helixd.query.usage import PERIODS, ReportQuery
from helixd.store.pg import queries
from helixd.store.pg.connect import FleetDbError, connect
from helixd.store.pg.schema import check_readable

__all__ = [
    "FleetDbError",
    "acceptance",
    "hook_activity",
    "machines",
    "open_fleet",
    "report",
    "session_text",
    "stats",
]

Conn = psycopg.Connection[Any]


def open_fleet(dsn: str, password: str | None, timeout: float = 10) -> Conn:
    """A read connection to the fleet database; FleetDbError when it cannot be reached or
    holds no Helix schema (or a newer one)."""
    conn = connect(dsn, password, timeout)
    try:
        check_readable(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def labels(conn: Conn) -> dict[Any, tuple[str, str]]:
    """``{machine_id: (name shown, user)}``."""
    rows = queries.machines(conn)
    names = Counter(r[1] for r in rows)
    return {r[0]: (r[1] if names[r[1]] == 1 else f"{r[1]} ({str(r[0])[:8]})", r[2]) for r in rows}


def machines(conn: Conn) -> list[dict[str, Any]]:
    """Every machine of the fleet: name, user, the role that pushes it, version, first and last
    push, the outbox id confirmed through, whether it sends text, its sessions."""
    shown = labels(conn)
    return [
        {
            "machine": shown[mid][0],
            "machine_id": str(mid),
            "user": user,
            "role": owner,
            "version": version,
            "first_push_at": first.isoformat() if first else None,
            "last_push_at": last.isoformat() if last else None,
            "shipped_through": shipped,
            "include_text": text,
            "sessions": sessions,
        }
        for mid, _, user, owner, version, first, last, shipped, text, sessions in (
            queries.machines(conn)
        )
    ]


def report(
    conn: Conn,
    q: ReportQuery,
    prices: Prices,
    machine_names: Sequence[str] = (),
    users: Sequence[str] = (),
) -> dict[str, Any]:
    """``query.usage.report`` over the fleet, with ``machines``/``users`` splits (and only
    the machines and users named, when given)."""
    if q.period not in PERIODS:
        raise ValueError(f"unknown period {q.period!r} (one of {', '.join(PERIODS)})")
    shown = labels(conn)
    lo = day_start_ms(q.first_day, q.tz) // BUCKET_MS if q.first_day else None
    hi = day_start_ms(q.last_day + timedelta(days=1), q.tz) // BUCKET_MS if q.last_day else None
    if q.period == "session":
        rows = queries.usage_by_session(
            conn, lo, hi, q.agents, q.repo, q.model, machine_names, users
        )
        return fleet_session_report(
            ((*shown[r[0]], *r[1:]) for r in rows if r[0] in shown), prices, iso
        )
    # As on one machine (``query.usage.report``): usage of no usable time is ``undated``.
    floor, ceiling = usable_buckets(int(time.time() * 1000))
    lo, hi = max(lo or floor, floor), min(hi or ceiling, ceiling)
    undated = queries.usage_outside(
        conn, floor, ceiling, q.agents, q.repo, q.model, machine_names, users
    )
    days: list[tuple[Any, ...]] = []
    if lo < hi:
        span = queries.bucket_span(conn)
        first, last = span or (0, 0)
        segments = offset_segments(max(first, lo), min(last, hi), q.tz)
        days = queries.usage_by_day(
            conn, segments, lo, hi, q.agents, q.repo, q.model, machine_names, users
        )
    doc = fleet_period_report(
        ((day, agent, model, *shown[mid], *c) for day, agent, model, mid, *c in days),
        q.period,
        prices,
        q.week_start,
    )
    return with_undated(doc, undated, prices)


def stats(
    conn: Conn,
    since: int | None,
    top: int,
    prices: Prices,
    machine_names: Sequence[str] = (),
    users: Sequence[str] = (),
    parts: Collection[str] = queries.STATS_PARTS,
) -> dict[str, Any]:
    """``query.stats.stats`` over the fleet, with ``by_machine`` and ``by_user``; only the
    ``parts`` of ``queries.STATS_PARTS`` asked for are read (the rest of the document is
    empty)."""
    shown = labels(conn)
    raw = queries.stats(conn, since, top, machine_names, users, parts)
    return shape(raw, since, top, prices, lambda mid: shown[mid])


def acceptance(
    conn: Conn,
    machine_names: Sequence[str] = (),
    users: Sequence[str] = (),
    since: int | None = None,
) -> list[dict[str, Any]]:
    """Edit acceptance per machine (of the file operations since ``since`` ms, when given):
    applied, rejected (or interrupted), with no verdict, and the share applied of those with
    one (None when none has)."""
    shown = labels(conn)
    out = []
    for mid, edits, accepted, rejected, unknown in queries.acceptance(
        conn, machine_names, users, since
    ):
        if mid not in shown:
            continue
        judged = accepted + rejected
        out.append(
            {
                "machine": shown[mid][0],
                "user": shown[mid][1],
                "edits": edits,
                "accepted": accepted,
                "rejected": rejected,
                "unknown": unknown,
                "accept_rate": accepted / judged if judged else None,
            }
        )
    return sorted(out, key=lambda r: r["machine"])


def hook_activity(
    conn: Conn,
    machine_names: Sequence[str] = (),
    users: Sequence[str] = (),
    since: int | None = None,
) -> list[dict[str, Any]]:
    """What the agents' hooks reported (shell commands, edits; since ``since`` ms, when
    given), per machine and tool."""
    shown = labels(conn)
    return [
        {"machine": shown[mid][0], "user": shown[mid][1], "what": what, "tool": tool, "events": n}
        for mid, what, tool, n in queries.hook_activity(conn, machine_names, users, since)
        if mid in shown
    ]


TEXT_STAYS = (
    "The conversation text of this session stays on its machine: it pushes Tier 2 only"
    " (fleet.include_text = false)."
)


def session_text(conn: Conn, uid: str, limit: int = 200) -> list[dict[str, Any]]:
    """Session ``uid`` as each machine holding it sent it: its Tier 2 facts, and its first
    ``limit`` events when that machine ships text (``include_text``), else ``events`` None
    and a note saying the text stays on the machine."""
    shown = labels(conn)
    out = []
    for (
        mid,
        text,
        agent,
        repo,
        model,
        title,
        started,
        ended,
        messages,
        events,
    ) in queries.session_holders(conn, uid):
        rows = queries.session_events(conn, mid, uid, limit) if text else None
        out.append(
            {
                "machine": shown[mid][0],
                "user": shown[mid][1],
                "include_text": text,
                "agent": agent,
                "repo": repo,
                "model": model,
                "title": title,
                "started_at": iso(started),
                "ended_at": iso(ended),
                "messages": messages,
                "events_total": events,
                "events": None
                if rows is None
                else [
                    {"seq": q, "ts": iso(ts), "kind": k, "role": r, "tool": t, "summary": s}
                    for q, ts, k, r, t, s in rows
                ],
                "note": None if text else TEXT_STAYS,
            }
        )
    return out

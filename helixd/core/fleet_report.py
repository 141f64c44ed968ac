"""Fleet reports (many machines, one PostgreSQL): ``helixd.core.usage_report``'s period and
session reports, each entry split by machine and user.

Pure: no I/O and no SQL (``helixd.query.fleet`` reads the rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from helixd.core.usage_report import (
    EPOCH,
    PERIOD_KEY,
    Counts,
    add_counts,
    entry_of,
    period_of,
    period_report,
    put_usage,
    totals_of,
    zero_counts,
)

if TYPE_CHECKING:
    from helixd.core.pricing import Prices


# -- fleet reports (many machines) -------------------------------------------------------
def _split(models: Mapping[str, Counts], prices: Prices) -> dict[str, Any]:
    """Tokens and cost of one slice (a machine, a user) of an entry."""
    e = entry_of(models, prices)
    e["cost"] = e.pop("totalCost")
    del e["modelBreakdowns"]
    return e


def _splits(
    groups: Mapping[tuple[str, str], Mapping[str, Counts]], prices: Prices
) -> list[dict[str, Any]]:
    return [
        {"machine": m, "user": u, **_split(models, prices)}
        for (m, u), models in sorted(groups.items())
    ]


def _by_user(
    groups: Mapping[tuple[str, str], Mapping[str, Counts]], prices: Prices
) -> list[dict[str, Any]]:
    users: dict[str, dict[str, Counts]] = {}
    for (_, user), models in groups.items():
        for model, c in models.items():
            add_counts(users.setdefault(user, {}).setdefault(model, zero_counts()), c)
    return [{"user": u, **_split(models, prices)} for u, models in sorted(users.items())]


def fleet_period_report(
    rows: Iterable[Sequence[Any]], period: str, prices: Prices, week_start: int = 6
) -> dict[str, Any]:
    """``period_report`` of many machines, from rows ``(local day number, agent, model,
    machine, user, *COUNTERS)``: the same entries and totals, each entry with the machines and
    users it holds and its ``machineBreakdowns``; and the whole range split by machine
    (``machines``) and by user (``users``)."""
    rows = list(rows)
    doc = period_report(((d, a, m, *c) for d, a, m, _, _, *c in rows), period, prices, week_start)
    keys: dict[int, str] = {}
    per_entry: dict[str, dict[tuple[str, str], dict[str, Counts]]] = {}
    overall: dict[tuple[str, str], dict[str, Counts]] = {}
    for day, _agent, model, machine, user, *c in rows:
        key = keys.get(day)
        if key is None:
            key = keys[day] = period_of(EPOCH + timedelta(days=day), period, week_start)
        for groups in (per_entry.setdefault(key, {}), overall):
            put_usage(groups.setdefault((machine, user), {}), model, c, prices, "auto")
    name = PERIOD_KEY[period]
    for e in doc[period]:
        split = per_entry[e[name]]
        e["machines"] = sorted({m for m, _ in split})
        e["users"] = sorted({u for _, u in split})
        e["machineBreakdowns"] = _splits(split, prices)
    doc["machines"] = _splits(overall, prices)
    doc["users"] = _by_user(overall, prices)
    return doc


def fleet_session_report(
    rows: Iterable[Sequence[Any]], prices: Prices, iso: Callable[[int | None], str | None]
) -> dict[str, Any]:
    """``session_report`` of many machines, from rows ``(machine, user, uid, agent, repo,
    parent_uid, started_at, ended_at, model, *COUNTERS)``: a session is one machine's
    (the same uid on two machines is two sessions), named with its ``machine`` and ``user``;
    plus the split by machine and by user."""
    groups: dict[tuple[str, str], dict[str, Counts]] = {}
    info: dict[tuple[str, str], tuple[Any, ...]] = {}
    overall: dict[tuple[str, str], dict[str, Counts]] = {}
    for machine, user, uid, agent, repo, parent, start, end, model, *c in rows:
        put_usage(groups.setdefault((machine, uid), {}), model, c, prices, "auto")
        put_usage(overall.setdefault((machine, user), {}), model, c, prices, "auto")
        info[(machine, uid)] = (user, agent, repo, parent, start, end)
    entries = []
    for (machine, uid), models in groups.items():
        user, agent, repo, parent, start, end = info[(machine, uid)]
        entries.append(
            {
                "sessionId": uid,
                "machine": machine,
                "user": user,
                "agent": agent,
                "projectPath": repo,
                "parentSessionId": parent,
                "firstActivity": iso(start),
                "lastActivity": iso(end),
                **entry_of(models, prices),
            }
        )
    entries.sort(key=lambda e: (e["lastActivity"] or "", e["sessionId"], e["machine"]))
    return {
        "sessions": entries,
        "totals": totals_of(entries),
        "machines": _splits(overall, prices),
        "users": _by_user(overall, prices),
    }

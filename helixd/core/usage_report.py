"""Pure logic behind ``helixctl report``, ``tokens``, ``search`` and ``stats``: prices and
cost, bucketing usage rows into days / weeks / months in a time zone, test-framework names
(search snippets: ``helixd.core.snippets``; ccusage 20's JSON: ``helixd.core.ccusage_shape``;
many machines: ``helixd.core.fleet_report``; per-phase attribution of a time range:
``helixd.core.phase_usage``).

No I/O and no SQL: the store's queries (``helixd.store.queries``) return plain rows, the
CLI (``helixd.cli.reports``) prints what this module builds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, Final

from helixd.core.pricing import cost as cost  # re-exported: reports price with it

if TYPE_CHECKING:
    from helixd.core.pricing import Prices

BUCKET_MS: Final = 900_000  # the store's usage rollup: 15 minutes divides every UTC offset
# Counter order of every usage row the queries return: the tokens, the responses, the dollars
# the agents recorded and how many of the responses carry them (rows without the last two,
# as the fleet's, have none recorded).
COUNTERS: Final = (
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "reasoning",
    "responses",
    "recorded_cost",
    "costed",
)
# Rows once priced (``priced``): the recorded dollars counted, the responses priced by the
# agent's recorded cost and by the price table, and the token counters the table prices
# (summed as tokens and priced once per model: a report's totals do not depend on how its
# rows were grouped).
PRICED: Final = (
    *COUNTERS,
    "recorded_used",
    "by_recorded",
    "by_table",
    "table_input",
    "table_output",
    "table_cache_read",
    "table_cache_write_5m",
    "table_cache_write_1h",
)
Counts = list[Any]
# ``--cost`` (ccusage's ``--mode auto|calculate|display``): ``auto`` the cost the agent
# recorded where it did, else the table's price; ``calculate`` always the table's;
# ``recorded`` only what the agents recorded (0 where they recorded none).
COST_MODES: Final = ("auto", "calculate", "recorded")
COST_SOURCES: Final = {
    "recorded": "recorded by the agent",
    "table": "priced from the table",
    "recorded+table": "recorded by the agent, the rest priced from the table",
    "none": "no cost recorded",
}


def priced(c: Sequence[Any], model: str, prices: Prices, mode: str = "auto") -> Counts:
    """One usage row (``COUNTERS``, the recorded cost and ``costed`` optional) with what
    prices it in ``mode`` appended (``PRICED``; ``usd`` gives the dollars).  A row where
    only some responses carry a recorded cost (``auto``) has the table price the share of
    its tokens of the responses without one (the rollups keep no tokens per response)."""
    row = [*c, *([0] * (len(COUNTERS) - len(c)))]
    n, recorded, costed = row[6], float(row[7] or 0), int(row[8] or 0)
    if mode not in COST_MODES:
        raise ValueError(f"unknown cost mode {mode!r} (one of {', '.join(COST_MODES)})")
    if mode == "calculate" or (mode == "auto" and not costed):
        return [*row, 0.0, 0, n, *row[:5]]
    if mode == "recorded" or costed >= n:
        return [*row, recorded, costed, 0, 0, 0, 0, 0, 0]
    rest = n - costed
    return [*row, recorded, costed, rest, *(v * rest / n for v in row[:5])]


def priced_usd(prices: Prices, model: str, c: Sequence[Any]) -> float:
    """The dollars of a priced row (or a sum of them): recorded plus the table's price."""
    return float(c[9]) + cost(prices, model, c[12:17])


def cost_source(c: Sequence[Any]) -> str:
    """Which source priced a priced row (a key of ``COST_SOURCES``)."""
    by_recorded, by_table = c[10], c[11]
    if by_recorded and by_table:
        return "recorded+table"
    return "recorded" if by_recorded else "table" if by_table else "none"


def zero_counts() -> Counts:
    return [0] * len(PRICED)


# -- prices ------------------------------------------------------------------------------
# -- time --------------------------------------------------------------------------------
def local_dt(ms: int, tz: tzinfo | None) -> datetime:
    """``ms`` as a wall-clock time in ``tz`` (``None``: the system's local zone)."""
    return datetime.fromtimestamp(ms / 1000, tz) if tz else datetime.fromtimestamp(ms / 1000)


def parse_day(value: str) -> date:
    """``YYYYMMDD`` (ccusage) or ``YYYY-MM-DD``."""
    text = value.strip()
    if re.fullmatch(r"\d{8}", text):
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    return date.fromisoformat(text)


def day_start_ms(day: date, tz: tzinfo | None) -> int:
    """The epoch milliseconds of local midnight starting ``day``."""
    naive = datetime(day.year, day.month, day.day)
    return int((naive.replace(tzinfo=tz) if tz else naive).timestamp() * 1000)


def utc_offset_s(ms: int, tz: tzinfo | None) -> int:
    """The zone's UTC offset in seconds at ``ms``."""
    dt = datetime.fromtimestamp(ms / 1000, tz) if tz else datetime.fromtimestamp(ms / 1000)
    off = (dt if tz else dt.astimezone()).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def offset_segments(lo: int, hi: int, tz: tzinfo | None) -> list[tuple[int | None, int]]:
    """``[(until_bucket, offset_s), ..., (None, offset_s)]``: the zone's UTC offset over the
    buckets ``[lo, hi]``, so that the store can sum whole local days in SQL.  Steps a week
    at a time (zones change offset at most a few times a year) and bisects each change to
    its bucket (offsets and their changes fall on 15-minute boundaries)."""

    def off(bucket: int) -> int:
        return utc_offset_s(bucket * BUCKET_MS, tz)

    step = 7 * 96
    segments: list[tuple[int | None, int]] = []
    cur, b = off(lo), lo
    while b < hi:
        nb = min(b + step, hi)
        if off(nb) == cur:
            b = nb
            continue
        a, z = b, nb  # off(a) == cur != off(z): find the first bucket with the new offset
        while z - a > 1:
            mid = (a + z) // 2
            a, z = (mid, z) if off(mid) == cur else (a, mid)
        segments.append((z, cur))
        cur, b = off(z), z
    segments.append((None, cur))
    return segments


def period_of(dt: datetime, period: str, week_start: int = 6) -> str:
    """The report key of a local time: ``2026-01-31`` (daily), the week's first day
    (weekly; ``week_start`` 0 = Monday … 6 = Sunday), ``2026-01`` (monthly)."""
    if period == "monthly":
        return f"{dt.year:04d}-{dt.month:02d}"
    day = dt.date()
    if period == "weekly":
        day -= timedelta(days=(day.weekday() - week_start) % 7)
    return day.isoformat()


# -- reports -----------------------------------------------------------------------------
def _tokens(c: Sequence[int], cost_usd: float) -> dict[str, Any]:
    write = c[3] + c[4]
    return {
        "inputTokens": c[0],
        "outputTokens": c[1],
        "cacheCreationTokens": write,
        "cacheReadTokens": c[2],
        "reasoningOutputTokens": c[5],
        "totalTokens": c[0] + c[1] + c[2] + write,
        "totalCost": cost_usd,
    }


def add_counts(into: Counts, c: Sequence[Any]) -> None:
    for i, v in enumerate(c):
        into[i] += v


def put_usage(
    models: dict[str, Counts], model: str, c: Sequence[Any], prices: Prices, mode: str
) -> None:
    """Add one usage row, priced, to the model's sums."""
    add_counts(models.setdefault(model, zero_counts()), priced(c, model, prices, mode))


def entry_of(models: Mapping[str, Counts], prices: Prices) -> dict[str, Any]:
    """Tokens and dollars of priced rows per model (``put_usage``), with ``costSource`` per
    model and for the whole (a key of ``COST_SOURCES``)."""
    total = zero_counts()
    breakdowns = []
    spent = 0.0
    for model, c in models.items():
        usd = priced_usd(prices, model, c)
        spent += usd
        add_counts(total, c)
        b = _tokens(c, usd)
        b["cost"] = b.pop("totalCost")
        b["costSource"] = cost_source(c)
        breakdowns.append({"modelName": model, **b})
    breakdowns.sort(key=lambda b: (-b["cost"], b["modelName"]))
    out = _tokens(total, spent)
    out["modelsUsed"] = sorted(models)
    out["modelBreakdowns"] = breakdowns
    out["costSource"] = cost_source(total)
    return out


def totals_of(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    keys = (
        "inputTokens",
        "outputTokens",
        "cacheCreationTokens",
        "cacheReadTokens",
        "reasoningOutputTokens",
        "totalTokens",
        "totalCost",
    )
    out: dict[str, Any] = dict.fromkeys(keys, 0)
    for e in entries:
        for k in keys:
            out[k] += e[k]
    return out


PERIOD_KEY: Final = {"daily": "date", "weekly": "week", "monthly": "month"}


EPOCH: Final = datetime(1970, 1, 1)
UNKNOWN: Final = "unknown"  # the period of usage whose time is not known (sorts last)


def period_key(day: int | None, period: str, week_start: int = 6) -> str:
    """The report key of a local day number since 1970-01-01; ``UNKNOWN`` for None (usage
    of unknown time) and for a day no calendar holds."""
    if day is None:
        return UNKNOWN
    try:
        return period_of(EPOCH + timedelta(days=day), period, week_start)
    except OverflowError:
        return UNKNOWN


def period_report(
    rows: Iterable[Sequence[Any]],
    period: str,
    prices: Prices,
    week_start: int = 6,
    mode: str = "auto",
) -> dict[str, Any]:
    """ccusage's ``daily``/``weekly``/``monthly`` JSON from rows
    ``(local day number since 1970-01-01 or None, agent, model, *COUNTERS)``; usage of
    unknown time is one ``"unknown"`` entry after the dated ones (never 1970-01-01)."""
    keys: dict[int | None, str] = {}
    groups: dict[str, dict[str, Counts]] = {}
    agents: dict[str, set[str]] = {}
    for day, agent, model, *c in rows:
        key = keys.get(day)
        if key is None:
            key = keys[day] = period_key(day, period, week_start)
        put_usage(groups.setdefault(key, {}), model, c, prices, mode)
        agents.setdefault(key, set()).add(agent)
    name = PERIOD_KEY[period]
    entries = []
    for key in sorted(groups):
        e = {name: key, **entry_of(groups[key], prices), "agents": sorted(agents[key])}
        entries.append(e)
    return {period: entries, "totals": totals_of(entries)}


EARLIEST_MS: Final = 946_684_800_000  # 2000-01-01 UTC: usage before it has no true time


def usable_buckets(now_ms: int) -> tuple[int, int]:
    """``[first, end)`` of the buckets whose times can be true: from 2000-01-01 to a day
    after ``now_ms``, on whole hours (so that the hourly rollup still serves)."""
    return EARLIEST_MS // BUCKET_MS, (now_ms // 3_600_000 + 25) * 4


def with_undated(
    doc: dict[str, Any], rows: Iterable[Sequence[Any]], prices: Prices, mode: str = "auto"
) -> dict[str, Any]:
    """``doc`` with ``undated`` — the usage of rows ``(agent, model, *COUNTERS)`` that is in
    no period — when there is any (not in ``totals``: the periods add up to the totals)."""
    models: dict[str, Counts] = {}
    agents: set[str] = set()
    for agent, model, *c in rows:
        put_usage(models, model, c, prices, mode)
        agents.add(agent)
    if models:
        doc["undated"] = {**entry_of(models, prices), "agents": sorted(agents)}
    return doc


def session_report(
    rows: Iterable[Sequence[Any]],
    prices: Prices,
    iso: Callable[[int | None], str | None],
    mode: str = "auto",
) -> dict[str, Any]:
    """ccusage's ``session`` JSON from rows ``(uid, agent, repo, parent_uid, started_at,
    ended_at, model, *COUNTERS)``, most recent activity last (as ccusage)."""
    groups: dict[str, dict[str, Counts]] = {}
    info: dict[str, tuple[Any, ...]] = {}
    for uid, agent, repo, parent, start, end, model, *c in rows:
        put_usage(groups.setdefault(uid, {}), model, c, prices, mode)
        info[uid] = (agent, repo, parent, start, end)
    entries = []
    for uid, models in groups.items():
        agent, repo, parent, start, end = info[uid]
        entries.append(
            {
                "sessionId": uid,
                "agent": agent,
                "projectPath": repo,
                "parentSessionId": parent,
                "firstActivity": iso(start),
                "lastActivity": iso(end),
                **entry_of(models, prices),
            }
        )
    entries.sort(key=lambda e: (e["lastActivity"] or "", e["sessionId"]))
    return {"sessions": entries, "totals": totals_of(entries)}

"""``helixctl search | report | tokens | stats``: answers from the store, never from files.

Kept light on purpose (whole-process time is the figure that matters): no event loop, no
config parsing when ``HELIX_STORE_DB`` names the store, and rich only for terminal tables.
Exit codes as the rest of ``helixctl``: 2 usage error (a bad FTS5 query included), 3 no
usable store.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from helixd.cli.common import (
    CLI_BUSY_MS,
    EXIT_USAGE,
    echo_json,
    exit_store,
    load_settings,
    price_table,
    remember_store,
    store_fault,
    store_module,
)

PERIODS = ("daily", "weekly", "monthly", "session")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _db(ctx: click.Context) -> Path:
    """The store path: ``HELIX_STORE_DB`` wins over the config file anyway, so the (slow)
    settings are loaded only when it is not set."""
    env = os.environ.get("HELIX_STORE_DB")
    ctx.ensure_object(dict)
    if env:
        remember_store(ctx, Path(env).expanduser())
        return Path(env).expanduser()
    return Path(load_settings(ctx).store.db)


def _queries() -> Any:
    """``helixd.store.queries`` without running the store package's ``__init__`` (aiosqlite,
    asyncio, zstandard: about half of a report's 100 ms); the real module when the package
    is loaded already."""
    return store_module("queries")


def _connect(ctx: click.Context) -> Any:
    """A read-only connection, or exit 3 with one line naming the store's condition."""
    queries = _queries()
    db = _db(ctx)
    try:
        return queries.connect(db, busy_ms=CLI_BUSY_MS)
    except queries.NoStore as exc:
        fault = store_fault(exc, db) or store_module("probe").condition(db, writing=False)
        exit_store(fault or exc)


def _prices(ctx: click.Context) -> Any:
    """The price table: the bundled one, unless a config (file or ``HELIX_PRICES__*``)
    could override it — only then are the (slow) settings loaded."""
    from helixd.paths import config_may_set_prices

    ctx.ensure_object(dict)
    if not config_may_set_prices(ctx.obj.get("config")):
        from helixd.core.pricing import bundled

        return bundled()
    return price_table(ctx, load_settings(ctx))


def _tz(value: str | None) -> Any:
    if not value:
        return None
    if value.upper() in ("UTC", "Z"):
        from datetime import UTC

        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise click.BadParameter(f"unknown time zone {value!r}", param_hint="--timezone") from exc


def _instant(value: str | None, hint: str) -> int | None:
    """An ISO-8601 time (or ``YYYYMMDD``/``YYYY-MM-DD``; no zone = UTC) in epoch ms."""
    if value is None:
        return None
    from helixd.core.timeparse import parse_ts

    text = value.strip()
    if re.fullmatch(r"\d{8}", text):
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    ms = parse_ts(text)
    if ms is None:
        raise click.BadParameter(f"not a time: {value!r} (use ISO-8601)", param_hint=hint)
    return ms


@click.command()
@click.argument("query")
@click.option("--agent", "agents", multiple=True, help="Only this agent (repeatable).")
@click.option("--repo", default=None, help="Repo name, or a path (sessions at or under it).")
@click.option("--since", default=None, help="From this time (ISO-8601 or YYYYMMDD, UTC).")
@click.option("--until", default=None, help="Before this time.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    help="Only events of this kind: user_msg, assistant_msg, thinking, tool_call, edit,"
    " test_run, error, human_intervention (repeatable).",
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    agents: tuple[str, ...],
    repo: str | None,
    since: str | None,
    until: str | None,
    kinds: tuple[str, ...],
    limit: int,
    as_json: bool,
) -> None:
    """Full-text search of every session (SQLite FTS5 syntax: "a phrase", prefix*,
    AND / OR / NOT, NEAR(a b)).  Best matches first."""
    queries = _queries()
    from helixd.core.timeparse import iso
    from helixd.core.usage_report import query_terms, snippet

    lo, hi = _instant(since, "--since"), _instant(until, "--until")
    con = _connect(ctx)
    try:
        hits = queries.search(con, query, limit, agents, repo, lo, hi, kinds)
    except queries.QueryError as exc:
        click.echo(f"helixctl: bad search query {query!r}: {exc}", err=True)
        click.echo(
            'FTS5 syntax: words, "a phrase", prefix*, AND / OR / NOT, NEAR(a b);'
            " quote words that contain punctuation.",
            err=True,
        )
        ctx.exit(EXIT_USAGE)
    finally:
        con.close()
    terms = query_terms(query)
    tty = sys.stdout.isatty() and not as_json
    mark = ("\x1b[1;33m", "\x1b[0m") if tty else ("[", "]")
    for h in hits:
        text = h.pop("body") or h["summary"] or h["title"] or ""
        h["snippet"] = snippet(text, terms, mark=mark)
        h["timestamp"] = iso(h["ts"])
        h["score"] = round(-h["score"], 4)  # bm25: lower is better; shown higher-is-better
    if as_json:
        echo_json(hits)
        return
    if not hits:
        click.echo("no matches", err=True)
        return
    for h in hits:
        when = (h["timestamp"] or "?")[:16].replace("T", " ")
        click.echo(f"{when}  {h['session_uid']}  {h['repo'] or '-'}  {h['kind']}")
        click.echo(f"    {h['snippet']}")


# -- report --------------------------------------------------------------------------------
@click.command()
@click.argument("period", type=click.Choice(PERIODS))
@click.option("--since", default=None, help="First day (YYYYMMDD or YYYY-MM-DD), inclusive.")
@click.option("--until", default=None, help="Last day, inclusive.")
@click.option("--agent", "agents", multiple=True, help="Only this agent (repeatable).")
@click.option("--repo", default=None, help="Repo name, or a path (sessions at or under it).")
@click.option("--model", default=None, help="Only this model (or its dated versions).")
@click.option("--breakdown", is_flag=True, help="Show per-model rows in the table.")
@click.option(
    "--timezone", "-z", "timezone", default=None, help="Time zone for days (default: local)."
)
@click.option(
    "--start-of-week",
    type=click.Choice(_WEEKDAYS),
    default="sunday",
    show_default=True,
    help="First day of a week (weekly).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (ccusage's shapes).")
@click.pass_context
def report(
    ctx: click.Context,
    period: str,
    since: str | None,
    until: str | None,
    agents: tuple[str, ...],
    repo: str | None,
    model: str | None,
    breakdown: bool,
    timezone: str | None,
    start_of_week: str,
    as_json: bool,
) -> None:
    """Token usage and cost per day, week, month or session, from the store."""
    queries = _queries()
    from helixd.core.usage_report import BUCKET_MS, day_start_ms, parse_day

    tz = _tz(timezone)
    try:
        lo = day_start_ms(parse_day(since), tz) // BUCKET_MS if since else None
        hi = None
        if until:
            from datetime import timedelta

            hi = day_start_ms(parse_day(until) + timedelta(days=1), tz) // BUCKET_MS
    except ValueError as exc:
        raise click.BadParameter(f"not a day: {exc} (use YYYYMMDD)") from exc
    _, prices = _prices(ctx)
    con = _connect(ctx)
    try:
        if period == "session":
            from helixd.core.timeparse import iso
            from helixd.core.usage_report import session_report

            rows = queries.usage_by_session(con, lo, hi, agents, repo, model)
            doc = session_report(rows, prices, iso)
        else:
            from helixd.core.usage_report import offset_segments, period_report

            span = queries.bucket_span(con)
            first, last = span or (0, 0)
            segments = offset_segments(max(first, lo or 0), min(last, hi or last), tz)
            hourly = not repo and all(off % 3600 == 0 for _, off in segments)
            hourly = hourly and all(b is None or b % 4 == 0 for b in (lo, hi))
            if hourly:
                rows = queries.usage_by_day_hourly(con, segments, lo, hi, agents, model)
            else:
                rows = queries.usage_by_day(con, segments, lo, hi, agents, repo, model)
            week_start = _WEEKDAYS.index(start_of_week)
            doc = period_report(rows, period, prices, week_start)
    finally:
        con.close()
    if as_json:
        echo_json(doc)
    else:
        from helixd.cli.tables import print_report

        print_report(doc, period, breakdown)


def _read_phases(path: Path) -> list[tuple[int, str]]:
    import orjson

    from helixd.core.timeparse import parse_ts

    out: list[tuple[int, str]] = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
            ts = parse_ts(obj.get("timestamp"))
            phase = obj.get("phase") or obj.get("to_node")
        except (orjson.JSONDecodeError, AttributeError):
            ts, phase = None, None
        if ts is None or not isinstance(phase, str):
            raise click.BadParameter(
                f"{path}:{n}: want a JSON object with `timestamp` and `phase`",
                param_hint="--phases",
            )
        out.append((ts, phase))
    return out


@click.command()
@click.option("--repo", required=True, help="Repo name, or a path (sessions at or under it).")
@click.option("--since", required=True, help="Start (ISO-8601; no zone = UTC), inclusive.")
@click.option("--until", default=None, help="End, exclusive (default: open).")
@click.option("--agent", "agents", multiple=True, help="Only this agent (repeatable).")
@click.option(
    "--phases",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="JSONL of {timestamp, phase} transitions: usage per phase over [t_i, t_i+1).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def tokens(
    ctx: click.Context,
    repo: str,
    since: str,
    until: str | None,
    agents: tuple[str, ...],
    phases: Path | None,
    as_json: bool,
) -> None:
    """Usage of every session and file of a repo in a time range, optionally per phase."""
    queries = _queries()
    from helixd.core.timeparse import iso
    from helixd.core.usage_report import attribute

    lo = _instant(since, "--since")
    hi = _instant(until, "--until")
    assert lo is not None
    transitions = _read_phases(phases) if phases else []
    _, prices = _prices(ctx)
    con = _connect(ctx)
    try:
        records, sessions = queries.usage_records(con, lo, hi, repo, agents)
    finally:
        con.close()
    doc = attribute(records, transitions, prices)
    for p in doc["phases"]:
        p["start"], p["end"] = iso(p["start"]), iso(p["end"])
    result = {
        "repo": repo,
        "since": iso(lo),
        "until": iso(hi),
        "sessions": [
            {"uid": u, "agent": a, "cwd": c, "started_at": iso(s), "ended_at": iso(e), "files": f}
            for u, a, c, s, e, f in sessions
        ],
        "files": sum(s[5] for s in sessions),
        **doc,
    }
    if as_json:
        echo_json(result)
        return
    t = result["total"]
    click.echo(
        f"{repo}: {len(sessions)} sessions, {result['files']} files,"
        f" {t['totalTokens']:,} tokens (in {t['inputTokens']:,}, out {t['outputTokens']:,},"
        f" cache read {t['cacheReadTokens']:,}, write {t['cacheCreationTokens']:,}),"
        f" ${t['totalCost']:,.2f}"
    )
    for p in result["phases"]:
        click.echo(
            f"  {p['phase']:24} {p['start'] or '-':24} {p['totalTokens']:>14,}"
            f"  ${p['totalCost']:,.2f}"
        )


# -- stats ---------------------------------------------------------------------------------
@click.command()
@click.option("--since", default=None, help="From this time (ISO-8601 or YYYYMMDD, UTC).")
@click.option("--top", default=15, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def stats(ctx: click.Context, since: str | None, top: int, as_json: bool) -> None:
    """Sessions and spend by agent, repo and model; tool success rates; most-edited
    files; test runs by framework; interventions and errors per session."""
    queries = _queries()
    from helixd.core.testcommands import test_runner
    from helixd.core.usage_report import COUNTERS, cost

    lo = _instant(since, "--since")
    _, prices = _prices(ctx)
    con = _connect(ctx)
    try:
        raw = queries.stats(con, lo, top)
    finally:
        con.close()

    def spend() -> dict[str, Any]:
        return {"sessions": 0, "tokens": 0, "cost": 0.0}

    by: dict[str, dict[str, dict[str, Any]]] = {"agent": {}, "repo": {}, "model": {}}
    for agent, repo, n in raw["sessions"]:
        for dim, key in (("agent", agent), ("repo", repo or "-")):
            by[dim].setdefault(key, spend())["sessions"] += n
    for agent, repo, model, *c in raw["usage"]:
        usd = cost(prices, model, c)
        total = c[0] + c[1] + c[2] + c[3] + c[4]
        for dim, key in (("agent", agent), ("repo", repo or "-"), ("model", model)):
            s = by[dim].setdefault(key, spend())
            s["tokens"] += total
            s["cost"] += usd
    assert len(COUNTERS) == 7
    tools = [
        {
            "tool": t,
            "calls": n,
            "errors": e or 0,
            "rejected": rj or 0,
            "interrupted": it or 0,
            "no_result": nr or 0,
            # of the calls whose result was recorded
            "success_rate": round((n - (e or 0) - (rj or 0) - (it or 0) - (nr or 0)) / (n - nr), 4)
            if n - (nr or 0)
            else None,
        }
        for t, n, e, rj, it, nr in raw["tools"]
    ]
    tests: dict[str, dict[str, int]] = {}
    zero = dict.fromkeys(("runs", "passed", "failed", "tests_passed", "tests_failed"), 0)
    for framework, command, status, t_pass, t_fail, t_skip in raw["tests"]:
        name = framework or test_runner(command or "") or "other"
        fw = tests.setdefault(name, {**zero, "tests_skipped": 0})
        fw["runs"] += 1
        if status == "passed":
            fw["passed"] += 1
        elif status in ("failed", "error"):
            fw["failed"] += 1
        fw["tests_passed"] += t_pass or 0
        fw["tests_failed"] += t_fail or 0
        fw["tests_skipped"] += t_skip or 0
    per_session = sorted(raw["per_session"], key=lambda r: -(r[1] + r[2]))
    doc = {
        "since": since,
        "by_agent": by["agent"],
        "by_repo": dict(sorted(by["repo"].items(), key=lambda kv: -kv[1]["cost"])[:top]),
        "by_model": by["model"],
        "tools": tools,
        "files": [
            {"path": p, "edits": n, "sessions": s, "lines_added": a, "lines_removed": r}
            for p, n, s, a, r in raw["files"]
        ],
        "tests": {
            k: {**v, "pass_rate": round(v["passed"] / (v["passed"] + v["failed"]), 4)}
            if v["passed"] + v["failed"]
            else {**v, "pass_rate": None}
            for k, v in tests.items()
        },
        "interventions_and_errors": {
            "sessions_with_any": len(per_session),
            "interventions": sum(r[1] for r in per_session),
            "errors": sum(r[2] for r in per_session),
            "top": [
                {"session_uid": u, "interventions": i, "errors": e} for u, i, e in per_session[:top]
            ],
        },
    }
    if as_json:
        echo_json(doc)
    else:
        from helixd.cli.tables import print_stats

        print_stats(doc)

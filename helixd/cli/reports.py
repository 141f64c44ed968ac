"""``helixctl report | tokens | stats``: token usage, cost and analytics from the store
(never from the agents' files), through ``helixd.query.usage`` and ``helixd.query.stats``.

Exit codes as the rest of ``helixctl``: 2 usage error, 3 no usable store.
"""

from __future__ import annotations

import time
from datetime import date, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from helixd.cli.common import (
    Context,
    UsageError,
    agent_option,
    check_agents,
    cost_option,
    describe,
    echo_json,
    instant,
    int_range,
    json_flag,
    prices,
    reader,
    repo_option,
    timezone_option,
    zone,
)
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

PERIODS = ("daily", "weekly", "monthly", "session")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _day(value: str | None, hint: str, tz: tzinfo | None) -> date | None:
    if value is None:
        return None
    from helixd.core.when import BadTime, parse_day

    try:
        return parse_day(value, int(time.time() * 1000), tz)
    except BadTime as exc:
        raise UsageError(str(exc), hint) from None


def _fleet_options(p: ArgumentParser) -> None:
    p.add_argument(
        "--fleet",
        action="store_true",
        help="Every machine of the fleet's PostgreSQL ([fleet] dsn).",
    )
    p.add_argument(
        "--machine",
        dest="machines",
        metavar="MACHINE",
        action="append",
        default=[],
        help="With --fleet: only this machine.",
    )
    p.add_argument(
        "--user",
        dest="users",
        metavar="USER",
        action="append",
        default=[],
        help="With --fleet: only this user.",
    )


def _check_fleet(fleet: bool, machines: tuple[str, ...], users: tuple[str, ...]) -> None:
    if (machines or users) and not fleet:
        raise UsageError("--machine and --user need --fleet")


# -- report --------------------------------------------------------------------------------
def report_arguments(p: ArgumentParser) -> None:
    p.add_argument("period", metavar="PERIOD", choices=PERIODS, help=", ".join(PERIODS) + ".")
    p.add_argument("--since", help="First day, inclusive (YYYYMMDD, YYYY-MM-DD, 7d, yesterday).")
    p.add_argument("--until", help="Last day, inclusive.")
    agent_option(p)
    repo_option(p)
    p.add_argument("--model", help="Only this model (or its dated versions).")
    p.add_argument("--breakdown", action="store_true", help="Show per-model rows in the table.")
    timezone_option(p, "Time zone for days (default: local).")
    p.add_argument(
        "--start-of-week",
        choices=_WEEKDAYS,
        default="sunday",
        help="First day of a week (weekly).  (default: sunday)",
    )
    p.add_argument(
        "--format",
        dest="fmt",
        choices=["text", "json", "ccusage"],
        default="text",
        help="json: Helix's document (per-agent ccusage fields, agents, undated, prices);"
        " ccusage: exactly ccusage 20's unified JSON (period, agent, metadata)."
        "  (default: text)",
    )
    json_flag(p, "Same as --format json.")
    cost_option(p)
    _fleet_options(p)
    describe(p, report)


def report(ctx: Context, args: Namespace) -> None:
    """Token usage and cost per day, week, month or session, from the store (with --fleet:
    of every machine, from the fleet's PostgreSQL, also by machine and user)."""
    from helixd.query.usage import ReportQuery
    from helixd.query.usage import report as run

    period, since, until, agents = args.period, args.since, args.until, tuple(args.agents)
    fleet, machines, users = args.fleet, tuple(args.machines), tuple(args.users)
    fmt, as_json, breakdown = args.fmt, args.as_json, args.breakdown
    _check_fleet(fleet, machines, users)
    check_agents(agents)
    tz = zone(args.timezone)
    q = ReportQuery(
        period=period,
        first_day=_day(since, "--since", tz),
        last_day=_day(until, "--until", tz),
        tz=tz,
        agents=agents,
        repo=args.repo,
        model=args.model,
        week_start=_WEEKDAYS.index(args.start_of_week),
        cost=args.cost_mode,
    )
    _, table = prices(ctx)
    if fleet:
        from helixd.cli.fleet import fleet_reader
        from helixd.query.fleet import report as run_fleet

        conn = fleet_reader(ctx)
        try:
            doc = run_fleet(conn, q, table, machines, users)
        finally:
            conn.close()
    else:
        con = reader(ctx)
        try:
            doc = run(con, q, table)
        finally:
            con.close()
    if fmt == "ccusage":
        from helixd.core.ccusage_shape import ccusage_shape

        agent = agents[0] if len(set(agents)) == 1 else "all"
        echo_json(ccusage_shape(doc, period, agent), sort_keys=True)
    elif as_json or fmt == "json":
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
            raise UsageError(
                f"{path}:{n}: want a JSON object with `timestamp` and `phase`", "--phases"
            )
        out.append((ts, phase))
    return out


def _existing_file(text: str) -> Path:
    """``--phases``: a file that exists (click's ``Path(exists=True, dir_okay=False)``)."""
    from argparse import ArgumentTypeError

    path = Path(text)
    if not path.exists():
        raise ArgumentTypeError(f"File {text!r} does not exist.")
    if path.is_dir():
        raise ArgumentTypeError(f"File {text!r} is a directory.")
    return path


def tokens_arguments(p: ArgumentParser) -> None:
    repo_option(p, required=True)
    p.add_argument("--since", help="Start, inclusive (7d, yesterday, ISO-8601; default: all).")
    p.add_argument("--until", help="End, exclusive (default: open).")
    agent_option(p)
    p.add_argument(
        "--phases",
        type=_existing_file,
        default=None,
        help="JSONL of {timestamp, phase} transitions: usage per phase over [t_i, t_i+1).",
    )
    timezone_option(p, "Zone for times typed.")
    json_flag(p)
    cost_option(p)
    describe(p, tokens)


def tokens(ctx: Context, args: Namespace) -> None:
    """Usage of every session and file of a repo in a time range, optionally per phase."""
    from helixd.query.usage import tokens as run

    repo, since, until, agents, phases = (
        args.repo,
        args.since,
        args.until,
        tuple(args.agents),
        args.phases,
    )
    as_json, cost_mode = args.as_json, args.cost_mode
    check_agents(agents)
    tz = zone(args.timezone)
    lo = instant(since, "--since", tz) or 0
    hi = instant(until, "--until", tz)
    transitions = _read_phases(phases) if phases else []
    _, table = prices(ctx)
    con = reader(ctx)
    try:
        result = run(con, repo, lo, hi, table, agents, transitions, cost_mode)
    finally:
        con.close()
    if as_json:
        echo_json(result)
        return
    t = result["total"]
    echo(
        f"{repo}: {len(result['sessions'])} sessions, {result['files']} files,"
        f" {t['totalTokens']:,} tokens (in {t['inputTokens']:,}, out {t['outputTokens']:,},"
        f" cache read {t['cacheReadTokens']:,}, write {t['cacheCreationTokens']:,}),"
        f" ${t['totalCost']:,.2f}"
    )
    for p in result["phases"]:
        echo(
            f"  {p['phase']:24} {p['start'] or '-':24} {p['totalTokens']:>14,}"
            f"  ${p['totalCost']:,.2f}  {p['turns']:,} turns, {p['bash_commands']:,} commands,"
            f" {p['file_edits']:,} edits"
        )
    if result["transcript_files"]:
        echo(f"transcript files ({len(result['transcript_files'])}):")
        for path in result["transcript_files"]:
            echo(f"  {path}")


# -- stats ---------------------------------------------------------------------------------
def stats_arguments(p: ArgumentParser) -> None:
    p.add_argument("--since", help="From this time (7d, yesterday, ISO-8601, …).")
    p.add_argument("--top", default=15, type=int_range(1, 1000), help="(default: 15)")
    timezone_option(p, "Zone for times typed.")
    json_flag(p)
    _fleet_options(p)
    describe(p, stats)


def stats(ctx: Context, args: Namespace) -> None:
    """Sessions and spend by agent, repo and model; tool success rates; most-edited
    files; test runs by framework; interventions and errors per session (with --fleet: of
    every machine, also by machine and user)."""
    from helixd.query.stats import stats as run

    fleet, machines, users, top = args.fleet, tuple(args.machines), tuple(args.users), args.top
    _check_fleet(fleet, machines, users)
    lo = instant(args.since, "--since", zone(args.timezone))
    _, table = prices(ctx)
    if fleet:
        from helixd.cli.fleet import fleet_reader
        from helixd.query.fleet import stats as run_fleet

        conn = fleet_reader(ctx)
        try:
            doc = run_fleet(conn, lo, top, table, machines, users)
        finally:
            conn.close()
    else:
        con = reader(ctx)
        try:
            doc = run(con, lo, top, table)
        finally:
            con.close()
    if args.as_json:
        echo_json(doc)
    else:
        from helixd.cli.tables import print_stats

        print_stats(doc)

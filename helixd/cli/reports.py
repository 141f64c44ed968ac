"""``helixctl report | tokens | stats``: token usage, cost and analytics from the store
(never from the agents' files), through ``helixd.query.usage`` and ``helixd.query.stats``.

Exit codes as the rest of ``helixctl``: 2 usage error, 3 no usable store.
"""

from __future__ import annotations

import time
from datetime import date, tzinfo
from pathlib import Path
from typing import Any

import click

from helixd.cli import complete
from helixd.cli.common import check_agents, cost_option, echo_json, instant, prices, reader, zone

PERIODS = ("daily", "weekly", "monthly", "session")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _day(value: str | None, hint: str, tz: tzinfo | None) -> date | None:
    if value is None:
        return None
    from helixd.core.when import BadTime, parse_day

    try:
        return parse_day(value, int(time.time() * 1000), tz)
    except BadTime as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


_FLEET = (
    click.option(
        "--fleet", is_flag=True, help="Every machine of the fleet's PostgreSQL ([fleet] dsn)."
    ),
    click.option("--machine", "machines", multiple=True, help="With --fleet: only this machine."),
    click.option("--user", "users", multiple=True, help="With --fleet: only this user."),
)


def _fleet_options(fn: Any) -> Any:
    for option in reversed(_FLEET):
        fn = option(fn)
    return fn


def _check_fleet(fleet: bool, machines: tuple[str, ...], users: tuple[str, ...]) -> None:
    if (machines or users) and not fleet:
        raise click.UsageError("--machine and --user need --fleet")


# -- report --------------------------------------------------------------------------------
@click.command()
@click.argument("period", type=click.Choice(PERIODS))
@click.option(
    "--since", default=None, help="First day, inclusive (YYYYMMDD, YYYY-MM-DD, 7d, yesterday)."
)
@click.option("--until", default=None, help="Last day, inclusive.")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    help="Only this agent (repeatable).",
    shell_complete=complete.agents,
)
@click.option(
    "--repo",
    default=None,
    help="Repo name, or a path (sessions at or under it).",
    shell_complete=complete.repos,
)
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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "ccusage"]),
    default="text",
    show_default=True,
    help="json: Helix's document (per-agent ccusage fields, agents, undated, prices);"
    " ccusage: exactly ccusage 20's unified JSON (period, agent, metadata).",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@cost_option
@_fleet_options
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
    fmt: str,
    as_json: bool,
    cost_mode: str,
    fleet: bool,
    machines: tuple[str, ...],
    users: tuple[str, ...],
) -> None:
    """Token usage and cost per day, week, month or session, from the store (with --fleet:
    of every machine, from the fleet's PostgreSQL, also by machine and user)."""
    from helixd.query.usage import ReportQuery
    from helixd.query.usage import report as run

    _check_fleet(fleet, machines, users)
    check_agents(agents)
    tz = zone(timezone)
    q = ReportQuery(
        period=period,
        first_day=_day(since, "--since", tz),
        last_day=_day(until, "--until", tz),
        tz=tz,
        agents=agents,
        repo=repo,
        model=model,
        week_start=_WEEKDAYS.index(start_of_week),
        cost=cost_mode,
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
        from helixd.core.usage_report import ccusage_shape

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
            raise click.BadParameter(
                f"{path}:{n}: want a JSON object with `timestamp` and `phase`",
                param_hint="--phases",
            )
        out.append((ts, phase))
    return out


@click.command()
@click.option(
    "--repo",
    required=True,
    help="Repo name, or a path (sessions at or under it).",
    shell_complete=complete.repos,
)
@click.option(
    "--since", default=None, help="Start, inclusive (7d, yesterday, ISO-8601; default: all)."
)
@click.option("--until", default=None, help="End, exclusive (default: open).")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    help="Only this agent (repeatable).",
    shell_complete=complete.agents,
)
@click.option(
    "--phases",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="JSONL of {timestamp, phase} transitions: usage per phase over [t_i, t_i+1).",
)
@click.option("--timezone", "-z", "timezone", default=None, help="Zone for times typed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@cost_option
@click.pass_context
def tokens(
    ctx: click.Context,
    repo: str,
    since: str | None,
    until: str | None,
    agents: tuple[str, ...],
    phases: Path | None,
    timezone: str | None,
    as_json: bool,
    cost_mode: str,
) -> None:
    """Usage of every session and file of a repo in a time range, optionally per phase."""
    from helixd.query.usage import tokens as run

    check_agents(agents)
    tz = zone(timezone)
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
    click.echo(
        f"{repo}: {len(result['sessions'])} sessions, {result['files']} files,"
        f" {t['totalTokens']:,} tokens (in {t['inputTokens']:,}, out {t['outputTokens']:,},"
        f" cache read {t['cacheReadTokens']:,}, write {t['cacheCreationTokens']:,}),"
        f" ${t['totalCost']:,.2f}"
    )
    for p in result["phases"]:
        click.echo(
            f"  {p['phase']:24} {p['start'] or '-':24} {p['totalTokens']:>14,}"
            f"  ${p['totalCost']:,.2f}  {p['turns']:,} turns, {p['bash_commands']:,} commands,"
            f" {p['file_edits']:,} edits"
        )
    if result["transcript_files"]:
        click.echo(f"transcript files ({len(result['transcript_files'])}):")
        for path in result["transcript_files"]:
            click.echo(f"  {path}")


# -- stats ---------------------------------------------------------------------------------
@click.command()
@click.option("--since", default=None, help="From this time (7d, yesterday, ISO-8601, …).")
@click.option("--top", default=15, show_default=True, type=click.IntRange(1, 1000))
@click.option("--timezone", "-z", "timezone", default=None, help="Zone for times typed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_fleet_options
@click.pass_context
def stats(
    ctx: click.Context,
    since: str | None,
    top: int,
    timezone: str | None,
    as_json: bool,
    fleet: bool,
    machines: tuple[str, ...],
    users: tuple[str, ...],
) -> None:
    """Sessions and spend by agent, repo and model; tool success rates; most-edited
    files; test runs by framework; interventions and errors per session (with --fleet: of
    every machine, also by machine and user)."""
    from helixd.query.stats import stats as run

    _check_fleet(fleet, machines, users)
    lo = instant(since, "--since", zone(timezone))
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
    if as_json:
        echo_json(doc)
    else:
        from helixd.cli.tables import print_stats

        print_stats(doc)

"""``helixctl search``: full-text search of every session, through ``helixd.query.search``."""

from __future__ import annotations

import os
import sys

import click

from helixd.cli import complete
from helixd.cli.common import EXIT_USAGE, check_agents, echo_json, fail, instant, reader, zone


def _marks(as_json: bool) -> tuple[str, str]:
    """Bold yellow on a terminal unless NO_COLOR is set (https://no-color.org), else [ ]."""
    color = not as_json and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    return ("\x1b[1;33m", "\x1b[0m") if color else ("[", "]")


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--fts", is_flag=True, help='QUERY is FTS5 syntax: "a phrase", prefix*, AND/OR/NOT.')
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
@click.option("--since", default=None, help="From this time (7d, yesterday, ISO-8601, …).")
@click.option("--until", default=None, help="Before this time.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    help="Only events of this kind: user_msg, assistant_msg, thinking, tool_call, edit,"
    " test_run, error, human_intervention (repeatable).",
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--offset", default=0, type=click.IntRange(0), help="Skip this many first hits.")
@click.option("--timezone", "-z", "timezone", default=None, help="Zone for times typed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    fts: bool,
    agents: tuple[str, ...],
    repo: str | None,
    since: str | None,
    until: str | None,
    kinds: tuple[str, ...],
    limit: int,
    offset: int,
    timezone: str | None,
    as_json: bool,
) -> None:
    """Search every session for QUERY, best matches first.  Words are searched as typed
    (all of them, in any order; `next.js`, `foo-bar`, `src/app/page.tsx` are words);
    --fts takes SQLite FTS5 syntax instead."""
    from helixd.query.search import SearchError, SearchQuery
    from helixd.query.search import search as run

    check_agents(agents)
    tz = zone(timezone)
    q = SearchQuery(
        text=" ".join(query),
        fts=fts,
        agents=agents,
        repo=repo,
        since=instant(since, "--since", tz),
        until=instant(until, "--until", tz),
        kinds=kinds,
        limit=limit,
        offset=offset,
    )
    con = reader(ctx)
    try:
        hits = run(con, q, _marks(as_json))
    except SearchError as exc:
        fail(ctx, f"search {q.text!r}: {exc}", EXIT_USAGE)
    finally:
        con.close()
    if as_json:
        echo_json(hits)
        return
    if not hits:
        click.echo("no matches", err=True)
        return
    for h in hits:
        when = (h["timestamp"] or "?")[:16].replace("T", " ")
        where = f"#{h['seq']}" if h["seq"] is not None else "(evicted)"
        click.echo(f"{when}  {h['session_uid']} {where}  {h['repo'] or '-'}  {h['kind']}")
        click.echo(f"    {h['snippet']}")

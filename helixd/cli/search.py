"""``helixctl search``: full-text search of every session, through ``helixd.query.search``."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from helixd.cli.common import (
    EXIT_USAGE,
    Context,
    agent_option,
    check_agents,
    describe,
    echo_json,
    fail,
    instant,
    int_range,
    json_flag,
    reader,
    repo_option,
    timezone_option,
    zone,
)
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def _marks(as_json: bool) -> tuple[str, str]:
    """Bold yellow on a terminal unless NO_COLOR is set (https://no-color.org), else [ ]."""
    color = not as_json and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    return ("\x1b[1;33m", "\x1b[0m") if color else ("[", "]")


def search_arguments(p: ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", nargs="+")
    p.add_argument(
        "--fts", action="store_true", help='QUERY is FTS5 syntax: "a phrase", prefix*, AND/OR/NOT.'
    )
    agent_option(p)
    repo_option(p)
    p.add_argument("--since", help="From this time (7d, yesterday, ISO-8601, …).")
    p.add_argument("--until", help="Before this time.")
    p.add_argument(
        "--kind",
        dest="kinds",
        metavar="KIND",
        action="append",
        default=[],
        help="Only events of this kind: user_msg, assistant_msg, thinking, tool_call, edit,"
        " test_run, error, human_intervention (repeatable).",
    )
    p.add_argument("--limit", default=20, type=int_range(1, 10_000), help="(default: 20)")
    p.add_argument("--offset", default=0, type=int_range(0), help="Skip this many first hits.")
    timezone_option(p, "Zone for times typed.")
    json_flag(p)
    describe(p, search)


def search(ctx: Context, args: Namespace) -> None:
    """Search every session for QUERY, best matches first.  Words are searched as typed
    (all of them, in any order; `next.js`, `foo-bar`, `src/app/page.tsx` are words);
    --fts takes SQLite FTS5 syntax instead."""
    from helixd.query.search import SearchError, SearchQuery
    from helixd.query.search import search as run

    query, fts, agents, repo = args.query, args.fts, tuple(args.agents), args.repo
    since, until, kinds, as_json = args.since, args.until, tuple(args.kinds), args.as_json
    limit, offset = args.limit, args.offset
    check_agents(agents)
    tz = zone(args.timezone)
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
        echo("no matches", err=True)
        return
    for h in hits:
        when = (h["timestamp"] or "?")[:16].replace("T", " ")
        where = f"#{h['seq']}" if h["seq"] is not None else "(evicted)"
        echo(f"{when}  {h['session_uid']} {where}  {h['repo'] or '-'}  {h['kind']}")
        echo(f"    {h['snippet']}")

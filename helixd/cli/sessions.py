"""``helixctl sessions | lookup | env``: which sessions there are, one session's digest, and
its spec §11.1 export lines.  Answers from the store through ``helixd.query.sessions``."""

from __future__ import annotations

from typing import Any

import click

from helixd.cli import complete
from helixd.cli.common import (
    EXIT_NOT_FOUND,
    check_agents,
    cost_option,
    echo_json,
    instant,
    prices,
    read_settings,
    reader,
    zone,
)


def _resolved_or_exit(ctx: click.Context, res: Any, ref: str) -> None:
    if res.status == "none":
        click.echo(f"no session matches {ref!r}", err=True)
        ctx.exit(EXIT_NOT_FOUND)
    if res.status == "ambiguous":
        click.echo(f"{ref!r} is ambiguous; candidates:", err=True)
        for uid in res.candidates:
            click.echo(f"  {uid}", err=True)
        ctx.exit(EXIT_NOT_FOUND)


@click.command()
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
@click.option("--since", default=None, help="Active since (7d, yesterday, YYYY-MM-DD, ISO-8601).")
@click.option("--until", default=None, help="Started before this time.")
@click.option("--outcome", default=None, help="Only this digest outcome (success, fail, …).")
@click.option("--model", default=None, help="Only sessions that used this model.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(0), help="0: all.")
@click.option("--offset", default=0, type=click.IntRange(0), help="Skip this many first.")
@click.option(
    "--all", "everything", is_flag=True, help="Every session, without a limit, empty ones too."
)
@click.option("--timezone", "-z", "timezone", default=None, help="Zone for dates shown and typed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of sessions).")
@cost_option
@click.pass_context
def sessions(
    ctx: click.Context,
    agents: tuple[str, ...],
    repo: str | None,
    since: str | None,
    until: str | None,
    outcome: str | None,
    model: str | None,
    limit: int,
    offset: int,
    everything: bool,
    timezone: str | None,
    as_json: bool,
    cost_mode: str,
) -> None:
    """List sessions, newest first, with their cost; those without a known time come last.
    Sessions without any message (summary-only files and the like) show with --all."""
    from helixd.query.sessions import SessionFilter, list_sessions

    check_agents(agents)
    tz = zone(timezone)
    f = SessionFilter(
        agents=agents,
        repo=repo,
        since=instant(since, "--since", tz),
        until=instant(until, "--until", tz),
        outcome=outcome,
        model=model,
        include_empty=everything,
    )
    _, table = prices(ctx)
    con = reader(ctx)
    try:
        limited = None if everything or limit == 0 else limit
        page = list_sessions(con, f, table, limited, offset, cost_mode)
    finally:
        con.close()
    if as_json:
        echo_json(page.sessions)
    elif not page.total:
        click.echo(
            "no sessions match" if offset or any(vars_of(f)) else "no sessions yet", err=True
        )
    else:
        from helixd.cli.printers import print_sessions

        print_sessions(page, tz)
    if not as_json and page.shown < page.total:
        click.echo(
            f"{page.shown} of {page.total} shown (--limit N, --offset N or --all for more)",
            err=True,
        )


def vars_of(f: Any) -> list[Any]:
    return [f.agents, f.repo, f.since, f.until, f.outcome, f.model]


@click.command()
@click.argument("uid", shell_complete=complete.sessions)
@click.option("--json", "as_json", is_flag=True, help="Print the digest as JSON.")
@cost_option
@click.pass_context
def lookup(ctx: click.Context, uid: str, as_json: bool, cost_mode: str) -> None:
    """Print one session's digest (no ingest is run).  UID is `agent:<id>`, the bare id,
    or a unique prefix.  Exit 0 when found, 1 when not."""
    from helixd.query.sessions import lookup as find
    from helixd.query.sessions import with_cost_mode

    con = reader(ctx)
    try:
        found = find(con, uid)
    finally:
        con.close()
    _resolved_or_exit(ctx, found.resolution, uid)
    if found.digest is None:
        assert found.resolution.session is not None
        click.echo(f"session {found.resolution.session['uid']} has no digest yet", err=True)
        ctx.exit(EXIT_NOT_FOUND)
    digest = with_cost_mode(found.digest, cost_mode)
    if as_json:
        echo_json(digest)
    else:
        from helixd.cli.printers import print_digest

        print_digest(digest)


@click.command()
@click.argument("uid", shell_complete=complete.sessions)
@click.pass_context
def env(ctx: click.Context, uid: str) -> None:
    """Print the HELIX_* export lines of one session (spec §11.1), for
    `eval "$(helixctl env UID)"`.  Exit 0 found, 1 not found or no digest yet."""
    from helixd.query.env import export_lines
    from helixd.query.sessions import lookup as find

    con = reader(ctx)
    try:
        found = find(con, uid)
    finally:
        con.close()
    _resolved_or_exit(ctx, found.resolution, uid)
    if found.digest is None:
        assert found.resolution.session is not None
        click.echo(f"session {found.resolution.session['uid']} has no digest yet", err=True)
        ctx.exit(EXIT_NOT_FOUND)
    click.echo("\n".join(export_lines(found.digest, read_settings(ctx).store_db)))


@click.command()
@click.argument("uid", shell_complete=complete.sessions)
@click.option("--tail", "tail", type=click.IntRange(1), default=None, help="The last N events.")
@click.option("--from", "start", type=int, default=None, help="From this event number on.")
@click.option("--after", type=int, default=None, help="The events after this number.")
@click.option("--limit", default=500, show_default=True, type=click.IntRange(1, 2000))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
@click.option("--thinking", is_flag=True, help="Unfold thinking.")
@click.option("--raw", is_flag=True, help="The stored (redacted) source lines, as JSONL.")
@click.option("--timezone", "-z", "timezone", default=None, help="Zone for times shown.")
@click.pass_context
def show(
    ctx: click.Context,
    uid: str,
    tail: int | None,
    start: int | None,
    after: int | None,
    limit: int,
    fmt: str,
    thinking: bool,
    raw: bool,
    timezone: str | None,
) -> None:
    """Read a session: the conversation with tool calls, their inputs and outputs (while the
    raw lines are kept; marked evicted after), edits as diffs, thinking folded.  Paged on a
    terminal.  UID is `agent:<id>`, the bare id, or a unique prefix."""
    import dataclasses

    from helixd.query.sessions import resolve
    from helixd.query.transcript import raw_lines, transcript

    tz = zone(timezone)
    con = reader(ctx)
    try:
        res = resolve(con, uid)
        _resolved_or_exit(ctx, res, uid)
        assert res.session is not None
        if start is not None:
            after = start - 1
        page = transcript(
            con,
            res.session,
            after=after,
            tail=tail is not None,
            limit=tail or limit,
            payloads=not raw,
        )
        lines = raw_lines(con, page) if raw else None
    finally:
        con.close()
    if lines is not None:
        import sys

        for line in lines:
            sys.stdout.buffer.write(line + b"\n")
        return
    if fmt == "json":
        echo_json({**dataclasses.asdict(page), "session": page.session})
        return
    from helixd.cli.transcript_view import render_markdown, render_text

    text = (render_markdown if fmt == "markdown" else render_text)(page, tz, thinking)
    import sys

    if sys.stdout.isatty() and fmt == "text":
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)

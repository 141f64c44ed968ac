"""``helixctl sessions | lookup | env | show``: which sessions there are, one session's
digest, its spec §11.1 export lines, and its transcript.  Answers from the store through
``helixd.query.sessions``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from helixd.cli.common import (
    EXIT_NOT_FOUND,
    Context,
    agent_option,
    check_agents,
    cost_option,
    describe,
    echo_json,
    instant,
    int_range,
    json_flag,
    prices,
    read_settings,
    reader,
    repo_option,
    session_argument,
    timezone_option,
    zone,
)
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def _resolved_or_exit(ctx: Context, res: Any, ref: str) -> None:
    if res.status == "none":
        echo(f"no session matches {ref!r}", err=True)
        ctx.exit(EXIT_NOT_FOUND)
    if res.status == "ambiguous":
        echo(f"{ref!r} is ambiguous; candidates:", err=True)
        for uid in res.candidates:
            echo(f"  {uid}", err=True)
        ctx.exit(EXIT_NOT_FOUND)


def sessions_arguments(p: ArgumentParser) -> None:
    agent_option(p)
    repo_option(p)
    p.add_argument("--since", help="Active since (7d, yesterday, YYYY-MM-DD, ISO-8601).")
    p.add_argument("--until", help="Started before this time.")
    p.add_argument("--outcome", help="Only this digest outcome (success, fail, …).")
    p.add_argument("--model", help="Only sessions that used this model.")
    p.add_argument("--limit", default=50, type=int_range(0), help="0: all.  (default: 50)")
    p.add_argument("--offset", default=0, type=int_range(0), help="Skip this many first.")
    p.add_argument(
        "--all",
        dest="everything",
        action="store_true",
        help="Every session, without a limit, empty ones too.",
    )
    timezone_option(p, "Zone for dates shown and typed.")
    json_flag(p, "Print JSON (a list of sessions).")
    cost_option(p)
    describe(p, sessions)


def sessions(ctx: Context, args: Namespace) -> None:
    """List sessions, newest first, with their cost; those without a known time come last.
    Sessions without any message (summary-only files and the like) show with --all."""
    from helixd.query.sessions import SessionFilter, list_sessions

    agents, repo, since, until = tuple(args.agents), args.repo, args.since, args.until
    outcome, model, limit, offset = args.outcome, args.model, args.limit, args.offset
    everything, as_json, cost_mode = args.everything, args.as_json, args.cost_mode
    check_agents(agents)
    tz = zone(args.timezone)
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
        echo("no sessions match" if offset or any(vars_of(f)) else "no sessions yet", err=True)
    else:
        from helixd.cli.printers import print_sessions

        print_sessions(page, tz)
    if not as_json and page.shown < page.total:
        echo(
            f"{page.shown} of {page.total} shown (--limit N, --offset N or --all for more)",
            err=True,
        )


def vars_of(f: Any) -> list[Any]:
    return [f.agents, f.repo, f.since, f.until, f.outcome, f.model]


def lookup_arguments(p: ArgumentParser) -> None:
    session_argument(p)
    json_flag(p, "Print the digest as JSON.")
    cost_option(p)
    describe(p, lookup)


def lookup(ctx: Context, args: Namespace) -> None:
    """Print one session's digest (no ingest is run).  UID is `agent:<id>`, the bare id,
    or a unique prefix.  Exit 0 when found, 1 when not."""
    from helixd.query.sessions import lookup as find
    from helixd.query.sessions import with_cost_mode

    uid = args.uid
    con = reader(ctx)
    try:
        found = find(con, uid)
    finally:
        con.close()
    _resolved_or_exit(ctx, found.resolution, uid)
    if found.digest is None:
        assert found.resolution.session is not None
        echo(f"session {found.resolution.session['uid']} has no digest yet", err=True)
        ctx.exit(EXIT_NOT_FOUND)
    digest = with_cost_mode(found.digest, args.cost_mode)
    if args.as_json:
        echo_json(digest)
    else:
        from helixd.cli.printers import print_digest

        print_digest(digest)


def env_arguments(p: ArgumentParser) -> None:
    session_argument(p)
    describe(p, env)


def env(ctx: Context, args: Namespace) -> None:
    """Print the HELIX_* export lines of one session (spec §11.1), for
    `eval "$(helixctl env UID)"`.  Exit 0 found, 1 not found or no digest yet."""
    from helixd.query.env import export_lines
    from helixd.query.sessions import lookup as find

    uid = args.uid
    con = reader(ctx)
    try:
        found = find(con, uid)
    finally:
        con.close()
    _resolved_or_exit(ctx, found.resolution, uid)
    if found.digest is None:
        assert found.resolution.session is not None
        echo(f"session {found.resolution.session['uid']} has no digest yet", err=True)
        ctx.exit(EXIT_NOT_FOUND)
    echo("\n".join(export_lines(found.digest, read_settings(ctx).store_db)))


def show_arguments(p: ArgumentParser) -> None:
    session_argument(p)
    p.add_argument("--tail", type=int_range(1), default=None, help="The last N events.")
    p.add_argument(
        "--from", dest="start", type=int, default=None, help="From this event number on."
    )
    p.add_argument("--after", type=int, default=None, help="The events after this number.")
    p.add_argument("--limit", default=500, type=int_range(1, 2000), help="(default: 500)")
    p.add_argument(
        "--format",
        dest="fmt",
        choices=["text", "markdown", "json"],
        default="text",
        help="(default: text)",
    )
    p.add_argument("--thinking", action="store_true", help="Unfold thinking.")
    p.add_argument(
        "--raw", action="store_true", help="The stored (redacted) source lines, as JSONL."
    )
    timezone_option(p, "Zone for times shown.")
    describe(p, show)


def show(ctx: Context, args: Namespace) -> None:
    """Read a session: the conversation with tool calls, their inputs and outputs (while the
    raw lines are kept; marked evicted after), edits as diffs, thinking folded.  Paged on a
    terminal.  UID is `agent:<id>`, the bare id, or a unique prefix."""
    from helixd.query.sessions import resolve
    from helixd.query.transcript import raw_lines, transcript

    uid, tail, start, after, limit = args.uid, args.tail, args.start, args.after, args.limit
    fmt, thinking, raw = args.fmt, args.thinking, args.raw
    tz = zone(args.timezone)
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
        echo_json({**page._asdict(), "session": page.session})
        return
    from helixd.cli.transcript_view import render_markdown, render_text

    text = (render_markdown if fmt == "markdown" else render_text)(page, tz, thinking)
    import sys

    if sys.stdout.isatty() and fmt == "text":
        from helixd.cli.output import page as through_pager

        through_pager(text)
    else:
        echo(text, nl=False)

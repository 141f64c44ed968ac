"""``helixctl mcp``: serve the memory over MCP (stdio), and register that server with the
agents (``mcp install | uninstall | status``) with the same strict, reversible editing as
``hooks install``: strict parse (exit 2, nothing written), backup, atomic replace,
``--dry-run`` diff, exact removal.

Registered as: Claude Code ``mcpServers.helix`` in ``~/.claude.json`` (user scope), Codex
``[mcp_servers.helix]`` in ``$CODEX_HOME/config.toml``, Gemini ``mcpServers.helix`` in
``~/.gemini/settings.json`` — each runs ``<this helixctl> mcp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helixd.cli.common import Context, describe, prices, read_settings
from helixd.cli.install import _agents_argument, _dry_run_option, _exe_option, _subcommand
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def mcp_arguments(p: ArgumentParser) -> None:
    describe(p, mcp)
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND")  # none: serve
    install = _subcommand(sub, "install", mcp_install)
    _agents_argument(install)
    _dry_run_option(install)
    _exe_option(install)
    uninstall = _subcommand(sub, "uninstall", mcp_uninstall)
    _agents_argument(uninstall)
    _dry_run_option(uninstall)
    _exe_option(uninstall)
    status = _subcommand(sub, "status", mcp_status)
    _agents_argument(status)
    _exe_option(status)


def mcp(ctx: Context, args: Namespace) -> None:
    """Serve Helix over MCP on stdin/stdout (what agents run), or install it into them.

    Read-only tools: search, lookup, list_sessions, read_transcript, usage_report,
    repo_tokens, stats.  See docs/mcp.md.
    """
    from helixd.mcp.server import run

    store_db = read_settings(ctx).store_db
    run(store_db, prices(ctx))


def _change(action: str, agents: tuple[str, ...], dry_run: bool, exe: str | None) -> None:
    from helixd.adapters.hooktargets import MCP_TARGETS
    from helixd.cli.install import _change_hooks

    _change_hooks(action, agents, dry_run, exe, table=MCP_TARGETS)


def mcp_install(ctx: Context, args: Namespace) -> None:
    """Register `helixctl mcp` with Claude Code, Codex and Gemini (the installed ones when
    none is named).  An entry named `helix` of the user's own is refused (exit 2)."""
    _change("install", tuple(args.agents), args.dry_run, args.exe)


def mcp_uninstall(ctx: Context, args: Namespace) -> None:
    """Remove exactly the entries `mcp install` added."""
    _change("uninstall", tuple(args.agents), args.dry_run, args.exe)


def mcp_status(ctx: Context, args: Namespace) -> None:
    """Per agent: installed, outdated, absent, unreadable."""
    from pathlib import Path

    from helixd.adapters.hooktargets import MCP_TARGETS
    from helixd.cli.install import _resolve_exe, _targets, _tilde
    from helixd.ops import hooks as hk

    home = Path.home()
    for t in _targets(tuple(args.agents), _resolve_exe(args.exe), create=False, table=MCP_TARGETS):
        state: str
        try:
            state, why = hk.state(t), ""
        except hk.HookFileError as exc:
            state, why = "unreadable", f" ({exc})"
        echo(f"{t.agent:<8} {state:<11} {_tilde(t.path, home)}{why}")


def statusline_arguments(p: ArgumentParser) -> None:
    describe(p, statusline)


def statusline(ctx: Context, args: Namespace) -> None:
    """One line for Claude Code's status line: this session's cost and tokens, today's
    spend, the burn rate.  Reads the JSON Claude Code pipes in; always exits 0.  Set it up
    with `helixctl hooks install --statusline`."""
    from helixd.cli.statusline import line

    config = ctx.config
    try:
        text = line(None if config is None else str(config))
    except Exception as exc:  # never fail the agent's prompt line
        text = f"helix: {type(exc).__name__}: {str(exc)[:100]}"
    echo(text)

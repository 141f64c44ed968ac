"""``helixctl``: the command-line face of Helix, on the standard library's ``argparse``.

Exit codes: 0 success; 1 not found; 2 usage or configuration error; 3 the store (or the
daemon, for the commands that need it) is missing or unusable.  Data goes to stdout (JSON
with ``--json``), progress and diagnostics to stderr.

One design for every command: ``COMMANDS`` names each command's module, the function there
that adds its arguments (and sets the function that runs it), and its one-line summary.
argparse parses the whole argv every time; a command's module is imported when argparse
reaches that command's name (``LazyCommands``), so ``helixctl -h`` imports none and a
command pays for its own module only — whose heavy imports wait inside the function that
runs.  Shell completion (argcomplete) loads only when the shell asks (``_ARGCOMPLETE`` in
the environment).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any, Final, NamedTuple

from helixd import __version__


class Command(NamedTuple):
    module: str
    arguments: str  # the module's function that adds the command's arguments
    summary: str  # for `helixctl -h`, which imports no command


COMMANDS: Final[dict[str, Command]] = {
    "analyze": Command(
        "helixd.cli.analyze",
        "analyze_arguments",
        "Rebuild digests and signals (changed sessions, named ones, or --all).",
    ),
    "completion": Command(
        "helixd.cli.complete", "completion_arguments", "Print the completion script for SHELL."
    ),
    "config": Command(
        "helixd.cli.configcmd",
        "config_arguments",
        "Show where the config is, print the example, or check it.",
    ),
    "doctor": Command(
        "helixd.cli.doctor",
        "doctor_arguments",
        "Check the daemon, service, hooks, store, sources and fleet; one line each, with a fix.",
    ),
    "env": Command(
        "helixd.cli.sessions",
        "env_arguments",
        "Print the HELIX_* export lines of one session (spec §11.1).",
    ),
    "evict": Command(
        "helixd.cli.retention",
        "evict_arguments",
        "Run the retention pass (raw tier over its cap, raw older than its age).",
    ),
    "fleet": Command(
        "helixd.cli.fleet",
        "fleet_arguments",
        "Mirror this machine's Tier 2 into the team's PostgreSQL; push, status, migrate, off.",
    ),
    "flush": Command(
        "helixd.cli.daemonctl", "flush_arguments", "Wait until the daemon's work queue is empty."
    ),
    "hook": Command(
        "helixd.cli.daemonctl",
        "hook_arguments",
        "What agents' hooks run: hand AGENT's payload to the daemon (always exits 0).",
    ),
    "hooks": Command(
        "helixd.cli.install",
        "hooks_arguments",
        "Install, remove or show Helix's hooks in the agents' settings files.",
    ),
    "ingest": Command(
        "helixd.cli.ingest",
        "ingest_arguments",
        "Backfill every transcript once; a second run reads only what is new.",
    ),
    "lookup": Command(
        "helixd.cli.sessions", "lookup_arguments", "Print one session's digest (no ingest is run)."
    ),
    "mcp": Command(
        "helixd.cli.mcpcmd",
        "mcp_arguments",
        "Serve Helix over MCP on stdin/stdout, or install it into the agents.",
    ),
    "ping": Command(
        "helixd.cli.daemonctl",
        "ping_arguments",
        "Ask the daemon whether it is alive (exit 3 when it does not answer).",
    ),
    "renormalize": Command(
        "helixd.cli.analyze",
        "renormalize_arguments",
        "Rebuild the rows and digests an older adapter version produced.",
    ),
    "report": Command(
        "helixd.cli.reports",
        "report_arguments",
        "Token usage and cost per day, week, month or session.",
    ),
    "rescan": Command(
        "helixd.cli.daemonctl", "rescan_arguments", "Ask the daemon for a full reconcile scan now."
    ),
    "search": Command(
        "helixd.cli.search",
        "search_arguments",
        "Search every session for QUERY, best matches first.",
    ),
    "service": Command(
        "helixd.cli.install",
        "service_arguments",
        "Install, remove or show the helixd user service (systemd or launchd).",
    ),
    "sessions": Command(
        "helixd.cli.sessions", "sessions_arguments", "List sessions, newest first, with their cost."
    ),
    "show": Command(
        "helixd.cli.sessions",
        "show_arguments",
        "Read a session: the conversation, tool calls, edits, thinking.",
    ),
    "stats": Command(
        "helixd.cli.reports",
        "stats_arguments",
        "Sessions and spend by agent, repo and model; tools, files, tests, errors.",
    ),
    "status": Command(
        "helixd.cli.daemonctl",
        "status_arguments",
        "Daemon up or down, what it watches, ingest lag, the store, what keeps failing.",
    ),
    "statusline": Command(
        "helixd.cli.mcpcmd",
        "statusline_arguments",
        "One line for Claude Code's status line: cost, tokens, today's spend.",
    ),
    "tokens": Command(
        "helixd.cli.reports",
        "tokens_arguments",
        "Usage of every session and file of a repo in a time range, optionally per phase.",
    ),
    "web": Command(
        "helixd.cli.web",
        "web_arguments",
        "Print (and open) the address of the dashboard helixd serves; --fleet: serve the fleet's.",
    ),
}


class Parser(argparse.ArgumentParser):
    """Every parser of ``helixctl``: no abbreviated options (click took none), docstrings'
    line breaks kept in help."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(**kwargs)


class _CommandParsers(dict[str, argparse.ArgumentParser]):
    """The command parsers; a command's arguments are added (its module imported) the first
    time argparse — or argcomplete — looks it up."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: set[str] = set()

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        parser = super().__getitem__(name)
        if name not in self.loaded:
            self.loaded.add(name)
            spec = COMMANDS[name]
            getattr(importlib.import_module(spec.module), spec.arguments)(parser)
            parser.set_defaults(command_parser=parser)
        return parser


class LazyCommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands action whose parsers are filled in when used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _CommandParsers()


def build_parser() -> Parser:
    parser = Parser(
        prog="helixctl",
        description="Helix: a durable, searchable memory of your AI coding sessions.",
    )
    parser.add_argument("--version", action="version", version=f"helixctl, version {__version__}")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="TOML config file (default: the platform's user config dir).",
    )
    commands = parser.add_subparsers(
        action=LazyCommands, dest="command", metavar="COMMAND", required=True
    )
    for name, spec in COMMANDS.items():
        commands.add_parser(name, help=spec.summary, allow_abbrev=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's), run the command; its exit code (a command
    that ends otherwise raises ``SystemExit``)."""
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete's protocol)
        from helixd.cli.complete import autocomplete

        autocomplete(parser)
    args = parser.parse_args(argv)
    from helixd.cli.common import Context, UsageError, guard_store_faults

    if args.config is not None and args.config.is_dir():
        parser.error(f"argument --config: {args.config} is a directory")
    ctx = Context(args.config)
    try:
        guard_store_faults(ctx, lambda: args.run(ctx, args))
    except UsageError as exc:
        command: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        command.error(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())

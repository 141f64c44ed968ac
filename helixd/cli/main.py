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
from collections.abc import Callable
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
        "One line for the agent's status line: this session's cost and tokens, today's spend.",
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


def terminal_columns(fallback: int = 80) -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it ($COLUMNS, then the
    terminal of stdout, else ``fallback``), without importing shutil (~4 ms with the bz2 and
    lzma it loads)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or fallback


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's (docstrings' line breaks kept), its width found without importing shutil
    (~4 ms with the bz2 and lzma it loads): argparse makes one for every argument added."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class Parser(argparse.ArgumentParser):
    """Every parser of ``helixctl``: no abbreviated options (click took none).  A command's
    (leaf) parser also takes its list argument's values wherever they stand, as click did
    (``search foo --fts bar``: argparse alone stops a ``*``/``+`` positional at the first
    option), and names an unknown option with its own usage line."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        ns, extras = super().parse_known_args(args, namespace)
        if self._subparsers is not None:  # not a command's own parser
            return ns, extras
        ns.command_parser = self
        listed = [a for a in self._actions if not a.option_strings and a.nargs in ("*", "+")]
        if extras and listed and not any(e.startswith("-") for e in extras):
            action = listed[-1]
            values = list(getattr(ns, action.dest) or ()) + list(self._get_values(action, extras))
            setattr(ns, action.dest, values)
            extras = []
        if extras and "_ARGCOMPLETE" not in os.environ:  # argcomplete parses partial lines
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras


class _CommandParsers(dict[str, Any]):
    """The commands' parsers by name.  A command's parser is made — its module imported, its
    arguments added — the first time argparse (or argcomplete) looks the command up; until
    then only its name is here."""

    def __init__(self, make: Callable[[str], argparse.ArgumentParser]) -> None:
        super().__init__(dict.fromkeys(COMMANDS))
        self._make = make

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        parser = super().__getitem__(name)
        if parser is None:
            parser = self[name] = self._make(name)
        assert isinstance(parser, argparse.ArgumentParser)
        return parser


class LazyCommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands action of ``COMMANDS``: each listed in help by its summary, its parser
    made when used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _CommandParsers(self._command_parser)
        for name, spec in COMMANDS.items():
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), spec.summary))

    def _command_parser(self, name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._parser_class(prog=f"{self._prog_prefix} {name}")
        spec = COMMANDS[name]
        getattr(importlib.import_module(spec.module), spec.arguments)(parser)
        parser.set_defaults(command_parser=parser)
        return parser


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
    parser.add_subparsers(
        action=LazyCommands, prog="helixctl", dest="command", metavar="COMMAND", required=True
    )
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
    except (KeyboardInterrupt, EOFError):  # Ctrl-C (`web --fleet` runs until then), as click did
        from helixd.cli.output import echo

        echo(err=True)  # closes the terminal's ^C
        echo("Aborted!", err=True)
        return 1
    except BrokenPipeError:  # the reader went away (`helixctl sessions | head`): as click did
        _silence_stdout()
        return 1
    return 0


def _silence_stdout() -> None:
    """stdout to /dev/null, so the interpreter's last flush meets no closed pipe either."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's buffer)
        pass


if __name__ == "__main__":
    sys.exit(main())

"""``helixctl``: the command-line face of Helix.

Exit codes: 0 success; 1 not found; 2 usage or configuration error; 3 the store (or the
daemon, for the commands that need it) is missing or unusable.  Data goes to stdout (JSON
with ``--json``), progress and diagnostics to stderr.

Commands load lazily: the group knows each command's module and imports it only when that
command runs (or when help lists them), so a command costs the interpreter, click and what
it uses — a read command its query and sqlite3, ``hook`` the standard library.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Final

import click

from helixd import __version__

# command -> (module, attribute); one module per group of commands that share a job.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "ingest": ("helixd.cli.ingest", "ingest"),
    "sessions": ("helixd.cli.sessions", "sessions"),
    "lookup": ("helixd.cli.sessions", "lookup"),
    "env": ("helixd.cli.sessions", "env"),
    "show": ("helixd.cli.sessions", "show"),
    "search": ("helixd.cli.search", "search"),
    "report": ("helixd.cli.reports", "report"),
    "tokens": ("helixd.cli.reports", "tokens"),
    "stats": ("helixd.cli.reports", "stats"),
    "status": ("helixd.cli.daemonctl", "status"),
    "ping": ("helixd.cli.daemonctl", "ping"),
    "rescan": ("helixd.cli.daemonctl", "rescan"),
    "flush": ("helixd.cli.daemonctl", "flush"),
    "hook": ("helixd.cli.daemonctl", "hook"),
    "analyze": ("helixd.cli.analyze", "analyze"),
    "renormalize": ("helixd.cli.analyze", "renormalize"),
    "evict": ("helixd.cli.retention", "evict"),
    "hooks": ("helixd.cli.install", "hooks"),
    "service": ("helixd.cli.install", "service"),
    "doctor": ("helixd.cli.doctor", "doctor"),
    "config": ("helixd.cli.configcmd", "config"),
    "mcp": ("helixd.cli.mcpcmd", "mcp"),
    "statusline": ("helixd.cli.mcpcmd", "statusline"),
    "completion": ("helixd.cli.complete", "completion"),
    "web": ("helixd.cli.web", "web"),
    "fleet": ("helixd.cli.fleet", "fleet"),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when used (click's documented pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        command = getattr(importlib.import_module(spec[0]), spec[1])
        assert isinstance(command, click.Command), spec
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Every command: a store fault ends it with one line naming the condition and its
        fix, exit 3 (``helixd.cli.common.guard_store_faults``), never a traceback."""
        from helixd.cli.common import guard_store_faults

        return guard_store_faults(ctx, lambda: super(LazyGroup, self).invoke(ctx))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="helixctl")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML config file (default: the platform's user config dir).",
)
@click.pass_context
def main(ctx: click.Context, config_path: Path | None) -> None:
    """Helix: a durable, searchable memory of your AI coding sessions."""
    ctx.ensure_object(dict)
    ctx.obj["config"] = config_path


if __name__ == "__main__":
    main()

"""``helixctl config path | example | check``: where the settings come from, every key with
its default (the example file shipped in the package), and a check of the whole file with the
full settings model (the one the daemon, ``ingest``, ``analyze``, ``evict`` and ``doctor``
build).

Exit codes: 0 fine; 2 the configuration is invalid (the message names the key, its section
and the closest valid key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helixd.cli.common import Context, describe, load_settings, summary
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def config_arguments(p: ArgumentParser) -> None:
    p.description = "Show where the config is, print the example, or check it."
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    for name, run in (("path", config_path), ("example", config_example), ("check", config_check)):
        describe(sub.add_parser(name, help=summary(run)), run)


def config_path(ctx: Context, args: Namespace) -> None:
    """The config file in use (--config, $HELIX_CONFIG, or the user config dir)."""
    from helixd.paths import config_path_in_use

    path = config_path_in_use(ctx.config)
    echo(f"{path}{'' if path.is_file() else ' (absent: defaults apply)'}")


def config_example(ctx: Context, args: Namespace) -> None:
    """Print the example config: every key with its default and a comment."""
    from helixd.paths import data_file

    echo(data_file("helix.example.toml").read_text(), nl=False)


def config_check(ctx: Context, args: Namespace) -> None:
    """Validate the whole config (file and HELIX_* variables); exit 2 naming the problem."""
    from helixd.paths import config_path_in_use

    settings = load_settings(ctx)
    path = config_path_in_use(ctx.config)
    where = str(path) if path.is_file() else f"defaults ({path} absent)"
    echo(f"config ok: {where}; store {settings.store.db}")

"""``helixctl config path | example | check``: where the settings come from, every key with
its default (the example file shipped in the package), and a check of the whole file with the
full settings model (the one the daemon, ``ingest``, ``analyze``, ``evict`` and ``doctor``
build).

Exit codes: 0 fine; 2 the configuration is invalid (the message names the key, its section
and the closest valid key).
"""

from __future__ import annotations

import click

from helixd.cli.common import load_settings


@click.group("config")
def config() -> None:
    """Show where the config is, print the example, or check it."""


@config.command("path")
@click.pass_context
def config_path(ctx: click.Context) -> None:
    """The config file in use (--config, $HELIX_CONFIG, or the user config dir)."""
    from helixd.paths import config_path_in_use

    root = ctx.find_root().obj or {}
    path = config_path_in_use(root.get("config"))
    click.echo(f"{path}{'' if path.is_file() else ' (absent: defaults apply)'}")


@config.command("example")
def config_example() -> None:
    """Print the example config: every key with its default and a comment."""
    from helixd.paths import data_file

    click.echo(data_file("helix.example.toml").read_text(), nl=False)


@config.command("check")
@click.pass_context
def config_check(ctx: click.Context) -> None:
    """Validate the whole config (file and HELIX_* variables); exit 2 naming the problem."""
    from helixd.paths import config_path_in_use

    settings = load_settings(ctx)
    root = ctx.find_root().obj or {}
    path = config_path_in_use(root.get("config"))
    where = str(path) if path.is_file() else f"defaults ({path} absent)"
    click.echo(f"config ok: {where}; store {settings.store.db}")

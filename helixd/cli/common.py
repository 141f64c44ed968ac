"""What every ``helixctl`` command shares: exit codes, JSON output, the settings, the price
table and opening the store.  Light (click and the standard library): the report commands
load it without the rest of the CLI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_STORE = 3


def echo_json(value: Any) -> None:
    import orjson

    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def load_settings(ctx: click.Context) -> Any:
    """The settings (``--config`` on the root command); exit 2 naming the problem."""
    from helixd import config

    root = ctx.find_root()
    try:
        return config.load((root.obj or {}).get("config"))
    except config.ConfigError as exc:
        click.echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_USAGE)


def price_table(ctx: click.Context, loaded: Any) -> Any:
    """The price table the config asks for; exit 2 naming the problem when it is bad."""
    from helixd import config

    try:
        return config.price_table(loaded)
    except config.ConfigError as exc:
        click.echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_USAGE)


async def open_store(path: Path, readonly: bool) -> Any:
    """The store, or exit 3 naming the problem."""
    from helixd.store import Store, StoreError

    try:
        return await Store.open(path, readonly=readonly)
    except StoreError as exc:
        click.echo(f"helixctl: {exc}", err=True)
        sys.exit(EXIT_STORE)

"""What every ``helixctl`` command shares: exit codes, JSON output, the settings (the light
read settings, or the full model where a command needs all of it), the price table, times as
typed, and opening the store for reading or writing.

Light on purpose (click and the standard library): a read command pays for what it uses.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from helixd.readconfig import ReadConfig

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_STORE = 3


def echo_json(value: Any, sort_keys: bool = False) -> None:
    import orjson

    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    sys.stdout.buffer.write(
        orjson.dumps(value, option=option | (orjson.OPT_SORT_KEYS if sort_keys else 0)) + b"\n"
    )
    sys.stdout.flush()


def fail(ctx: click.Context, message: str, code: int) -> NoReturn:
    """One line on stderr, then exit ``code``."""
    click.echo(f"helixctl: {message}", err=True)
    ctx.exit(code)
    raise AssertionError("unreachable")  # ctx.exit raises


def _config_path(ctx: click.Context) -> Path | None:
    root = ctx.find_root()
    value: Path | None = (root.obj or {}).get("config")
    return value


def read_settings(ctx: click.Context) -> ReadConfig:
    """The settings a read needs (store, prices, budgets, roots), without the full model;
    exit 2 naming the problem."""
    from helixd.readconfig import ConfigError, ReadConfig, read_config

    obj = ctx.find_root().ensure_object(dict)
    cached = obj.get("read_settings")
    if isinstance(cached, ReadConfig):
        return cached
    try:
        obj["read_settings"] = loaded = read_config(_config_path(ctx))
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    return loaded


def load_settings(ctx: click.Context) -> Any:
    """The full settings model (commands that write or run passes); exit 2 naming the
    problem."""
    from helixd import config

    try:
        return config.load(_config_path(ctx))
    except config.ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)


def price_table(ctx: click.Context, loaded: Any) -> Any:
    """The price table the full settings ask for; exit 2 naming the problem when it is bad."""
    from helixd import config

    try:
        return config.price_table(loaded)
    except config.ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)


def prices(ctx: click.Context) -> Any:
    """``(label, book)``: the prices the read settings ask for (``helixd.prices``: config,
    genai-prices, the bundled table); exit 2 when the configured table is bad."""
    from helixd.core.pricing import PriceTableError
    from helixd.prices import effective

    rc = read_settings(ctx)
    try:
        return effective(rc.prices_table, rc.price_overrides)
    except PriceTableError as exc:
        fail(ctx, str(exc), EXIT_USAGE)


def reader(ctx: click.Context) -> sqlite3.Connection:
    """A read-only connection to the store; exit 3 naming the problem."""
    from helixd.query import NoStore, open_reader

    db = read_settings(ctx).store_db
    try:
        return open_reader(db)
    except NoStore as exc:
        fail(ctx, str(exc), EXIT_STORE)


def zone(value: str | None) -> tzinfo | None:
    """``--timezone``: an IANA name, ``UTC``; None (the system's zone) when not given."""
    if not value:
        return None
    if value.upper() in ("UTC", "Z"):
        from datetime import UTC

        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise click.BadParameter(f"unknown time zone {value!r}", param_hint="--timezone") from exc


def instant(value: str | None, hint: str, tz: tzinfo | None = None) -> int | None:
    """A time as typed (``7d``, ``yesterday``, ISO-8601, …) in epoch ms; usage error when
    it is not one."""
    if value is None:
        return None
    from helixd.core.when import BadTime, parse_when

    try:
        return parse_when(value, int(time.time() * 1000), tz)
    except BadTime as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


async def open_store(path: Path, readonly: bool) -> Any:
    """The store for a command that writes (or runs a pass), or exit 3 naming the problem."""
    from helixd.store.database import Store, StoreError

    try:
        return await Store.open(path, readonly=readonly)
    except StoreError as exc:
        click.echo(f"helixctl: {exc}", err=True)
        sys.exit(EXIT_STORE)


def check_agents(agents: tuple[str, ...] | list[str]) -> None:
    """Usage error naming the known agents when ``--agent`` names an unknown one."""
    if not agents:
        return
    from helixd.adapters import REGISTRY

    known = {a.name for a in REGISTRY}
    for name in agents:
        if name not in known:
            raise click.BadParameter(
                f"unknown agent {name!r} (known: {', '.join(sorted(known))})", param_hint="--agent"
            )


def naming(settings: Any) -> Any:
    """The repo, domain and task-reference rules of ``[repos]`` (``helixd.core.attribution``)."""
    from helixd.core.attribution import Naming

    return Naming.from_settings(settings.repos)

"""What every ``helixctl`` command shares: exit codes, JSON output, the settings (the light
read settings, or the full model where a command needs all of it), the price table, times as
typed, opening the store for reading or writing, and what a command does when the store
fails it.

Light on purpose (click and the standard library): a read command pays for what it uses.

Store faults: any error that ``helixd.store.faults.classify`` recognises (missing, locked
past ``CLI_BUSY_MS``, read-only, disk full, corrupt …) ends the command with one line on
stderr naming the condition and its fix, and exit code 3 — never a traceback.  The
``helixctl`` group (``helixd.cli.main.LazyGroup``) applies ``guard_store_faults`` to every
command.
"""

from __future__ import annotations

import os
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
# How long a command waits for another process's write lock before it gives up (exit 3).
CLI_BUSY_MS = 5_000


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
    remember_store(ctx, loaded.store_db)
    return loaded


def load_settings(ctx: click.Context) -> Any:
    """The full settings model (commands that write or run passes); exit 2 naming the
    problem."""
    from helixd import config

    try:
        settings = config.load(_config_path(ctx))
    except config.ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    remember_store(ctx, settings.store.db)
    return settings


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
    from helixd.query import NoStore, damaged_header, open_reader

    db = read_settings(ctx).store_db
    if damaged_header(db):  # 16 bytes (SQLite may still answer from its cache)
        exit_store(_condition(db) or f"store {db} is corrupt")
    try:
        return open_reader(db, CLI_BUSY_MS)
    except NoStore as exc:
        exit_store(store_fault(exc, db) or _condition(db) or exc)


def _condition(db: Path) -> Any:
    """What keeps the store from being read (loaded only when a read fails)."""
    from helixd.query import store_condition

    return store_condition(db, writing=False)


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


async def open_store(path: Path, readonly: bool, create: bool = False) -> Any:
    """The store for a command that writes (or runs a pass), or exit 3 naming the problem.
    Only ``create`` (ingest) makes a new one."""
    from helixd.store.database import Store, StoreError, StoreFault

    try:
        if not create and not path.exists():
            raise StoreFault("missing", path)
        return await Store.open(path, readonly=readonly, busy_ms=CLI_BUSY_MS)
    except StoreError as exc:
        exit_store(exc)


def exit_store(problem: BaseException | str) -> NoReturn:
    """One line on stderr, exit 3."""
    click.echo(f"helixctl: {problem}", err=True)
    sys.exit(EXIT_STORE)


def remember_store(ctx: click.Context | None, path: Path) -> None:
    """The store this command uses, for ``store_fault`` if the store fails it later."""
    if ctx is not None:
        root = ctx.find_root()
        if isinstance(root.obj, dict):
            root.obj["store_path"] = Path(path)


def store_path(ctx: click.Context | None) -> Path:
    """The store a command uses: as remembered, else ``HELIX_STORE_DB``, else the default."""
    root = ctx.find_root() if ctx is not None else None
    remembered = root.obj.get("store_path") if root and isinstance(root.obj, dict) else None
    if remembered is not None:
        return Path(remembered)
    env = os.environ.get("HELIX_STORE_DB")
    if env:
        return Path(env).expanduser()
    from helixd.paths import default_store_path

    return default_store_path()


def store_fault(exc: BaseException, path: Path) -> Any:
    """The ``StoreFault`` behind ``exc`` (``helixd.store.faults.classify``), or None."""
    from helixd.query import classify

    return classify(exc, path)


def guard_store_faults(ctx: click.Context, invoke: Any) -> Any:
    """Run ``invoke()``; a store fault it meets ends the command with one line, exit 3."""
    try:
        return invoke()
    except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as exc:
        fault = store_fault(exc, store_path(ctx))
        if fault is None:
            raise
        exit_store(fault)


def live_status(db: Path) -> dict[str, Any] | None:
    """The daemon's state from its socket when it serves this store (fresher than the
    published file, which a full disk or a removed folder keeps from being written)."""
    from helixd.paths import socket_path

    if not socket_path().exists():
        return None  # no daemon listens (nor the client's socket module to load)
    from helixd.daemon.client import DaemonUnavailable, request

    try:
        reply = request("status", 1.0)
    except (DaemonUnavailable, ValueError):
        return None
    snap = reply.get("status") if reply.get("ok") else None
    if not isinstance(snap, dict) or snap.get("store") != str(db):
        return None
    return snap


def check_agents(agents: tuple[str, ...] | list[str]) -> None:
    """Usage error naming the known agents when ``--agent`` names an unknown one."""
    if not agents:
        return
    from helixd.adapters.registry import REGISTRY

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


def cost_option(fn: Any) -> Any:
    """``--cost auto|calculate|recorded`` (ccusage's ``--mode auto|calculate|display``;
    the modes are ``helixd.core.usage_report.COST_MODES``, not imported here: the CLI starts
    without the pricing code)."""
    return click.option(
        "--cost",
        "cost_mode",
        type=click.Choice(("auto", "calculate", "recorded")),
        default="auto",
        show_default=True,
        help="auto: the cost the agent recorded where it did, else priced from the table;"
        " calculate: always the table; recorded: only what the agents recorded.",
    )(fn)

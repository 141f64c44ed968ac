"""What every ``helixctl`` command shares: exit codes, JSON output, the settings (the light
read settings, or the full model where a command needs all of it), the price table, times as
typed, opening the store for reading or writing, and what a command does when the store
fails it.

Light on purpose (the standard library): a read command pays for what it uses.

Store faults: any error that ``helixd.store.faults.classify`` recognises (missing, locked
past ``CLI_BUSY_MS``, read-only, disk full, corrupt …) ends the command with one line on
stderr naming the condition and its fix, and exit code 3 — never a traceback.  The
``helixctl`` entry point (``helixd.cli.main.main``) applies ``guard_store_faults`` to every
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

from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser

    from helixd.readconfig import ReadConfig

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_STORE = 3
# How long a command waits for another process's write lock before it gives up (exit 3).
CLI_BUSY_MS = 5_000


class Context:
    """One run of ``helixctl``: the ``--config`` given, and what the command loaded once (the
    read settings) or will need if the store fails it (its path)."""

    def __init__(self, config: Path | None) -> None:
        self.config = config
        self.read_settings: ReadConfig | None = None
        self.store_path: Path | None = None

    def exit(self, code: int = 0) -> NoReturn:
        raise SystemExit(code)


class UsageError(Exception):
    """A value the command cannot use: ``helixctl`` prints the command's usage and the
    message, exit 2 (argparse's usage error)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(f"argument {hint}: {message}" if hint else message)


def int_range(lo: int, hi: int | None = None) -> Any:
    """An argparse type: an integer in ``[lo, hi]`` (click's ``IntRange``)."""
    from argparse import ArgumentTypeError

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ArgumentTypeError(f"{text!r} is not a valid integer.") from None
        if value < lo or (hi is not None and value > hi):
            bounds = f"{lo}<=x<={hi}" if hi is not None else f"x>={lo}"
            raise ArgumentTypeError(f"{value} is not in the range {bounds}.")
        return value

    return parse


def describe(parser: ArgumentParser, run: Any) -> None:
    """``run`` is what ``parser``'s command does; its docstring the command's help."""
    parser.set_defaults(run=run)
    lines = (run.__doc__ or "").strip().splitlines()
    parser.description = "\n".join([*lines[:1], *(line.strip() for line in lines[1:])])


def summary(run: Any) -> str:
    """The first sentence of ``run``'s docstring: its line in a group's help."""
    text = " ".join((run.__doc__ or "").split())
    head, dot, _ = text.partition(". ")
    return head + "." if dot else text


def json_flag(parser: ArgumentParser, help: str = "Print JSON.") -> None:
    parser.add_argument("--json", dest="as_json", action="store_true", help=help)


def timezone_option(parser: ArgumentParser, help: str) -> None:
    parser.add_argument("--timezone", "-z", dest="timezone", default=None, help=help)


def agent_option(parser: ArgumentParser) -> None:
    """``--agent`` (repeatable), completed with the known agents."""
    from helixd.cli import complete

    action = parser.add_argument(
        "--agent",
        dest="agents",
        metavar="AGENT",
        action="append",
        default=[],
        help="Only this agent (repeatable).",
    )
    action.completer = complete.agents  # type: ignore[attr-defined]


def repo_option(parser: ArgumentParser, required: bool = False) -> None:
    """``--repo``, completed with the store's repos."""
    from helixd.cli import complete

    action = parser.add_argument(
        "--repo",
        default=None,
        required=required,
        help="Repo name, or a path (sessions at or under it).",
    )
    action.completer = complete.repos  # type: ignore[attr-defined]


def session_argument(parser: ArgumentParser, dest: str = "uid", nargs: Any = None) -> None:
    """A session reference (``agent:<id>``, the bare id or a unique prefix), completed with
    the store's sessions."""
    from helixd.cli import complete

    action = parser.add_argument(dest, metavar=dest.upper().rstrip("S"), nargs=nargs)
    action.completer = complete.sessions  # type: ignore[attr-defined]


def echo_json(value: Any, sort_keys: bool = False) -> None:
    import orjson

    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    sys.stdout.buffer.write(
        orjson.dumps(value, option=option | (orjson.OPT_SORT_KEYS if sort_keys else 0)) + b"\n"
    )
    sys.stdout.flush()


def fail(ctx: Context, message: str, code: int) -> NoReturn:
    """One line on stderr, then exit ``code``."""
    echo(f"helixctl: {message}", err=True)
    ctx.exit(code)


def _config_path(ctx: Context) -> Path | None:
    return ctx.config


def read_settings(ctx: Context) -> ReadConfig:
    """The settings a read needs (store, prices, budgets, roots), without the full model;
    exit 2 naming the problem."""
    from helixd.configkeys import ConfigError
    from helixd.readconfig import ReadConfig, read_config

    if isinstance(ctx.read_settings, ReadConfig):
        return ctx.read_settings
    try:
        ctx.read_settings = loaded = read_config(_config_path(ctx))
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    remember_store(ctx, loaded.store_db)
    return loaded


def load_settings(ctx: Context) -> Any:
    """The full settings model (commands that write or run passes); exit 2 naming the
    problem."""
    from helixd import config

    try:
        settings = config.load(_config_path(ctx))
    except config.ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    remember_store(ctx, settings.store.db)
    return settings


def price_table(ctx: Context, loaded: Any) -> Any:
    """The price table the full settings ask for; exit 2 naming the problem when it is bad."""
    from helixd import config

    try:
        return config.price_table(loaded)
    except config.ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)


def prices(ctx: Context) -> Any:
    """``(label, book)``: the prices the read settings ask for (``helixd.prices``: config,
    genai-prices, the bundled table); exit 2 when the configured table is bad."""
    from helixd.core.pricing import PriceTableError
    from helixd.prices import effective

    rc = read_settings(ctx)
    try:
        return effective(rc.prices_table, rc.price_overrides)
    except PriceTableError as exc:
        fail(ctx, str(exc), EXIT_USAGE)


def reader(ctx: Context) -> sqlite3.Connection:
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
        raise UsageError(f"unknown time zone {value!r}", "--timezone") from exc


def instant(value: str | None, hint: str, tz: tzinfo | None = None) -> int | None:
    """A time as typed (``7d``, ``yesterday``, ISO-8601, …) in epoch ms; usage error when
    it is not one."""
    if value is None:
        return None
    from helixd.core.when import BadTime, parse_when

    try:
        return parse_when(value, int(time.time() * 1000), tz)
    except BadTime as exc:
        raise UsageError(str(exc), hint) from None


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
    echo(f"helixctl: {problem}", err=True)
    sys.exit(EXIT_STORE)


def remember_store(ctx: Context | None, path: Path) -> None:
    """The store this command uses, for ``store_fault`` if the store fails it later."""
    if ctx is not None:
        ctx.store_path = Path(path)


def store_path(ctx: Context | None) -> Path:
    """The store a command uses: as remembered, else ``HELIX_STORE_DB``, else the default."""
    remembered = ctx.store_path if ctx is not None else None
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


def guard_store_faults(ctx: Context, invoke: Any) -> Any:
    """Run ``invoke()``; a store fault it meets ends the command with one line, exit 3."""
    try:
        return invoke()
    except UsageError:
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
    from helixd.adapters import AGENT_NAMES  # the catalogue: no adapter module imported

    known = set(AGENT_NAMES)
    for name in agents:
        if name not in known:
            raise UsageError(
                f"unknown agent {name!r} (known: {', '.join(sorted(known))})", "--agent"
            )


def naming(settings: Any) -> Any:
    """The repo, domain and task-reference rules of ``[repos]`` (``helixd.core.attribution``)."""
    from helixd.core.attribution import Naming

    return Naming.from_settings(settings.repos)


def cost_option(parser: ArgumentParser) -> None:
    """``--cost auto|calculate|recorded`` (ccusage's ``--mode auto|calculate|display``;
    the modes are ``helixd.core.usage_report.COST_MODES``, not imported here: the CLI starts
    without the pricing code)."""
    parser.add_argument(
        "--cost",
        dest="cost_mode",
        choices=("auto", "calculate", "recorded"),
        default="auto",
        help="auto: the cost the agent recorded where it did, else priced from the table;"
        " calculate: always the table; recorded: only what the agents recorded."
        "  (default: auto)",
    )

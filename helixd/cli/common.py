"""What every ``helixctl`` command shares: exit codes, JSON output, the settings, the price
table, opening the store and what a command does when the store fails it.  Light (click and
the standard library): the report commands load it without the rest of the CLI.

Store faults: any error that ``helixd.store.faults.classify`` recognises (missing, locked
past ``CLI_BUSY_MS``, read-only, disk full, corrupt …) ends the command with one line on
stderr naming the condition and its fix, and exit code 3 — never a traceback.
``FaultGuardGroup`` does it for every command of ``helixctl``; ``run_guarded`` for the
commands the light entry point runs directly.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_STORE = 3
# How long a command waits for another process's write lock before it gives up (exit 3).
CLI_BUSY_MS = 5_000


def echo_json(value: Any) -> None:
    import orjson

    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def load_settings(ctx: click.Context) -> Any:
    """The settings (``--config`` on the root command); exit 2 naming the problem."""
    from helixd import config

    root = ctx.find_root()
    try:
        settings = config.load((root.obj or {}).get("config"))
    except config.ConfigError as exc:
        click.echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_USAGE)
    remember_store(ctx, settings.store.db)
    return settings


def price_table(ctx: click.Context, loaded: Any) -> Any:
    """The price table the config asks for; exit 2 naming the problem when it is bad."""
    from helixd import config

    try:
        return config.price_table(loaded)
    except config.ConfigError as exc:
        click.echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_USAGE)


async def open_store(path: Path, readonly: bool, create: bool = False) -> Any:
    """The store, or exit 3 naming the problem.  Only ``create`` (ingest) makes a new one."""
    from helixd.store import Store, StoreError, StoreFault

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
    return store_module("faults").classify(exc, path)


class FaultGuardGroup(click.Group):
    """A click group whose commands end with one line and exit 3 on a store fault."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            fault = store_fault(exc, store_path(ctx))
            if fault is None:
                raise
            exit_store(fault)


def run_guarded(command: click.Command, args: list[str], prog_name: str) -> None:
    """Run a click command (outside the ``helixctl`` group) with the same fault guard."""
    ctx_obj: dict[str, Any] = {}
    try:
        command.main(args=args, prog_name=prog_name, obj=ctx_obj)
    except Exception as exc:
        remembered = ctx_obj.get("store_path")
        fault = store_fault(exc, Path(remembered) if remembered else store_path(None))
        if fault is None:
            raise
        exit_store(fault)


def live_status(db: Path) -> dict[str, Any] | None:
    """The daemon's state from its socket when it serves this store (fresher than the
    published file, which a full disk or a removed folder keeps from being written)."""
    from helixd.cli.client import DaemonUnavailable, request

    try:
        reply = request("status", 1.0)
    except (DaemonUnavailable, ValueError):
        return None
    snap = reply.get("status") if reply.get("ok") else None
    if not isinstance(snap, dict) or snap.get("store") != str(db):
        return None
    return snap


def store_module(leaf: str) -> Any:
    """A module of ``helixd/store/`` that imports only the standard library, loaded without
    the package's ``__init__`` (aiosqlite, asyncio, zstandard: about half of a report's
    100 ms); the real module when the package is loaded already."""
    name = f"helixd.store.{leaf}"
    module = sys.modules.get(name)
    if module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).parent.parent / "store" / f"{leaf}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module

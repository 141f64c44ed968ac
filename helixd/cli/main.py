"""``helixctl``: the command-line client.

Exit codes: 0 success; 1 not found (``lookup``); 2 usage or configuration error;
3 the store is missing or unusable.  Data goes to stdout (JSON with ``--json``), progress and
diagnostics to stderr.  Heavy imports happen inside the commands so that light commands
start fast.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import click

from helixd import __version__
from helixd.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_STORE,
    FaultGuardGroup,
    echo_json,
    live_status,
    load_settings,
    open_store,
    price_table,
)
from helixd.cli.printers import print_digest, print_status, print_summary


def _check_agents(ctx: click.Context, agents: tuple[str, ...]) -> None:
    """Exit 2 naming the known agents when ``--agent`` names an unknown one."""
    from helixd.adapters import REGISTRY

    known = {a.name for a in REGISTRY}
    for name in agents:
        if name not in known:
            raise click.BadParameter(
                f"unknown agent {name!r} (known: {', '.join(sorted(known))})", param_hint="--agent"
            )


@click.group(cls=FaultGuardGroup, context_settings={"help_option_names": ["-h", "--help"]})
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


@main.command()
@click.option("--agent", "agents", multiple=True, help="Only this agent (repeatable).")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Scan this directory instead of the agent's configured roots (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def ingest(
    ctx: click.Context, agents: tuple[str, ...], roots: tuple[Path, ...], as_json: bool
) -> None:
    """Backfill every transcript once; a second run reads only what is new."""
    from helixd.adapters import REGISTRY
    from helixd.config import agent_roots
    from helixd.ingest import pipeline as ingest_mod

    settings = load_settings(ctx)
    _check_agents(ctx, agents)
    chosen = [a for a in REGISTRY if not agents or a.name in agents]
    if roots:
        pairs = [(a, r.expanduser().resolve()) for a in chosen for r in roots]
    else:
        pairs = agent_roots(settings, chosen, os.environ, Path.home())
    table = price_table(ctx, settings)
    summary = asyncio.run(_ingest(settings, pairs, ingest_mod, table))
    if as_json:
        echo_json(summary)
    else:
        print_summary(summary)
    ctx.exit(0)


async def _ingest(settings: Any, pairs: list[Any], ingest_mod: Any, table: Any) -> dict[str, Any]:
    from helixd.ingest import digest
    from helixd.store import now_ms

    store = await open_store(settings.store.db, readonly=False, create=True)
    try:
        ingestor = ingest_mod.Ingestor(
            store,
            chunk_bytes=settings.ingest.chunk_bytes,
            max_line_bytes=settings.ingest.max_line_bytes,
        )
        sources = list(ingest_mod.discover(pairs))
        with _progress() as progress:
            stats = await ingestor.backfill(sources, progress)
        changed = await store.session_ids_changed_since_analysis()
        digests = await digest.analyze(store, changed, now_ms(), table=table)
        await store.checkpoint()
        summary = stats.as_dict()
        summary["digests_built"] = digests
        from helixd.adapters import REGISTRY

        summary["stale_files"] = await store.stale_file_count({a.name: a.version for a in REGISTRY})
        summary["store"] = str(settings.store.db)
        summary["roots"] = sorted({str(r) for _, r in pairs if Path(r).is_dir()})
        result: dict[str, Any] = summary
        return result
    finally:
        await store.close()


class _progress:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""

    def __enter__(self) -> Any:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self.bar = Progress(
            "ingest",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.bar.start()
        self.task = self.bar.add_task("ingest", total=None)
        return self.update

    def update(self, done: int, total: int) -> None:
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if hasattr(self, "bar"):
            self.bar.stop()


@main.command()
@click.argument("uid")
@click.option("--json", "as_json", is_flag=True, help="Print the digest as JSON.")
@click.pass_context
def lookup(ctx: click.Context, uid: str, as_json: bool) -> None:
    """Print one session's digest (no ingest is run).  UID is `agent:<id>`, the bare id,
    or a unique prefix.  Exit 0 when found, 1 when not."""
    settings = load_settings(ctx)
    code = asyncio.run(_lookup(settings.store.db, uid, as_json))
    ctx.exit(code)


async def _lookup(db: Path, uid: str, as_json: bool) -> int:
    store = await open_store(db, readonly=True)
    try:
        matches = await store.find_sessions(uid)
        if not matches:
            click.echo(f"no session matches {uid!r}", err=True)
            return EXIT_NOT_FOUND
        if len(matches) > 1:
            click.echo(f"{uid!r} is ambiguous; candidates:", err=True)
            for m in matches:
                click.echo(f"  {m['uid']}", err=True)
            return EXIT_NOT_FOUND
        digest = await store.digest(matches[0]["id"])
        if digest is None:
            click.echo(f"session {matches[0]['uid']} has no digest yet", err=True)
            return EXIT_NOT_FOUND
    finally:
        await store.close()
    if as_json:
        echo_json(digest)
    else:
        print_digest(digest)
    return 0


@main.command()
@click.option("--agent", default=None, help="Only this agent's sessions.")
@click.option("--limit", default=50, show_default=True, type=int, help="At most this many.")
@click.option(
    "--all",
    "include_empty",
    is_flag=True,
    help="Include files without any message (summary-only and the like).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def sessions(
    ctx: click.Context, agent: str | None, limit: int, include_empty: bool, as_json: bool
) -> None:
    """List sessions, newest first."""
    settings = load_settings(ctx)
    _check_agents(ctx, (agent,) if agent else ())
    rows = asyncio.run(_sessions(settings.store.db, agent, limit, include_empty))
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("no sessions in the store yet", err=True)
        return
    from helixd.core.timeparse import iso

    for r in rows:
        when = (iso(r["started_at"]) or "")[:16].replace("T", " ")
        title = r["title"] or ""
        click.echo(
            f"{when:16}  {r['uid']:50}  {r['repo'] or '-':20}  {r['messages']:5} msgs  {title[:40]}"
        )


async def _sessions(
    db: Path, agent: str | None, limit: int, include_empty: bool
) -> list[dict[str, Any]]:
    from helixd.core.timeparse import iso

    store = await open_store(db, readonly=True)
    try:
        rows: list[dict[str, Any]] = await store.sessions(agent, limit, include_empty)
    finally:
        await store.close()
    for r in rows:
        for k in (
            "started_at",
            "ended_at",
            "discovered_at",
            "ingested_at",
            "changed_at",
            "analyzed_at",
            "evicted_at",
        ):
            r[k + "_iso"] = iso(r[k])
    return rows


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Daemon up or down, what it watches, how far ingest is behind, what the store holds,
    what keeps failing.  Exit 0 when the daemon runs and the store is usable; 3 when the
    daemon does not run or the store has a fault (named on stderr, with its fix)."""
    from helixd.daemon import status as status_mod

    settings = load_settings(ctx)
    db = settings.store.db
    facts, fault = asyncio.run(_status_facts(db)) if db.exists() else (None, None)
    budget = {k: int(v) for k, v in settings.retention.model_dump().items() if k.endswith("bytes")}
    doc = status_mod.gather(db, facts, budget, live_status(db), fault)
    if as_json:
        echo_json(doc)
    else:
        print_status(doc)
    problem = doc["store"]["fault"]
    if problem:
        click.echo(f"helixctl: {problem['message']}", err=True)
    ctx.exit(0 if doc["daemon"]["running"] and not problem else EXIT_STORE)


async def _status_facts(db: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What the store holds, or what keeps it from being read."""
    from helixd.cli.common import CLI_BUSY_MS
    from helixd.store import Store, StoreError, classify

    try:
        store = await Store.open(db, readonly=True, busy_ms=CLI_BUSY_MS)
    except StoreError as exc:
        fault = classify(exc, db)
        return None, fault.as_dict() if fault else None
    try:
        facts: dict[str, Any] = await store.status_facts()
        return facts, None
    except Exception as exc:
        fault = classify(exc, db)
        if fault is None:
            raise
        return None, fault.as_dict()
    finally:
        await store.close()


def _daemon_request(ctx: click.Context, op: str, wait: float, **fields: Any) -> None:
    from helixd.cli.client import DaemonUnavailable, request

    try:
        reply = request(op, wait, **fields)
    except DaemonUnavailable as exc:
        click.echo(f"helixctl: {exc}", err=True)
        ctx.exit(EXIT_STORE)
    echo_json(reply)
    ctx.exit(0 if reply.get("ok") else 1)


@main.command()
@click.pass_context
def ping(ctx: click.Context) -> None:
    """Ask the daemon whether it is alive (exit 3 when it does not answer)."""
    _daemon_request(ctx, "ping", 2.0)


@main.command()
@click.pass_context
def rescan(ctx: click.Context) -> None:
    """Ask the daemon for a full reconcile scan now."""
    _daemon_request(ctx, "rescan", 5.0)


@main.command()
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait.")
@click.pass_context
def flush(ctx: click.Context, timeout: float) -> None:
    """Wait until the daemon's work queue is empty."""
    _daemon_request(ctx, "flush", timeout + 1, timeout=timeout)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(agent: str, args: tuple[str, ...]) -> None:
    """Deliver an agent hook payload (stdin, or the JSON argument of Codex `notify`) to the
    daemon; spooled when the daemon is down.  Prints nothing, always exits 0."""
    from helixd.cli.hook import main as hook_main

    sys.exit(hook_main([agent, *args]))


from helixd.cli.install import hooks, service  # noqa: E402  (light: click + stdlib)

main.add_command(hooks)
main.add_command(service)

from helixd.cli.doctor import doctor  # noqa: E402  (light: click + stdlib)

main.add_command(doctor)


from helixd.cli.retention import COMMANDS as _RETENTION  # noqa: E402  (evict, env)

for _command in _RETENTION:
    main.add_command(_command)


from helixd.cli.analyze import COMMANDS as _ANALYZE  # noqa: E402  (analyze, renormalize)

for _command in _ANALYZE:
    main.add_command(_command)


from helixd.cli import reports as cli_reports  # noqa: E402  (light: click + stdlib)

main.add_command(cli_reports.search)
main.add_command(cli_reports.report)
main.add_command(cli_reports.tokens)
main.add_command(cli_reports.stats)


if __name__ == "__main__":
    main()

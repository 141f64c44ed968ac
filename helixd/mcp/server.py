"""``helixctl mcp``: the memory as an MCP server (stdio) for agents and editors.

A face like the CLI: every tool is one call into ``helixd.query`` on a read-only connection
opened for that call, its answer returned as structured JSON.  Nothing here writes: every
tool is annotated read-only, and the store is opened ``mode=ro``.  Times are typed as a
person types them (``7d``, ``yesterday``, ``2026-03-01``); sessions as ``agent:<id>``, the
bare id or a unique prefix.  A reference that names no session, or several, is a tool error
whose message says so (with the candidates).

Tools: ``search``, ``lookup`` (a session's digest), ``list_sessions``, ``read_transcript`` (a
page of a session's events), ``usage_report`` (per day / week / month / session),
``repo_tokens`` (a repo in a time range), ``stats``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from helixd import __version__
from helixd.core.when import BadTime, parse_day, parse_when
from helixd.query import NoStore, open_reader

if TYPE_CHECKING:
    from helixd.core.pricing import Prices

T = TypeVar("T")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
INSTRUCTIONS = (
    "Helix is a local memory of this machine's AI coding-agent sessions ({agents}): "
    "transcripts, token usage and cost, and a digest per session. Search it for past work, "
    "read a session, or ask for usage. Session references are `agent:<id>`, the bare id, or "
    "a unique prefix; times are ISO dates or relative (`7d`, `yesterday`)."
)


def _when(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return parse_when(value, int(time.time() * 1000), None)
    except BadTime as exc:
        raise ToolError(f"{name}: {exc}") from None


class Memory:
    """The store and the prices the tools answer from."""

    def __init__(self, store_db: Path, prices: tuple[str, Prices]) -> None:
        self.store_db = store_db
        self.label, self.prices = prices

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        try:
            con = open_reader(self.store_db)
        except NoStore as exc:
            raise ToolError(str(exc)) from None
        try:
            yield con
        finally:
            con.close()

    def session(self, con: sqlite3.Connection, ref: str) -> dict[str, Any]:
        from helixd.query.sessions import resolve

        res = resolve(con, ref)
        if res.status == "ambiguous":
            raise ToolError(f"{ref!r} names several sessions: {', '.join(res.candidates[:20])}")
        if res.session is None:
            raise ToolError(f"no session matches {ref!r}")
        return res.session


def build(memory: Memory) -> MCPServer:
    """The server with every tool registered (not started)."""
    from helixd.adapters.registry import REGISTRY

    instructions = INSTRUCTIONS.format(agents=", ".join(a.name for a in REGISTRY))
    server: MCPServer = MCPServer(
        "helix", instructions=instructions, version=__version__, log_level="WARNING"
    )

    def tool(fn: Callable[..., T]) -> Callable[..., T]:
        server.add_tool(fn, annotations=READ_ONLY, structured_output=True)
        return fn

    @tool
    def search(
        query: str,
        agent: str | None = None,
        repo: str | None = None,
        since: str | None = None,
        until: str | None = None,
        kind: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """Search every stored transcript for the words typed (all of them, any order);
        best hits first, each with its session, time, kind and a snippet with the hits in
        [brackets]. `kind` narrows to one event kind (user_msg, assistant_msg, tool_call, …)."""
        from helixd.query.search import SearchError, SearchQuery
        from helixd.query.search import search as run

        q = SearchQuery(
            text=query,
            agents=(agent,) if agent else (),
            repo=repo or None,
            since=_when(since, "since"),
            until=_when(until, "until"),
            kinds=(kind,) if kind else (),
            limit=max(1, min(limit, 200)),
        )
        with memory.reader() as con:
            try:
                return {"hits": run(con, q)}
            except SearchError as exc:
                raise ToolError(str(exc)) from None

    @tool
    def lookup(session: str) -> dict[str, Any]:
        """One session's digest: what it was about, its outcome, files and tools, tests,
        errors, tokens and cost, its parent and subagents."""
        from helixd.query.sessions import lookup as find

        with memory.reader() as con:
            memory.session(con, session)
            found = find(con, session)
        s = found.resolution.session or {}
        return {
            "session": s,
            "digest": found.digest,
            "children": found.children,
            "parent": found.parent,
            "problems": found.problems,
        }

    @tool
    def list_sessions(
        agent: str | None = None,
        repo: str | None = None,
        since: str | None = None,
        until: str | None = None,
        model: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        """Sessions, newest first, with title (or first prompt), repo, messages, tokens and
        cost; `total` says how many match."""
        from helixd.query.sessions import SessionFilter, list_sessions

        f = SessionFilter(
            agents=(agent,) if agent else (),
            repo=repo or None,
            since=_when(since, "since"),
            until=_when(until, "until"),
            model=model or None,
        )
        with memory.reader() as con:
            page = list_sessions(con, f, memory.prices, max(1, min(limit, 500)), max(0, offset))
        return page._asdict()

    @tool
    def read_transcript(
        session: str, after_seq: int | None = None, tail: int | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """A page of a session's events in order: messages, tool calls with their inputs and
        outputs (while the raw lines are kept), edits. From the start, after `after_seq`, or
        the last `tail` events; `first_seq`/`last_seq` bound the session for paging."""
        from helixd.query.transcript import transcript

        with memory.reader() as con:
            s = memory.session(con, session)
            page = transcript(
                con,
                s,
                after=after_seq,
                tail=tail is not None,
                limit=max(1, min(tail or limit, 500)),
            )
        return {**page._asdict(), "session": page.session}

    @tool
    def usage_report(
        period: Literal["daily", "weekly", "monthly", "session"] = "daily",
        since: str | None = None,
        until: str | None = None,
        agent: str | None = None,
        repo: str | None = None,
        model: str | None = None,
        timezone: str | None = None,
    ) -> dict[str, Any]:
        """Tokens (input, output, cache read/write) and cost per day, week, month or session,
        in ccusage's fields, with the source and date of the prices. Days are local to
        `timezone` (an IANA name; default the machine's)."""
        from helixd.query.usage import ReportQuery, report

        tz = _zone(timezone)
        now = int(time.time() * 1000)
        try:
            first = parse_day(since, now, tz) if since else None
            last = parse_day(until, now, tz) if until else None
        except BadTime as exc:
            raise ToolError(str(exc)) from None
        q = ReportQuery(
            period=period,
            first_day=first,
            last_day=last,
            tz=tz,
            agents=(agent,) if agent else (),
            repo=repo or None,
            model=model or None,
        )
        with memory.reader() as con:
            return report(con, q, memory.prices)

    @tool
    def repo_tokens(
        repo: str, since: str | None = None, until: str | None = None, agent: str | None = None
    ) -> dict[str, Any]:
        """Usage of every session and file of a repo (its name, or a path: sessions at or
        under it) in [since, until): the sessions, totals per model, cost."""
        from helixd.query.usage import tokens

        with memory.reader() as con:
            return tokens(
                con,
                repo,
                _when(since, "since") or 0,
                _when(until, "until"),
                memory.prices,
                (agent,) if agent else (),
            )

    @tool
    def stats(since: str | None = None, top: int = 15) -> dict[str, Any]:
        """Sessions and spend by agent, repo and model; tool success rates; most-edited
        files; test runs by framework; interventions and errors per session."""
        from helixd.query.stats import stats as run

        with memory.reader() as con:
            return run(con, _when(since, "since"), max(1, min(top, 1000)), memory.prices)

    return server


def _zone(name: str | None) -> Any:
    if not name:
        return None
    if name.upper() in ("UTC", "Z"):
        from datetime import UTC

        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"unknown time zone {name!r}") from None


def run(store_db: Path, prices: tuple[str, Prices]) -> None:
    """Serve over stdio until the client closes stdin; Ctrl-C (SIGINT) ends it with the
    CLI's "Aborted!" and exit 1 (``_serve``)."""
    anyio.run(_serve, build(Memory(store_db, prices)))


async def _serve(server: MCPServer) -> None:
    """Serve stdio until stdin ends.  SIGINT is taken by the event loop
    (``anyio.open_signal_receiver``: it wakes the loop whichever thread the kernel hands
    the signal to) — a Python handler runs only when the main thread runs Python, which
    with the loop idle on stdin was never, until stdin ended.  The process then ends at
    once: the SDK reads stdin in a worker thread that no cancellation stops while a read
    waits (the loop's shutdown and the interpreter's would both wait for a line), and this
    read-only server has nothing to write back."""
    async with anyio.create_task_group() as group:

        async def on_interrupt() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    sys.stderr.write("\nAborted!\n")  # as the CLI says it (cli/main.py)
                    sys.stderr.flush()
                    os._exit(1)

        if threading.current_thread() is threading.main_thread():  # else: no signals here
            group.start_soon(on_interrupt)
        await server.run_stdio_async()
        group.cancel_scope.cancel()

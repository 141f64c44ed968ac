"""The JSON endpoints of code-o11y §API (field names: ``docs/web.md``; schema:
``/api/openapi.json``).  Each one parses its parameters (``params.py``), makes one call into
``helixd.query`` in a worker thread and returns what it got as JSON.  The query layer is
imported by the first request that needs it, not with the server: an idle daemon with the
server on holds ~2 MB less."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
from starlette.requests import Request
from starlette.responses import Response

from helixd import __version__
from helixd.web import params
from helixd.web.reads import Reads
from helixd.web.security import TOKEN_HEADER, token_ok

PAGE_EVENTS: Final = 100  # a page of events up front: each costs a re-read of its raw line
CSV_COLUMNS: Final = (
    "uid", "agent", "repo", "model", "display_title", "started_at_iso", "ended_at_iso",
    "messages", "events", "tokens", "cost_usd", "outcome",
)  # fmt: skip


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS, default=str)


def problem(status: int, message: str, **more: Any) -> JSON:
    return JSON({"error": message, **more}, status_code=status)


@dataclass
class Api:
    """The endpoints, bound to the server's reads, prices, token and the daemon's hooks."""

    reads: Reads
    prices: tuple[str, Any]
    token: str
    actions: dict[str, Callable[[], Awaitable[dict[str, Any]]]]
    daemon_status: Callable[[], dict[str, Any]] | None = None

    @property
    def table(self) -> Any:
        return self.prices[1]

    # -- sessions ------------------------------------------------------------------------
    async def sessions(self, request: Request) -> Response:
        from helixd.query import sessions

        f = params.filters(request.query_params, default_range="all")
        limit, offset = params.page(request.query_params)
        fmt = params.choice(request.query_params, "format", ("json", "csv"), "json")
        page = await self.reads.run(sessions.list_sessions, f.sessions(), self.table, limit, offset)
        if fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(CSV_COLUMNS)
            for s in page.sessions:
                w.writerow([s.get(c) if s.get(c) is not None else "" for c in CSV_COLUMNS])
            return Response(
                buf.getvalue(),
                media_type="text/csv; charset=utf-8",
                headers={"content-disposition": 'attachment; filename="helix-sessions.csv"'},
            )
        return JSON(
            {"sessions": page.sessions, "total": page.total, "offset": offset, "limit": limit}
        )

    async def _session(self, request: Request) -> tuple[dict[str, Any] | None, Response | None]:
        from helixd.query import sessions

        ref = request.path_params["uid"]
        res = await self.reads.run(sessions.resolve, ref)
        if res.status == "none":
            return None, problem(404, f"no session {ref!r}")
        if res.status == "ambiguous":
            return None, problem(409, f"{ref!r} names several sessions", candidates=res.candidates)
        return res.session, None

    async def session(self, request: Request) -> Response:
        from helixd.query import detail, sessions

        ref = request.path_params["uid"]
        found = await self.reads.run(sessions.lookup, ref)
        res = found.resolution
        if res.status == "none":
            return problem(404, f"no session {ref!r}")
        if res.status == "ambiguous":
            return problem(409, f"{ref!r} names several sessions", candidates=res.candidates)
        assert res.session is not None
        card = (await self.reads.run(detail.session_cards, [res.session["uid"]], self.table))[0]
        line = await self.reads.run(detail.timeline, res.session["id"])
        return JSON(
            {
                "session": card,
                "digest": found.digest,
                "parent": found.parent,
                "children": found.children,
                "problems": found.problems,
                "timeline": line,
            }
        )

    async def messages(self, request: Request) -> Response:
        from helixd.query import detail, transcript

        s, err = await self._session(request)
        if err is not None:
            return err
        assert s is not None
        q = request.query_params
        limit = params.number(q, "limit", PAGE_EVENTS, 1, transcript.MAX_PAGE)
        after = q.get("after")
        before = q.get("before")
        at = q.get("at")
        tail = q.get("tail") in ("1", "true")
        try:
            a = int(after) if after else None
            b = int(before) if before else None
            if at:
                a = max(-1, int(at) - 21)  # the event asked for, with a little before it
        except ValueError:
            return problem(400, "after/before/at: want an event seq (a whole number)")
        page = await self.reads.run(
            transcript.transcript, s, after=a, before=b, tail=tail, limit=limit
        )
        turns = await self.reads.run(detail.turns, s, page.events, self.table)
        return JSON(
            {
                "session_uid": s["uid"],
                "events": page.events,
                "total": page.total,
                "first_seq": page.first_seq,
                "last_seq": page.last_seq,
                "has_before": page.has_before,
                "has_after": page.has_after,
                "raw": page.raw,
                "turns": turns,
            }
        )

    async def tool_calls(self, request: Request) -> Response:
        from helixd.query import detail

        s, err = await self._session(request)
        if err is not None:
            return err
        assert s is not None
        calls = await self.reads.run(detail.tool_calls, s["id"])
        ops = await self.reads.run(detail.file_operations, s["id"])
        return JSON({"session_uid": s["uid"], "tool_calls": calls, "file_operations": ops})

    async def raw(self, request: Request) -> Response:
        from helixd.query import transcript

        s, err = await self._session(request)
        if err is not None:
            return err
        assert s is not None
        q = request.query_params
        limit = params.number(q, "limit", PAGE_EVENTS, 1, transcript.MAX_PAGE)
        after = params.number(q, "after", -1, -1)
        page = await self.reads.run(
            transcript.transcript, s, after=after, limit=limit, payloads=False
        )
        lines = await self.reads.run(transcript.raw_lines, page)
        if q.get("format") == "jsonl":
            return Response(b"\n".join(lines) + (b"\n" if lines else b""),
                            media_type="application/x-ndjson")  # fmt: skip
        return JSON(
            {
                "session_uid": s["uid"],
                "raw": page.raw,
                "first_seq": page.events[0]["seq"] if page.events else None,
                "last_seq": page.events[-1]["seq"] if page.events else None,
                "has_after": page.has_after,
                "lines": [line.decode("utf-8", "replace") for line in lines],
            }
        )

    # -- search --------------------------------------------------------------------------
    async def search(self, request: Request) -> Response:
        from helixd.query import search

        q = request.query_params
        f = params.filters(q, default_range="all")
        limit, offset = params.page(q, 20)
        prefix = q.get("prefix") in ("1", "true")
        query = search.SearchQuery(
            text=q.get("q", ""),
            fts=q.get("fts") in ("1", "true"),
            prefix=prefix,
            agents=f.agents,
            repo=f.repo,
            since=f.since,
            until=f.until,
            kinds=tuple(k for k in q.getlist("kind") if k),
            limit=limit,
            offset=offset,
            newest=PALETTE_WINDOW if prefix else 0,
        )
        try:
            hits = await self.reads.run(search.search, query, ("\x02", "\x03"))
        except search.SearchError as exc:
            return problem(400, str(exc))
        return JSON({"query": query.text, "hits": hits, "offset": offset, "limit": limit})

    # -- metrics -------------------------------------------------------------------------
    async def metric(self, request: Request) -> Response:
        from helixd.query import metrics, signal_metrics

        name = request.path_params["name"]
        q = request.query_params
        f = params.filters(q)
        sc, off = f.scope(), f.offset_s
        step = params.choice(q, "step", ("hour", "day", "week"), "day")
        group = params.choice(q, "group", ("", "agent", "repo", "model"), "")
        doc: Any
        if name == "summary":
            doc = await self.reads.run(metrics.summary, sc, self.table, off)
        elif name == "tokens":
            doc = await self.reads.run(metrics.tokens, sc, self.table, group, step, off)
        elif name == "costs":
            series = params.number(q, "series", metrics.SERIES, 0, 10_000) or None  # 0: all
            doc = await self.reads.run(
                metrics.costs, sc, self.table, group or "agent", step, off, 10, series
            )
        elif name == "tools":
            doc = await self.reads.run(signal_metrics.tools, sc, step, off)
        elif name == "files":
            limit, _ = params.page(q, 50)
            fstep = params.choice(q, "step", ("day", "week"), "week")
            doc = await self.reads.run(signal_metrics.files, sc, limit, fstep, off)
        elif name == "acceptance":
            doc = await self.reads.run(signal_metrics.acceptance, sc)
        elif name == "tests":
            limit, offset = params.page(q, 50)
            doc = await self.reads.run(signal_metrics.tests, sc, limit, offset, step, off)
        elif name == "activity":
            doc = await self.reads.run(metrics.activity, sc, off)
        else:
            return problem(404, f"no metric {name!r}", metrics=list(METRICS))
        if isinstance(doc, dict):
            doc = {"price_table_date": self.prices[0], **doc}
        return JSON(doc)

    # -- system --------------------------------------------------------------------------
    async def health(self, request: Request) -> Response:
        from helixd.query import status

        ok = True
        try:
            await self.reads.run(status.reachable)
        except Exception as exc:
            return JSON({"ok": False, "version": __version__, "error": str(exc)}, 503)
        return JSON({"ok": ok, "version": __version__})

    async def status(self, request: Request) -> Response:
        from helixd.query import status

        facts = await self.reads.run(status.store_facts)
        facts.pop("files", None)  # every tracked file's cursor: `helixctl status` has them
        return JSON(
            {
                "version": __version__,
                "daemon": self.daemon_status() if self.daemon_status else None,
                "store": facts,
                "price_table_date": self.prices[0],
                "time": time.time(),
            }
        )

    async def action(self, request: Request) -> Response:
        name = request.url.path.rsplit("/", 1)[-1]
        if not token_ok(self.token, request.headers.get(TOKEN_HEADER)):
            return problem(403, f"missing or wrong {TOKEN_HEADER} header")
        run = self.actions.get(name)
        if run is None:
            return problem(503, f"{name} is not available here")
        return JSON({"ok": True, name: await run()}, 202)


# search as you type (prefix=1): the best of the newest this many matches (a common prefix
# such as test* matches tens of thousands of documents; ranking them all costs ~50 ms)
PALETTE_WINDOW: Final = 2000
METRICS: Final = ("summary", "tokens", "costs", "tools", "files", "acceptance", "tests", "activity")

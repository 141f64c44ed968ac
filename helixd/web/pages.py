"""The dashboard's pages, rendered on the server: Overview, Sessions, Session Detail, Search,
Files, Tools, Costs, Tests.  Every page takes the same filters in its URL (``params.py``:
time range, agent, repo, model), so every view and every event has an address; each reads
the same ``helixd.query`` functions as the JSON API and the CLI."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from helixd import __version__
from helixd.query import detail, metrics, search, sessions, signal_metrics, transcript
from helixd.web import charts, params
from helixd.web.reads import Reads
from helixd.web.render import environment, money, session_url, shape

HERE = Path(__file__).parent
PAGE_EVENTS: Final = 50  # events the session page renders up front (more on scroll)
VIEWS: Final = (
    ("overview", "/", "Overview"),
    ("sessions", "/sessions", "Sessions"),
    ("search", "/search", "Search"),
    ("files", "/files", "Files"),
    ("tools", "/tools", "Tools"),
    ("costs", "/costs", "Costs"),
    ("tests", "/tests", "Tests"),
)


class Pages:
    def __init__(self, reads: Reads, prices: tuple[str, Any], token: str) -> None:
        self.reads = reads
        self.price_date, self.table = prices
        self.token = token
        self.env = environment(HERE / "templates")
        self._choices: tuple[float, dict[str, list[str]]] = (0.0, {})

    async def _choices_now(self) -> dict[str, list[str]]:
        at, found = self._choices
        if time.monotonic() - at > 30:
            found = await self.reads.run(metrics.choices)
            self._choices = (time.monotonic(), found)
        return found

    async def render(
        self, request: Request, template: str, view: str, status: int = 200, **ctx: Any
    ) -> Response:
        f = ctx.get("f") or params.Filters()
        base = {
            "request": request,
            "view": view,
            "views": VIEWS,
            "f": f,
            "choices": ctx.pop("choices") if "choices" in ctx else await self._choices_now(),
            "ranges": list(params.RANGES),
            "token": self.token,
            "version": __version__,
            "price_date": self.price_date,
            "charts": charts,
        }
        tpl = self.env.get_template(template)
        values = {**base, **ctx}
        html = await anyio.to_thread.run_sync(lambda: tpl.render(values))
        return HTMLResponse(html, status_code=status)

    async def error(self, request: Request, status: int, message: str) -> Response:
        """The error page; it renders without the store (the filter menus' choices are read
        from it, and a missing store is one of the errors it shows)."""
        try:
            choices = await self._choices_now()
        except Exception:
            choices = {}
        return await self.render(
            request, "error.html", "", status, message=message, choices=choices
        )

    # -- views ---------------------------------------------------------------------------
    async def overview(self, request: Request) -> Response:
        f = params.filters(request.query_params, default_range="30d")
        sc = f.scope()
        (summary, series), act, recent = await self.reads.gather(
            (metrics.overview, (sc, self.table, f.offset_s)),
            (metrics.activity, (sc, f.offset_s)),
            (sessions.list_sessions, (f.sessions(), self.table, 12, 0)),
        )
        return await self.render(
            request,
            "overview.html",
            "overview",
            f=f,
            s=summary,
            activity=act,
            series=series,
            cost_chart=charts.stacked_bars(
                series["slots"], series["keys"], _cost, fmt=money, label="cost by agent"
            ),
            recent=recent.sessions,
        )

    async def sessions(self, request: Request) -> Response:
        f = params.filters(request.query_params, default_range="all")
        limit, offset = params.page(request.query_params, 50)
        page = await self.reads.run(sessions.list_sessions, f.sessions(), self.table, limit, offset)
        return await self.render(
            request, "sessions.html", "sessions", f=f, page=page, limit=limit, offset=offset
        )

    async def _resolve(self, request: Request) -> tuple[Any, Response | None]:
        ref = request.path_params["uid"]
        found = await self.reads.run(sessions.lookup, ref)
        res = found.resolution
        if res.status == "none":
            return None, await self.error(request, 404, f"No session {ref!r} in the store.")
        if res.status == "ambiguous":
            return None, await self.render(
                request, "error.html", "", 409,
                message=f"{ref!r} names several sessions.", candidates=res.candidates,
            )  # fmt: skip
        return found, None

    async def _page(
        self, s: dict[str, Any], children: list[dict[str, Any]], **where: Any
    ) -> tuple[Any, list[dict[str, Any]]]:
        page = await self.reads.run(transcript.transcript, s, limit=PAGE_EVENTS, **where)
        turns = await self.reads.run(detail.turns, s, page.events, self.table)
        return page, shape(page.events, turns, children)

    async def session(self, request: Request) -> Response:
        found, err = await self._resolve(request)
        if err is not None:
            return err
        s = found.resolution.session
        q = request.query_params
        at = params.number(q, "at", -1, -1)
        where: dict[str, Any] = {"after": max(-1, at - 21)} if at >= 0 else {}
        page, items = await self._page(s, found.children, **where)
        card = (await self.reads.run(detail.session_cards, [s["uid"]], self.table))[0]
        line = await self.reads.run(detail.timeline, s["id"])
        ops = await self.reads.run(detail.file_operations, s["id"])
        return await self.render(
            request,
            "session.html",
            "sessions",
            s=card,
            found=found,
            page=page,
            items=items,
            at=at,
            timeline=charts.timeline(line["cells"], lambda seq: session_url(s["uid"], seq)),
            line=line,
            ops=ops,
            digest=found.digest or {},
        )

    async def events(self, request: Request) -> Response:
        """A fragment: the events after (or before) a seq, for paging and the live feed."""
        found, err = await self._resolve(request)
        if err is not None:
            return err
        s = found.resolution.session
        q = request.query_params
        after = params.number(q, "after", -1, -1)
        before = params.number(q, "before", -1, -1)
        where: dict[str, Any] = (
            {"before": before, "tail": True} if before >= 0 else {"after": after}
        )
        page, items = await self._page(s, found.children, **where)
        return await self.render(
            request, "_events.html", "sessions", s=s, page=page, items=items, at=-1,
            direction="before" if before >= 0 else "after",
        )  # fmt: skip

    async def search(self, request: Request) -> Response:
        q = request.query_params
        f = params.filters(q, default_range="all")
        text = q.get("q", "")
        limit, offset = params.page(q, 30)
        kinds = tuple(k for k in q.getlist("kind") if k)
        hits: list[dict[str, Any]] = []
        error = None
        if text.strip():
            query = search.SearchQuery(
                text=text, fts=q.get("fts") == "1", agents=f.agents, repo=f.repo,
                since=f.since, until=f.until, kinds=kinds, limit=limit, offset=offset,
            )  # fmt: skip
            try:
                hits = await self.reads.run(search.search, query, ("\x02", "\x03"))
            except search.SearchError as exc:
                error = str(exc)
        f = f.with_(extra={"q": text, **({"fts": "1"} if q.get("fts") == "1" else {})})
        return await self.render(
            request, "search.html", "search", f=f, text=text, hits=hits, error=error,
            kinds=sorted(search.SEARCH_KINDS), chosen=kinds, limit=limit, offset=offset,
        )  # fmt: skip

    async def files(self, request: Request) -> Response:
        f = params.filters(request.query_params)
        sc = f.scope()
        doc = await self.reads.run(signal_metrics.files, sc, 40, "week", f.offset_s)
        acc = await self.reads.run(signal_metrics.acceptance, sc)
        return await self.render(request, "files.html", "files", f=f, doc=doc, acc=acc)

    async def tools(self, request: Request) -> Response:
        f = params.filters(request.query_params)
        doc = await self.reads.run(signal_metrics.tools, f.scope(), "day", f.offset_s)
        slots = [{"start": s["start"], "by": s["by_status"]} for s in doc.get("over_time", [])]
        statuses = sorted({k for s in slots for k in s["by"]}, key=lambda k: (k != "success", k))
        chart = charts.stacked_bars(slots, statuses, _count, label="tool calls per day")
        return await self.render(
            request, "tools.html", "tools", f=f, doc=doc, calls_chart=chart, statuses=statuses
        )

    async def costs(self, request: Request) -> Response:
        f = params.filters(request.query_params)
        group = params.choice(request.query_params, "group", ("agent", "repo", "model"), "agent")
        # the chart colours SERIES - 1 keys and one for the rest: the store folds the rest
        doc = await self.reads.run(
            metrics.costs, f.scope(), self.table, group, "day", f.offset_s, series=charts.SERIES - 1
        )
        f = f.with_(extra={"group": group} if group != "agent" else {})
        ot = doc["over_time"]

        def bars(totals: dict[str, Any], link: str | None) -> Any:
            rows = [
                (k or "—", v["cost_usd"], (link + f.query(**{link[1:]: k})) if link and k else None)
                for k, v in list(totals.items())[:12]
            ]
            return charts.hbars(rows, fmt=money)

        return await self.render(
            request, "costs.html", "costs", f=f, doc=doc, group=group,
            cost_chart=charts.stacked_bars(ot["slots"], ot["keys"], _cost, fmt=money, label="cost"),
            by_agent=bars(doc["by_agent"], None), by_repo=bars(doc["by_repo"], None),
            by_model=bars(doc["by_model"], None),
        )  # fmt: skip

    async def tests(self, request: Request) -> Response:
        f = params.filters(request.query_params)
        limit, offset = params.page(request.query_params, 50)
        doc = await self.reads.run(
            signal_metrics.tests, f.scope(), limit, offset, "day", f.offset_s
        )
        slots = [
            {"start": t["start"], "by": {k: t[k] for k in ("passed", "failed", "other")}}
            for t in doc["trend"]
        ]
        chart = charts.stacked_bars(slots, ["passed", "failed", "other"], _count, label="tests")
        return await self.render(
            request, "tests.html", "tests", f=f, doc=doc, trend_chart=chart, limit=limit,
            offset=offset,
        )  # fmt: skip


def _cost(v: Any) -> float:
    return float(v["cost_usd"])


def _count(v: Any) -> float:
    return float(v)

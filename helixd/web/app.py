"""The Starlette application: routes of the API (``api.py``), the live feed (``live.py``)
and the pages (``pages.py``), behind the Host/Origin guard (``security.py``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from helixd.web import openapi
from helixd.web.api import JSON, Api
from helixd.web.base import guarded_app
from helixd.web.live import LiveFeed
from helixd.web.options import WebOptions
from helixd.web.reads import Reads
from helixd.web.security import load_token

# page path -> the ``Pages`` method that answers it
PAGES: Final = (
    ("/", "overview"),
    ("/sessions", "sessions"),
    ("/sessions/{uid}", "session"),
    ("/sessions/{uid}/events", "events"),
    ("/search", "search"),
    ("/files", "files"),
    ("/tools", "tools"),
    ("/costs", "costs"),
    ("/tests", "tests"),
)


class LazyPages:
    """The pages, loaded at the first page asked for: Jinja2, the templates and the charts
    cost an idle daemon nothing until someone opens the dashboard."""

    def __init__(self, reads: Reads, prices: tuple[str, Any], token: str) -> None:
        self.args = (reads, prices, token)
        self._pages: Any = None

    def get(self) -> Any:
        if self._pages is None:
            from helixd.web.pages import Pages

            self._pages = Pages(*self.args)
        return self._pages

    def handler(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        async def page(request: Request) -> Response:
            result: Response = await getattr(self.get(), name)(request)
            return result

        return page

    def routes(self) -> list[Route]:
        return [Route(path, self.handler(name)) for path, name in PAGES]

    async def error(self, request: Request, status: int, message: str) -> Response:
        result: Response = await self.get().error(request, status, message)
        return result


def build_app(o: WebOptions) -> tuple[Starlette, LiveFeed, Reads]:
    reads = Reads(o.store_db, o.read_threads)
    token = load_token(o.token_path)
    api = Api(reads, (o.prices[0], o.prices[1]), token, dict(o.actions), o.status)
    feed = LiveFeed(reads, o.prices[1])
    pages = LazyPages(reads, (o.prices[0], o.prices[1]), token)

    async def live(request: Request) -> Response:
        return StreamingResponse(
            feed.stream(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def schema(request: Request) -> Response:
        return JSON(openapi.document())

    routes = [
        Route("/api/health", api.health),
        Route("/api/status", api.status),
        Route("/api/sessions", api.sessions),
        Route("/api/sessions/{uid}", api.session),
        Route("/api/sessions/{uid}/messages", api.messages),
        Route("/api/sessions/{uid}/tool-calls", api.tool_calls),
        Route("/api/sessions/{uid}/raw", api.raw),
        Route("/api/search", api.search),
        Route("/api/metrics/{name}", api.metric),
        Route("/api/import", api.action, methods=["POST"]),
        Route("/api/renormalize", api.action, methods=["POST"]),
        Route("/api/live", live),
        Route("/api/openapi.json", schema),
        *pages.routes(),
    ]
    from helixd.query import NoStore

    app = guarded_app(routes, pages.error, (NoStore,), (o.host, *o.allowed_hosts))
    return app, feed, reads

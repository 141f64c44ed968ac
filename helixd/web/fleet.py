"""The dashboard pointed at the fleet (issue 17): a read-only server of its own
(``helixctl web --fleet``) over the fleet's PostgreSQL, beside — never inside — the daemon's.

Every answer comes from ``helixd.query.fleet`` (one function per question, plain data out)
on a connection of the reader role (``helix_reader``: it can read every machine's rows and
write none).  The views that make sense over many machines are here, each with machine and
user filters and breakdowns: Overview, Sessions, Costs, Tools, Files, Tests.  A session's
page shows its Tier 2 facts per machine; its conversation text only when that machine ships
it (``fleet.include_text``), else it says plainly that the text stays on the machine.  There
is no live feed, no search, no raw view and no POST route: the fleet holds no raw lines and
this server changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread
import psycopg
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from helixd import __version__
from helixd.query import fleet
from helixd.query.usage import ReportQuery
from helixd.web.api import JSON, problem
from helixd.web.base import guarded_app, listening_socket
from helixd.web.params import BadParam

HERE = Path(__file__).parent
T = TypeVar("T")
VIEWS: Final = (
    ("overview", "/", "Overview"),
    ("sessions", "/sessions", "Sessions"),
    ("costs", "/costs", "Costs"),
    ("tools", "/tools", "Tools"),
    ("files", "/files", "Files"),
    ("tests", "/tests", "Tests"),
)
PERIODS: Final = ("daily", "weekly", "monthly", "session")
MAX_DAYS: Final = 3660
SESSIONS_SHOWN: Final = 500  # the Sessions view's default page (?limit=, at most MAX_SHOWN)
MAX_SHOWN: Final = 5000


@dataclass(frozen=True, slots=True)
class FleetWebOptions:
    """Where the fleet is (``dsn`` without a password; ``password`` beside it or None for
    libpq's own sources), where to listen, and the price table (its date, the table)."""

    dsn: str
    password: str | None = None
    connect_timeout: float = 10
    host: str = "127.0.0.1"
    port: int = 7778
    allowed_hosts: tuple[str, ...] = ()
    prices: tuple[str, Mapping[str, Mapping[str, float]]] = ("", {})
    read_threads: int = 4


class FleetReads:
    """Each query function in a worker thread on that thread's own connection to the fleet
    (opened at its first read, kept)."""

    def __init__(self, o: FleetWebOptions) -> None:
        self.o = o
        self.limiter = anyio.CapacityLimiter(o.read_threads)
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def connection(self) -> tuple[Any, bool]:
        """This thread's connection, and whether it was opened just now."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed:
            return conn, False
        conn = fleet.open_fleet(self.o.dsn, self.o.password, self.o.connect_timeout)
        self._local.conn = conn
        with self._lock:
            self._all = [c for c in self._all if not c.closed]
            self._all.append(conn)
        return conn, True

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in a worker thread.  A connection the server dropped (a
        restart, a network cut) is closed and the read tried once more on a new one (reads
        change nothing); when that fails too the request gets FleetDbError (503)."""

        def call() -> T:
            while True:
                conn, fresh = self.connection()
                try:
                    return fn(conn, *args)
                except psycopg.OperationalError as exc:
                    self._local.conn = None
                    conn.close()
                    if fresh:
                        text = str(exc).strip()
                        reason = text.splitlines()[0] if text else "connection lost"
                        raise fleet.FleetDbError(f"the fleet database: {reason}") from None

        return await anyio.to_thread.run_sync(call, limiter=self.limiter)

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()


@dataclass(frozen=True, slots=True)
class FleetFilter:
    """The machines and users asked for (none: all), and the days back (0: all time)."""

    machines: tuple[str, ...]
    users: tuple[str, ...]
    days: int

    @classmethod
    def of(cls, q: QueryParams) -> FleetFilter:
        raw = q.get("days") or "0"
        try:
            days = int(raw)
        except ValueError:
            raise BadParam(f"days: want a whole number of days, not {raw!r}") from None
        if not 0 <= days <= MAX_DAYS:
            raise BadParam(f"days: between 0 (all time) and {MAX_DAYS}")
        machines = tuple(v for v in q.getlist("machine") if v)
        return cls(machines, tuple(v for v in q.getlist("user") if v), days)

    def since_ms(self) -> int | None:
        if not self.days:
            return None
        start = datetime.now(UTC) - timedelta(days=self.days)
        return int(start.timestamp() * 1000)

    def first_day(self) -> Any:
        return (datetime.now(UTC) - timedelta(days=self.days)).date() if self.days else None

    def query(self) -> str:
        from urllib.parse import urlencode

        pairs = [("machine", m) for m in self.machines] + [("user", u) for u in self.users]
        if self.days:
            pairs.append(("days", str(self.days)))
        return "?" + urlencode(pairs) if pairs else ""


def _count(q: QueryParams, name: str, default: int, most: int) -> int:
    raw = q.get(name) or str(default)
    if not raw.isdigit() or not 1 <= int(raw) <= most:
        raise BadParam(f"{name}: a whole number from 1 to {most}")
    return int(raw)


def _top(q: QueryParams) -> int:
    return _count(q, "top", 50, 1000)


def shown_sessions(q: QueryParams) -> int:
    """How many sessions the Sessions view lists (the latest first)."""
    return _count(q, "limit", SESSIONS_SHOWN, MAX_SHOWN)


class FleetApi:
    """The JSON endpoints (``/api/...``) and the questions the pages ask, one call each."""

    def __init__(self, reads: FleetReads, prices: tuple[str, Any]) -> None:
        self.reads = reads
        self.prices = prices

    async def machines(self) -> list[dict[str, Any]]:
        return await self.reads.run(fleet.machines)

    async def stats(
        self, f: FleetFilter, top: int, parts: tuple[str, ...] | None = None
    ) -> dict[str, Any]:
        """The fleet's stats (all of them, or only ``parts``: what a view shows)."""
        args = (f.since_ms(), top, self.prices[1], f.machines, f.users)
        if parts is None:
            return await self.reads.run(fleet.stats, *args)
        return await self.reads.run(fleet.stats, *args, parts)

    async def report(self, f: FleetFilter, period: str) -> dict[str, Any]:
        q = ReportQuery(period=period, first_day=f.first_day(), tz=UTC)
        return await self.reads.run(fleet.report, q, self.prices[1], f.machines, f.users)

    async def acceptance(self, f: FleetFilter) -> list[dict[str, Any]]:
        return await self.reads.run(fleet.acceptance, f.machines, f.users, f.since_ms())

    async def hooks(self, f: FleetFilter) -> list[dict[str, Any]]:
        return await self.reads.run(fleet.hook_activity, f.machines, f.users, f.since_ms())

    async def session(self, uid: str) -> list[dict[str, Any]]:
        return await self.reads.run(fleet.session_text, uid)

    # -- routes ----------------------------------------------------------------------------
    async def health(self, request: Request) -> Response:
        try:
            await self.machines()
        except fleet.FleetDbError as exc:
            return JSON({"ok": False, "version": __version__, "source": "fleet",
                         "error": str(exc)}, 503)  # fmt: skip
        return JSON({"ok": True, "version": __version__, "source": "fleet"})

    async def api_machines(self, request: Request) -> Response:
        return JSON({"machines": await self.machines()})

    async def api_stats(self, request: Request) -> Response:
        f = FleetFilter.of(request.query_params)
        doc = await self.stats(f, _top(request.query_params))
        return JSON({"price_table_date": self.prices[0], **doc})

    async def api_report(self, request: Request) -> Response:
        period = request.path_params["period"]
        if period not in PERIODS:
            return problem(404, f"no report {period!r}", reports=list(PERIODS))
        doc = await self.report(FleetFilter.of(request.query_params), period)
        return JSON({"price_table_date": self.prices[0], **doc})

    async def api_acceptance(self, request: Request) -> Response:
        return JSON({"machines": await self.acceptance(FleetFilter.of(request.query_params))})

    async def api_hooks(self, request: Request) -> Response:
        return JSON({"hook_activity": await self.hooks(FleetFilter.of(request.query_params))})

    async def api_session(self, request: Request) -> Response:
        uid = request.path_params["uid"]
        held = await self.session(uid)
        if not held:
            return problem(404, f"no session {uid!r} on any machine of the fleet")
        return JSON({"session_uid": uid, "machines": held})


def build_fleet_app(o: FleetWebOptions) -> tuple[Starlette, FleetReads]:
    from helixd.web.fleet_pages import FleetPages

    reads = FleetReads(o)
    api = FleetApi(reads, (o.prices[0], o.prices[1]))
    pages = FleetPages(api, VIEWS)
    routes = [
        Route("/api/health", api.health),
        Route("/api/machines", api.api_machines),
        Route("/api/stats", api.api_stats),
        Route("/api/reports/{period}", api.api_report),
        Route("/api/acceptance", api.api_acceptance),
        Route("/api/hooks", api.api_hooks),
        Route("/api/sessions/{uid}", api.api_session),
        *(Route(href, pages.handler(key)) for key, href, _ in VIEWS),
        Route("/sessions/{uid}", pages.session),
    ]

    async def page_error(request: Request, status: int, message: str) -> Response:
        return HTMLResponse(pages.error(status, message), status_code=status)

    app = guarded_app(routes, page_error, (fleet.FleetDbError,), (o.host, *o.allowed_hosts))
    return app, reads


def serve_fleet(o: FleetWebOptions, listening: Callable[[str], None]) -> None:
    """Serve the fleet dashboard in the foreground until SIGINT or SIGTERM; ``listening(url)``
    once the socket is bound (port 0: any free port).  OSError when it cannot be bound."""
    import uvicorn

    app, reads = build_fleet_app(o)
    sock, url = listening_socket(o.host, o.port)
    listening(url)
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        http="h11",
        ws="none",
        timeout_graceful_shutdown=2,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        reads.close()
        sock.close()

"""What the daemon's dashboard (``app.py``, ``server.py``) and the fleet's (``fleet.py``)
share: the listening socket, and the Starlette application behind the Host/Origin guard with
one error routing (a problem document under ``/api/``, the page's error view elsewhere)."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from helixd.web.api import problem
from helixd.web.params import BadParam
from helixd.web.security import Guard

HERE = Path(__file__).parent
PageError = Callable[[Request, int, str], Awaitable[Response]]


def listening_socket(host: str, port: int) -> tuple[socket.socket, str]:
    """A socket bound and listening on ``host:port`` (0: any free port), and its URL.
    Raises OSError when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto TCP (not 0): asyncio then sets TCP_NODELAY on each accepted connection, else a
    # keep-alive answer written in two pieces waits ~40 ms for the delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}/"


def guarded_app(
    routes: Sequence[BaseRoute],
    page_error: PageError,
    unavailable: Sequence[type[Exception]],
    hosts: Sequence[str],
) -> Starlette:
    """The routes and ``/static`` behind the guard; a bad parameter answers 400, an HTTP
    error its status, an ``unavailable`` error (no store, the fleet unreachable) 503."""

    async def failed(request: Request, exc: Exception) -> Response:
        if isinstance(exc, BadParam):
            status, message = 400, str(exc)
        elif isinstance(exc, HTTPException):
            status, message = exc.status_code, str(exc.detail)
        else:
            status, message = 503, str(exc)
        if request.url.path.startswith("/api/"):
            return problem(status, message)
        return await page_error(request, status, message)

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        BadParam: failed,
        HTTPException: failed,
        **{e: failed for e in unavailable},
    }
    static = Mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app = Starlette(routes=[*routes, static], exception_handlers=handlers)
    app.add_middleware(Guard, hosts=tuple(hosts))
    return app

"""Who may talk to the server, and what they may make it do.

* **Host check** (DNS rebinding): a request whose ``Host`` header is not a loopback name
  (``localhost``, ``127.0.0.1``, ``[::1]``), the address the server listens on, or a name
  configured in ``[web] allowed_hosts`` gets 421 and nothing else.
* **No CORS**: no ``Access-Control-*`` header is ever sent, so a page on another origin can
  neither read an answer nor send a request with a custom header.
* **Token** for the endpoints that change something (``POST /api/import``,
  ``/api/renormalize``): a random per-user token kept in a 0600 file; the pages get it in a
  ``<meta>`` tag (same origin only) and send it in the ``X-Helix-Token`` header.  A request
  with an ``Origin`` that is not the server's own is refused too.
* Every answer carries a strict Content-Security-Policy (scripts and styles from this server
  only), ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options: DENY``.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_HEADER: Final = "x-helix-token"
LOOPBACK: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
HEADERS: Final = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
        b" connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


def load_token(path: Path) -> str:
    """The token in ``path``, created (random, 0600, in a 0700 directory) when missing or
    empty; its mode is tightened when someone loosened it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text().strip()
        if token:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return token
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.replace(tmp, path)
    return token


def token_ok(expected: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode())


def host_name(value: str) -> str:
    """``Host`` header -> the name without the port (``[::1]:8080`` -> ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _origin_host(origin: str) -> str:
    return host_name(origin.split("://", 1)[-1].split("/", 1)[0])


class Guard:
    """ASGI middleware: the Host check, the Origin check for unsafe methods, and the
    security headers on every answer."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(LOOPBACK | {h.lower() for h in hosts})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = host_name(headers.get("host", ""))
        if host not in self.hosts:
            await PlainTextResponse("unknown Host header (DNS rebinding guard)", 421)(
                scope, receive, send
            )
            return
        origin = headers.get("origin")
        unsafe = scope.get("method", "GET") not in ("GET", "HEAD")
        if unsafe and origin is not None and _origin_host(origin) not in self.hosts:
            await PlainTextResponse("cross-origin request refused", 403)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

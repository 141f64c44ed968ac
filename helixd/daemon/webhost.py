"""The daemon's side of the web face: build the server from plain values, bind it (a port in
use is logged and the daemon goes on without the web face), hand it the daemon's actions.

The web stack (Starlette, uvicorn, Jinja2) is imported only when the server is enabled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from helixd import paths
from helixd.core.commits import CommitHub

if TYPE_CHECKING:
    from helixd.web.server import WebServer

log = structlog.get_logger("helixd")


def preload() -> None:
    """Import the web stack (for a worker thread, so that the event loop does not wait)."""
    import helixd.web.server  # noqa: F401


def token_path() -> Path:
    """The per-user token of the mutating endpoints (0600, in the state directory)."""
    return paths.state_dir() / "web-token"


def start(
    *,
    enabled: bool,
    host: str,
    port: int,
    allowed_hosts: list[str],
    store_db: Path,
    prices: tuple[str, Mapping[str, Mapping[str, float]]],
    hub: CommitHub,
    actions: Mapping[str, Callable[[], Awaitable[dict[str, Any]]]],
    status: Callable[[], dict[str, Any]],
) -> WebServer | None:
    """A bound server (``await server.serve()`` runs it), or None when disabled or the
    address cannot be bound."""
    if not enabled:
        return None
    from helixd.web.options import WebOptions
    from helixd.web.server import WebServer

    server = WebServer(
        WebOptions(
            store_db=store_db,
            token_path=token_path(),
            host=host,
            port=port,
            allowed_hosts=tuple(allowed_hosts),
            prices=prices,
            actions=actions,
            status=status,
        ),
        hub,
    )
    try:
        server.bind()
    except OSError as exc:
        log.warning("web_unavailable", host=host, port=port, error=str(exc))
        server.stop()
        return None
    return server

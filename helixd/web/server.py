"""The HTTP server inside ``helixd``: uvicorn's ``Server`` on the daemon's own event loop.

Two things differ from ``uvicorn.run``: the daemon owns the signals (uvicorn's handlers are
not installed: SIGTERM drains the daemon, which then stops this server), and the server does
not wake up ten times a second to refresh its Date header (no Date header is sent, and the
main loop waits for the stop request), so an idle daemon stays idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator
from typing import Any

import structlog
import uvicorn

from helixd.core.commits import CommitHub
from helixd.web.app import build_app
from helixd.web.base import listening_socket
from helixd.web.options import WebOptions

log = structlog.get_logger("helixd.web")


class _Embedded(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stop_requested = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the daemon handles signals

    async def main_loop(self) -> None:
        await self.on_tick(0)  # the default headers, once
        await self.stop_requested.wait()


class WebServer:
    """``await serve()`` until ``stop()``; ``url`` once it listens."""

    def __init__(self, options: WebOptions, hub: CommitHub | None = None) -> None:
        self.options = options
        self.app, self.feed, self.reads = build_app(options)
        self.unsubscribe = hub.subscribe(self.feed.on_commit) if hub is not None else None
        self.sock: socket.socket | None = None
        self.url: str | None = None
        self._server: _Embedded | None = None

    def bind(self) -> str:
        """Open the listening socket now (so that a port in use is known at once); returns
        the URL.  Raises OSError when the address cannot be bound."""
        sock, self.url = listening_socket(self.options.host, self.options.port)
        sock.set_inheritable(True)
        self.sock = sock
        return self.url

    async def serve(self) -> None:
        if self.sock is None:
            self.bind()
        assert self.sock is not None
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            log_config=None,
            access_log=False,
            date_header=False,
            server_header=False,
            http="h11",
            ws="none",
            timeout_graceful_shutdown=2,
            timeout_keep_alive=5,
        )
        self._server = _Embedded(config)
        log.info("web_listening", url=self.url)
        async with asyncio.TaskGroup() as tg:
            feed = tg.create_task(self.feed.run())
            try:
                await self._server.serve(sockets=[self.sock])
            finally:
                self.feed.close()
                await feed
                self.reads.close()

    def stop(self) -> None:
        self.feed.close()
        if self.unsubscribe is not None:
            self.unsubscribe()
        if self._server is not None:
            self._server.should_exit = True
            self._server.stop_requested.set()

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "live_clients": self.feed.clients}

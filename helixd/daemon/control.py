"""The Unix-socket server: accept, check the peer, read NDJSON lines, dispatch, reply.

* the socket directory is 0700 and the socket 0600; every connection's peer uid is checked
  (``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS) and another user is refused;
* with systemd socket activation (``LISTEN_PID``/``LISTEN_FDS``) the given socket is used;
* every request gets a reply or a clean close, never an unhandled exception: bad input
  (garbage, invalid UTF-8, a wrong type, nesting deeper than ``protocol.MAX_DEPTH``) gets
  an error reply and the connection stays usable; a line over 1 MiB gets its error reply
  at once and the rest of it is skipped; a half line left hanging is closed by the idle
  timeout; a client that leaves early is simply dropped; at most ``max_requests`` requests
  are handled at once (the others wait their turn) and at most ``max_connections``
  connections are kept open (beyond that a client is told ``busy`` and closed);
* the listen backlog is ``BACKLOG`` (1024): ``asyncio.start_unix_server`` calls
  ``listen()`` again with its own default (100) unless it is told;
* the handlers live in the daemon: ``Control`` only frames, checks and dispatches.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import struct
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import structlog

from helixd.core import protocol
from helixd.filemodes import private_dir
from helixd.paths import check_socket_path

log = structlog.get_logger("helixd.control")

Handler = Callable[[protocol.Request], Awaitable[dict[str, Any]]]
IDLE_TIMEOUT: Final = 10.0
MAX_REQUESTS: Final = 64
MAX_CONNECTIONS: Final = 2048
BACKLOG: Final = 1024
SD_LISTEN_FDS_START: Final = 3


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid, or None when the platform cannot tell."""
    if hasattr(socket, "SO_PEERCRED"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", raw)[1])
    if sys.platform == "darwin":  # struct xucred {u_int version; uid_t uid; ...}
        raw = sock.getsockopt(0, 0x001, 76)  # SOL_LOCAL, LOCAL_PEERCRED
        return int(struct.unpack_from("2I", raw)[1])
    return None


def activated_socket(
    environ: dict[str, str] | os._Environ[str] = os.environ,
) -> socket.socket | None:
    """The listening socket systemd passed (``LISTEN_FDS``), if it is for us."""
    if environ.get("LISTEN_PID") != str(os.getpid()) or int(environ.get("LISTEN_FDS", "0")) < 1:
        return None
    sock = socket.socket(fileno=SD_LISTEN_FDS_START)
    os.set_inheritable(sock.fileno(), False)
    for key in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(key, None)
    return sock


def bind_socket(path: Path) -> socket.socket:
    """Bind ``path`` (socket 0600; its directory 0700 when it is Helix's own, never a shared
    sticky one like ``/tmp``), replacing a stale socket file."""
    check_socket_path(path)
    private_dir(path.parent)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)  # stale: the pid lock guarantees no other daemon owns it
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(BACKLOG)
    return sock


class Control:
    def __init__(
        self,
        handler: Handler,
        *,
        max_requests: int = MAX_REQUESTS,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self.handler = handler
        self.slots = asyncio.Semaphore(max_requests)
        self.max_connections = max_connections
        self.connections = 0
        self.idle_timeout = idle_timeout
        self.server: asyncio.AbstractServer | None = None
        self.path: Path | None = None
        self.refused = 0
        self.errors = 0

    async def start(self, path: Path) -> str:
        """Serve on the activated socket if systemd gave one, else bind ``path``."""
        sock = activated_socket()
        how = "activated"
        if sock is None:
            sock = bind_socket(path)
            self.path, how = path, "bound"
        self.server = await asyncio.start_unix_server(
            self._serve, sock=sock, limit=protocol.MAX_LINE + 1, backlog=BACKLOG
        )
        return how

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = writer.get_extra_info("socket")
            uid = peer_uid(sock) if sock is not None else None
            if uid is not None and uid != os.getuid():
                self.refused += 1
                log.warning("peer_refused", uid=uid)
                await _refuse(reader, writer, "permission denied")
                return
            if self.connections >= self.max_connections:
                await _refuse(reader, writer, "busy, retry later")
                return
            self.connections += 1
            try:
                await self._lines(reader, writer)
            finally:
                self.connections -= 1
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the client left, or stayed silent too long: close
        except Exception as exc:  # never an unhandled exception in the callback: close
            self.errors += 1
            log.error("connection_failed", error=f"{type(exc).__name__}: {exc}", exc_info=True)
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _lines(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                line = await asyncio.wait_for(reader.readuntil(b"\n"), self.idle_timeout)
            except asyncio.LimitOverrunError:
                self.errors += 1
                # the reply first (the client may still be sending), then skip the rest
                await _reply(
                    writer, {"ok": False, "error": f"line longer than {protocol.MAX_LINE} bytes"}
                )
                await self._skip_line(reader)
                continue
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():  # a half line and then EOF
                    await _reply(writer, {"ok": False, "error": "incomplete line"})
                return
            if not line.strip():
                continue
            async with self.slots:
                reply = await self._dispatch(line)
            await _reply(writer, reply)

    async def _skip_line(self, reader: asyncio.StreamReader) -> None:
        """Drop the rest of an over-long line, up to and including its newline."""
        while True:
            try:
                await asyncio.wait_for(reader.readuntil(b"\n"), self.idle_timeout)
                return
            except asyncio.LimitOverrunError as exc:
                await reader.readexactly(exc.consumed)

    async def _dispatch(self, line: bytes) -> dict[str, Any]:
        try:
            request = protocol.decode(line)
        except protocol.ProtocolError as exc:
            self.errors += 1
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # decode is total; should it ever fail, still a reply
            self.errors += 1
            log.error("decode_failed", error=f"{type(exc).__name__}: {exc}", exc_info=True)
            return {"ok": False, "error": f"bad request: {type(exc).__name__}"}
        try:
            return {"ok": True, **await self.handler(request)}
        except protocol.ProtocolError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # a handler bug must not kill the server
            log.error("handler_failed", op=request.op, error=str(exc), exc_info=True)
            return {"ok": False, "error": f"internal error: {type(exc).__name__}"}


async def _refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, why: str) -> None:
    """Answer a refused peer, then take (and drop) a little of what it sent before closing.

    Closing a Unix socket with unread bytes resets it, and the peer would see
    "connection reset" instead of the reason: a bounded read lets the answer arrive.
    """
    await _reply(writer, {"ok": False, "error": why})
    with contextlib.suppress(Exception):
        await asyncio.wait_for(reader.read(1 << 16), 0.5)


async def _reply(writer: asyncio.StreamWriter, reply: dict[str, Any]) -> None:
    """Write one reply line (a reply that cannot be encoded becomes an error reply)."""
    try:
        data = protocol.encode(reply)
    except Exception as exc:
        log.error("reply_unencodable", error=f"{type(exc).__name__}: {exc}")
        data = protocol.encode({"ok": False, "error": "internal error: reply not encodable"})
    writer.write(data)
    await writer.drain()

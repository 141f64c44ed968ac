"""A small blocking client of the control socket, for ``helixctl ping|rescan|flush``."""

from __future__ import annotations

import json
import socket
from typing import Any

from helixd import paths
from helixd.core import protocol


class DaemonUnavailable(OSError):
    """No daemon answers on the socket."""


def request(op: str, wait: float = 5.0, **fields: Any) -> dict[str, Any]:
    """Send one request and return the daemon's reply; ``wait`` bounds the whole exchange."""
    path = paths.socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(wait)
            sock.connect(str(path))
            sock.sendall(protocol.encode({"op": op, **fields}))
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
    except OSError as exc:
        raise DaemonUnavailable(f"helixd does not answer on {path}: {exc}") from exc
    reply: dict[str, Any] = json.loads(buf)
    return reply

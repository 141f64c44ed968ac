"""``helixctl hook <agent> [ARG]``: deliver one agent hook payload to the daemon.

Runs inside the agent's hook deadline, so it imports only the standard library, prints
nothing on stdout, never blocks the agent for long and always exits 0.  The payload is read
from stdin (Claude, Gemini, Grok, Codex hooks) or from the last argument (Codex ``notify``
passes its JSON as argv).  It goes to the daemon's socket with a 1 s budget; when the daemon
is down (or slow) the message is appended to the spool file (mode 0600, secrets masked by
``helixd.core.redact``, which needs ``ahocorasick_rs`` beyond the standard library), which
the daemon drains when it starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import socket
import sys
import time

from helixd import filemodes, paths
from helixd.core import protocol

BUDGET_S = 1.0
# Environment variables agents set for their hooks that say whose hook this is.
HINT_SUFFIXES = ("_HOOK_EVENT", "_HOOK_NAME", "_SESSION_ID")
STDIN_MAX = protocol.MAX_LINE
RAW_MAX = 4096  # characters of a payload that is not JSON kept for the daemon


def _read_stdin(deadline: float) -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size = 0
    while size < STDIN_MAX:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _payload(agent: str, args: list[str], raw: bytes) -> dict[str, object]:
    text = args[-1] if args else raw.decode("utf-8", "replace")
    try:
        obj = json.loads(text) if text.strip() else {}
    except ValueError:
        obj = {"raw": _cut(text, RAW_MAX)}
    return obj if isinstance(obj, dict) else {"raw": obj}


def _cut(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at whitespace: a token cut in half would be too short
    for the secret rules to recognise, and its first half would be kept readable."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return head[: max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"), 0)]


def _send(message: bytes, deadline: float) -> bool:
    path = paths.socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(max(deadline - time.monotonic(), 0.05))
            sock.connect(str(path))
            sock.sendall(message)
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
        return b'"ok":true' in reply
    except OSError:
        return False


def spool(message: bytes) -> None:
    """Append one message to the spool, secrets masked (the prompt a hook carries may hold
    one): only this path pays for importing the redaction rules."""
    from helixd.core.redact import redact

    message = redact(message)[0]
    path = paths.spool_path()
    filemodes.private_dir(path.parent)
    fd = filemodes.open_private(path, os.O_WRONLY | os.O_APPEND)  # 0600, never through a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, message)
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    """``argv`` = ``[agent, *args]``.  Always returns 0."""
    with contextlib.suppress(Exception):
        deadline = time.monotonic() + BUDGET_S
        agent = (argv[0] if argv else "").removesuffix("-notify")
        args, then = _split_then(argv[1:])
        payload = _payload(agent, args, b"" if args else _read_stdin(deadline - 0.5))
        message = protocol.encode(
            {"op": "hook", "agent": agent, "payload": payload, "sent_at": time.time()}
        )
        if not _send(message, deadline):
            spool(message)
        if then:
            _chain(then, args)
    return 0


def _split_then(args: list[str]) -> tuple[list[str], list[str]]:
    """``--then PROG ARGS… JSON``: a notify program the user had before Helix was installed;
    it still gets the payload (``helixctl hooks install`` chains rather than replaces it)."""
    if "--then" not in args:
        return args, []
    i = args.index("--then")
    return args[-1:], args[i + 1 : -1]


def _chain(then: list[str], args: list[str]) -> None:
    import subprocess  # only on this path: the plain hook stays import-light

    subprocess.Popen(
        [*then, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

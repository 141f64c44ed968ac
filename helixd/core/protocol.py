"""The control socket's message shapes: newline-delimited JSON, one object per line each way.

Pure and standard-library only (the hook entry point imports it).  See
``docs/socket-protocol.md``.  Every request and reply carries ``"v": 1``.  A request is
either a command envelope ``{"v": 1, "op": "ping"|"status"|"rescan"|"flush"}``, a hook
envelope ``{"v": 1, "op": "hook", "agent": NAME, "payload": {...}}`` (what
``helixctl hook`` sends), or an agent's hook payload sent verbatim (``nc -U``): a Claude,
Gemini or Grok hook object (it has ``hook_event_name``) or a Codex ``notify`` object (its
``type`` is ``agent-turn-complete``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # keep the hook entry point's imports to the bare minimum
    from typing import Any, Final

VERSION: Final = 1
MAX_LINE: Final = 1 << 20
MAX_DEPTH: Final = 64  # arrays/objects nested deeper are refused (hook payloads use < 10)
MAX_TIMEOUT: Final = 86_400.0
MAX_AGENT: Final = 64
OPS: Final = frozenset({"ping", "status", "rescan", "flush", "hook"})
# Cline's SDK names its events in ``hookName``; its session ends with ``session_shutdown``
SESSION_END_EVENTS: Final = frozenset(
    {"SessionEnd", "session_end", "sessionEnd", "session_shutdown"}
)


class ProtocolError(ValueError):
    """A request that cannot be served; the message goes back to the client."""


class Request:
    """One decoded request (a plain class: ``dataclasses`` costs the hook 15 ms to import)."""

    __slots__ = ("agent", "env", "op", "payload", "timeout")

    def __init__(
        self,
        op: str,
        agent: str | None = None,
        payload: dict[str, Any] | None = None,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.op = op
        self.agent = agent
        self.payload = payload if payload is not None else {}
        self.timeout = timeout
        self.env = env if env is not None else {}  # the hook's agent-set variables

    def __repr__(self) -> str:
        return f"Request({self.op!r}, {self.agent!r})"


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps({"v": VERSION, **obj}, separators=(",", ":"), default=str).encode() + b"\n"


def decode(line: bytes) -> Request:
    """One request line -> ``Request``; raises ``ProtocolError`` with a client-facing reason
    and nothing else, whatever the bytes (wrong types, deep nesting, invalid UTF-8)."""
    try:
        obj = json.loads(line)
    except RecursionError:
        raise ProtocolError(f"nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("expected a JSON object")
    if _too_deep(obj):
        raise ProtocolError(f"nested deeper than {MAX_DEPTH} levels")
    op = obj.get("op")
    if op is None:
        return _verbatim(obj)
    if not isinstance(op, str):
        raise ProtocolError(f"'op' must be a string (known: {', '.join(sorted(OPS))})")
    version = obj.get("v", VERSION)
    if type(version) is not int or version != VERSION:
        raise ProtocolError(
            f"unsupported protocol version {_short(version)} (this daemon speaks 1)"
        )
    if op not in OPS:
        raise ProtocolError(f"unknown op {_short(op)} (known: {', '.join(sorted(OPS))})")
    if op == "hook":
        agent, payload = obj.get("agent"), obj.get("payload")
        if not isinstance(agent, str) or not isinstance(payload, dict):
            raise ProtocolError("a hook needs an 'agent' name and a 'payload' object")
        if not agent or len(agent) > MAX_AGENT:
            raise ProtocolError(f"an agent name is 1 to {MAX_AGENT} characters")
        env = obj.get("env")
        hints = (
            {str(k): v for k, v in env.items() if isinstance(v, str)}
            if isinstance(env, dict)
            else {}
        )
        return Request("hook", agent, payload, env=hints)
    return Request(op, timeout=_timeout(obj.get("timeout")))


def _timeout(value: object) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value <= MAX_TIMEOUT  # also refuses NaN
    ):
        raise ProtocolError(f"'timeout' must be a number of seconds in (0, {MAX_TIMEOUT:g}]")
    return float(value)


def _too_deep(obj: object) -> bool:
    """Whether ``obj`` nests arrays/objects deeper than ``MAX_DEPTH`` (iterative: no
    recursion to overflow)."""
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return False


def _short(value: object) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float)) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _verbatim(obj: dict[str, Any]) -> Request:
    """An agent's own hook payload, sent without an envelope; the daemon works out the
    agent from the transcript path (adapters know their roots)."""
    if (
        obj.get("type") == "agent-turn-complete"
        or "hook_event_name" in obj
        or ("hookEventName" in obj)
    ):
        return Request("hook", None, obj)
    raise ProtocolError("no 'op' and not a known agent hook payload")


def session_ended(payload: dict[str, Any]) -> bool:
    name = (
        payload.get("hook_event_name")
        or payload.get("hookEventName")
        or payload.get("hookName")
        or payload.get("type")
    )
    return isinstance(name, str) and name in SESSION_END_EVENTS


def transcript_path(payload: dict[str, Any]) -> str | None:
    """The transcript a hook names, as given: an untrusted path that the daemon's path gate
    resolves and checks against the configured roots before anything is read."""
    for key in ("transcript_path", "transcriptPath", "agent_transcript_path", "rollout_path"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def session_id(payload: dict[str, Any]) -> str | None:
    for key in ("session_id", "sessionId", "thread-id", "thread_id"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    context = payload.get("sessionContext")  # Cline's SDK: its root session's id
    value = context.get("rootSessionId") if isinstance(context, dict) else None
    return value if isinstance(value, str) and value else None

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
OPS: Final = frozenset({"ping", "status", "rescan", "flush", "hook"})
SESSION_END_EVENTS: Final = frozenset({"SessionEnd", "session_end", "sessionEnd"})


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
    """One request line -> ``Request``; raises ``ProtocolError`` with a client-facing reason."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("expected a JSON object")
    op = obj.get("op")
    if op is None:
        return _verbatim(obj)
    version = obj.get("v", VERSION)
    if version != VERSION:
        raise ProtocolError(f"unsupported protocol version {version!r} (this daemon speaks 1)")
    if op not in OPS:
        raise ProtocolError(f"unknown op {op!r} (known: {', '.join(sorted(OPS))})")
    if op == "hook":
        agent, payload = obj.get("agent"), obj.get("payload")
        if not isinstance(agent, str) or not isinstance(payload, dict):
            raise ProtocolError("a hook needs an 'agent' name and a 'payload' object")
        env = obj.get("env")
        hints = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
        return Request("hook", agent, payload, env=hints)
    timeout = obj.get("timeout")
    return Request(op, timeout=float(timeout) if isinstance(timeout, (int, float)) else None)


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
    name = payload.get("hook_event_name") or payload.get("hookEventName") or payload.get("type")
    return name in SESSION_END_EVENTS


def transcript_path(payload: dict[str, Any]) -> str | None:
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
    return None

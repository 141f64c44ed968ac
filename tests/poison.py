"""Valid sessions of every agent and poison lines of every class, for the quarantine tests.

Each ``Agent`` writes a small valid session (user and assistant messages, usage) under a
HOME, and makes three kinds of poison line from one of its valid lines: a timestamp, a token
count or a record type replaced by a raw JSON literal (``b"NaN"``, ``b"-1e308"``,
``b"[1]"`` …: text no encoder would write, put in place of a marker).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from helixd.adapters import Adapter
from helixd.adapters.registry import REGISTRY

MARK = "@@POISON@@"
ADAPTERS = {a.name: a for a in REGISTRY}


def dumps(obj: Any, literal: bytes | None = None) -> bytes:
    """One JSONL line; the string ``MARK`` (quotes included) becomes ``literal``."""
    line = orjson.dumps(obj)
    if literal is not None:
        assert line.count(f'"{MARK}"'.encode()) == 1, line
        line = line.replace(f'"{MARK}"'.encode(), literal)
    return line + b"\n"


def iso(n: int) -> str:
    return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


@dataclass(frozen=True)
class Agent:
    name: str
    rel: str  # the session file, relative to the agent's root
    root: Callable[[Path], Path]  # the agent's root under a HOME
    uid: str
    valid: Callable[[int], list[bytes]]  # a valid session of about n lines
    bad_ts: Callable[[bytes], bytes]  # a message line whose time is the literal
    bad_count: Callable[[bytes], bytes]  # a usage line with one counter the literal
    bad_type: Callable[[bytes], bytes]  # a record whose type is the literal

    @property
    def adapter(self) -> Adapter:
        return ADAPTERS[self.name]

    def write(self, home: Path, lines: list[bytes]) -> Path:
        path = self.root(home) / self.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines))
        return path


# -- Claude ------------------------------------------------------------------------------------
CLAUDE_SID = "11111111-2222-4333-8444-555555555555"


def _claude(n: int, kind: str = "user", ts: Any = None, usage: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": CLAUDE_SID,
        "timestamp": iso(n) if ts is None else ts,
        "cwd": "/work/proj",
        "message": {"role": kind, "content": f"prompt {n}"},
    }
    if kind == "assistant":
        obj["message"] = {
            "role": "assistant",
            "id": f"msg_{n}",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"answer {n}"}],
            "usage": usage or {"input_tokens": 10, "output_tokens": n + 1},
        }
        obj["requestId"] = f"req_{n}"
    return obj


CLAUDE = Agent(
    name="claude",
    rel=f"-work-proj/{CLAUDE_SID}.jsonl",
    root=lambda home: home / ".claude" / "projects",
    uid=f"claude:{CLAUDE_SID}",
    valid=lambda n: [dumps(_claude(i, "user" if i % 2 == 0 else "assistant")) for i in range(n)],
    bad_ts=lambda lit: dumps(_claude(900, ts=MARK), lit),
    bad_count=lambda lit: dumps(
        _claude(901, "assistant", usage={"input_tokens": MARK, "output_tokens": 3}), lit
    ),
    bad_type=lambda lit: dumps({**_claude(902), "type": MARK}, lit),
)

# -- Codex -------------------------------------------------------------------------------------
CODEX_ID = "019c8a4c-ed82-79a1-aa28-7738fc5ab61a"


def _codex_usage(total: int, last: Any = None) -> dict[str, Any]:
    def counts(n: Any) -> dict[str, Any]:
        return {
            "input_tokens": n,
            "cached_input_tokens": 0,
            "output_tokens": 5,
            "reasoning_output_tokens": 0,
        }

    return {
        "type": "token_count",
        "info": {
            "total_token_usage": counts(total),
            "last_token_usage": counts(last if last is not None else 100),
        },
    }


def _codex_valid(n: int) -> list[bytes]:
    lines = [
        dumps(
            {
                "timestamp": iso(0),
                "type": "session_meta",
                "payload": {
                    "id": CODEX_ID,
                    "timestamp": iso(0),
                    "cwd": "/work/proj",
                    "cli_version": "0.104.0",
                },
            }
        ),
        dumps(
            {
                "timestamp": iso(0),
                "type": "turn_context",
                "payload": {"model": "gpt-5-codex", "cwd": "/work/proj"},
            }
        ),
    ]
    for i in range(1, n):
        role = "user" if i % 3 == 1 else "assistant"
        if i % 3 == 0:
            payload: dict[str, Any] = {"type": "event_msg", "payload": _codex_usage(100 * i)}
            lines.append(dumps({"timestamp": iso(i), **payload}))
            continue
        item = {
            "type": "message",
            "role": role,
            "content": [
                {"type": "input_text" if role == "user" else "output_text", "text": f"{role} {i}"}
            ],
        }
        lines.append(dumps({"timestamp": iso(i), "type": "response_item", "payload": item}))
    return lines


def _codex_message(ts: Any, text: str) -> dict[str, Any]:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"timestamp": ts, "type": "response_item", "payload": item}


CODEX = Agent(
    name="codex",
    rel=f"2026/01/01/rollout-2026-01-01T00-00-00-{CODEX_ID}.jsonl",
    root=lambda home: home / ".codex" / "sessions",
    uid=f"codex:{CODEX_ID}",
    valid=_codex_valid,
    bad_ts=lambda lit: dumps(_codex_message(MARK, "poisoned time"), lit),
    bad_count=lambda lit: dumps(
        {"timestamp": iso(59), "type": "event_msg", "payload": _codex_usage(99_000, MARK)}, lit
    ),
    bad_type=lambda lit: dumps({**_codex_message(iso(58), "typed"), "type": MARK}, lit),
)

# -- Gemini ------------------------------------------------------------------------------------
GEMINI_SID = "5e1f0a2b-6c1d-4e8f-9a0b-1c2d3e4f5a6b"


def _gemini_msg(i: int, ts: Any = None, tokens: Any = None, mtype: Any = None) -> dict[str, Any]:
    kind = mtype if mtype is not None else ("user" if i % 2 else "gemini")
    msg: dict[str, Any] = {"id": f"m{i}", "timestamp": iso(i) if ts is None else ts, "type": kind}
    if kind == "user":
        msg["content"] = [{"text": f"prompt {i}"}]
    else:
        msg.update(
            content=f"answer {i}",
            model="gemini-2.5-pro",
            tokens=tokens
            or {"input": 100, "output": 10, "cached": 0, "thoughts": 2, "tool": 0, "total": 112},
        )
    return msg


def _gemini_valid(n: int) -> list[bytes]:
    header = {"sessionId": GEMINI_SID, "startTime": iso(0), "lastUpdated": iso(0), "kind": "main"}
    return [dumps(header)] + [dumps(_gemini_msg(i)) for i in range(1, n)]


def _id(literal: bytes) -> int:
    """A message id of its own per poison (a later message with the same id replaces one)."""
    return 1000 + zlib.crc32(literal) % 100_000


GEMINI = Agent(
    name="gemini",
    rel="proj/chats/session-2026-01-01T00-00-5e1f0a2b.jsonl",
    root=lambda home: home / ".gemini" / "tmp",
    uid=f"gemini:{GEMINI_SID}",
    valid=_gemini_valid,
    bad_ts=lambda lit: dumps(_gemini_msg(_id(lit), ts=MARK), lit),
    bad_count=lambda lit: dumps(
        _gemini_msg(_id(lit), tokens={"input": MARK, "output": 1, "cached": 0}, mtype="gemini"), lit
    ),
    bad_type=lambda lit: dumps(_gemini_msg(_id(lit), mtype=MARK), lit),
)

# -- Grok --------------------------------------------------------------------------------------
GROK_SID = "019f7000-0000-7000-8000-0000000000b1"


def _grok(update: dict[str, Any], ts: Any = 1767225600, prompt: str = "p-1") -> dict[str, Any]:
    return {
        "timestamp": ts,
        "method": "session/update",
        "params": {"sessionId": GROK_SID, "update": update, "_meta": {"promptId": prompt}},
    }


def _grok_text(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def _grok_turn(usage: dict[str, Any]) -> dict[str, Any]:
    return {"sessionUpdate": "turn_completed", "stopReason": "end_turn", "usage": usage}


def _grok_valid(n: int) -> list[bytes]:
    lines = []
    for i in range(max(n // 3, 1)):
        ts = 1767225600 + 10 * i
        lines.append(dumps(_grok(_grok_text("user_message_chunk", f"prompt {i}"), ts, f"p-{i}")))
        lines.append(
            dumps(_grok(_grok_text("agent_message_chunk", f"answer {i}"), ts + 1, f"p-{i}"))
        )
        usage = {"inputTokens": 100 + i, "outputTokens": 10, "cachedReadTokens": 0}
        lines.append(dumps(_grok(_grok_turn(usage), ts + 2, f"p-{i}")))
    return lines


GROK = Agent(
    name="grok",
    rel=f"%2Fwork%2Fproj/{GROK_SID}/updates.jsonl",
    root=lambda home: home / ".grok" / "sessions",
    uid=f"grok:{GROK_SID}",
    valid=_grok_valid,
    bad_ts=lambda lit: dumps(
        _grok(_grok_turn({"inputTokens": 7, "outputTokens": 1}), MARK, "p-ts"), lit
    ),
    bad_count=lambda lit: dumps(
        _grok(_grok_turn({"inputTokens": MARK, "outputTokens": 1}), 1767229000, "p-bad"), lit
    ),
    bad_type=lambda lit: dumps(_grok({"sessionUpdate": MARK}, 1767229001, "p-type"), lit),
)

AGENTS = (CLAUDE, CODEX, GEMINI, GROK)

# Literals of each poison class (raw JSON text, as a file could hold it).
IMPOSSIBLE_TIMES = (
    b"-1e308",
    b"1e308",
    b"9000000000000000000",  # ms of the year 285200616
    b"18446744073709551615",
    b"-1",
    b"0",
    b"1e15",
    b'"9999-12-31T23:59:59Z"',
    b'"0001-01-01T00:00:00+14:00"',
    b'"1969-12-31T23:59:59Z"',
    b"[1767225600]",
    b'{"ms": 1}',
    b"true",
)
NOT_FINITE = (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400")
BEYOND_INT64 = (b"9223372036854775808", b"18446744073709551615", b"1e19", b"3e30")
NEGATIVE = (b"-5", b"-1e3", b"-9223372036854775808")
WRONG_TYPES = (b'"many"', b"[1, 2]", b'{"n": 1}', b"true")
NOT_A_TYPE = (b'["user"]', b'{"type": "user"}', b"7", b"false")

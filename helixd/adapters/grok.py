"""Grok Build sessions (``${GROK_HOME:-~/.grok}/sessions/<url-encoded cwd>/<session uuid>/``).

Pure: bytes in, records out.  Rules from ``../shared/notes/formats.md`` §5, §9.3, the design
spec §2.3/§4.3, agentsview ``grok.go`` and codeburn ``docs/providers/grok.md``:

* **A session is a directory**: ``grok:<uuid>`` from its name, the cwd from its parent's
  (url-decoded).  Four files are read and nothing else (never ``auth.json``,
  ``signals.json`` or prompt history): ``updates.jsonl``, ``events.jsonl``,
  ``summary.json`` and ``chat_history.jsonl``.
* **updates.jsonl** (appended, authoritative) holds ACP ``session/update`` notifications
  ``{timestamp, params: {update: {sessionUpdate, …}, _meta}}``.  Consecutive message,
  thought or user chunks are joined into one event keyed by the first chunk's offset (the
  open one travels in ``state`` until another update closes it); ``tool_call`` /
  ``tool_call_update`` (terminal status) give calls and results keyed by ``toolCallId``;
  ``turn_completed`` gives a ``completion`` event and the usage.
* **Usage** is per turn (not cumulative), from any update carrying ``usage``: one fact per
  model of ``modelUsage`` (else the top-level counters), keyed ``grok:<uuid>:<prompt_id>``
  (``#<model>`` for a turn's second and later models; ``turn-<n>`` when a payload has no
  prompt id), ``replace=True``: a retried turn re-emits its prompt id and replaces, never
  adds.  ``cachedReadTokens`` ⊂ input; ``reasoningTokens`` ⊂ output;
  ``cacheCreationTokens`` stays inside input (xAI bills no cache-write premium;
  agentsview ignores it).  ``costUsdTicks`` is not used.
* **events.jsonl** records become ``lifecycle`` events (``error``/``retry`` when the type
  says so); types other than the two the spec names are kept and counted as unknown.
  ``turn_completed`` in ``updates.jsonl`` owns the ``completion`` events.
* **summary.json** (``whole_file``; camelCase legacy or snake_case schema) gives title,
  cwd, model, branch, fork parent (``parent_session_id``) and subagent kind.
* **chat_history.jsonl is a derived cache, read only when ``updates.jsonl`` is missing or
  empty** (legacy or imported sessions).  Its sidecar is the sibling ``updates.jsonl``:
  when that holds anything, the history yields no records, so nothing counts twice.  It
  carries no usage.  Rows are keyed by ordinal, tool rows by call id.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainEvents
from helixd.adapters.declared.grok import NAME
from helixd.adapters.fields import count, dump, first_str, get_dict, get_str
from helixd.adapters.grok_summary import parse_summary, session_of, summary_model
from helixd.adapters.guard import each_line
from helixd.adapters.toolkinds import (
    describe_call,
    edited_path,
    is_test_command,
    result_signals,
    shell_command,
)
from helixd.core.records import Parsed, Role, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

BODY_LIMIT: Final = 64 * 1024
MAX_PENDING_TOOLS: Final = 256
CHUNKS: Final = {
    "user_message_chunk": "user",
    "agent_message_chunk": "assistant",
    "agent_thought_chunk": "thinking",
}
_GROUPS: Final[dict[str, tuple[str, Role]]] = {
    "user": ("user_msg", "user"),
    "assistant": ("assistant_msg", "assistant"),
    "thinking": ("thinking", "assistant"),
    "host": ("lifecycle", "system"),
}
_LIFECYCLE = """plan current_mode_update session_info_update compaction_checkpoint hook_execution
    interaction_resolved"""
LIFECYCLE_UPDATES: Final = frozenset(_LIFECYCLE.split())
QUIET_UPDATES: Final = frozenset({"available_commands_update", "config_option_update"})
EDIT_KINDS: Final = frozenset({"edit", "delete", "move"})
_USAGE_KEYS: Final = ("inputTokens", "outputTokens", "cachedReadTokens", "reasoningTokens")
# events.jsonl types named in the design spec §2.3; others are kept and counted as unknown.
EVENT_TYPES: Final = frozenset({"turn_started", "loop_started"})
_ROWS = ("system", "user", "assistant", "reasoning", "tool_result", "backend_tool_call")
CHAT_TYPES: Final = frozenset(_ROWS)
# legacy assistant rows' ``raw_output`` items that are server-side tool calls
BACKEND_OUTPUTS: Final = {
    "web_search_call": "web_search",
    "custom_tool_call": "x_search",
    "code_interpreter_call": "code_interpreter",
}


def block_text(content: Any) -> str:
    """Text of an ACP content block, a list of blocks or ``tool_call`` content items."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (block_text(c) for c in content) if t)
    if not isinstance(content, dict):
        return ""
    ctype = content.get("type")
    if ctype == "text":
        return get_str(content, "text")
    if ctype == "content":
        return block_text(content.get("content"))
    if ctype == "diff":
        return f"[diff {get_str(content, 'path')}]"
    return f"[{ctype}]" if isinstance(ctype, str) else ""


class _Run(ChainEvents):
    """Mutable helper for one ``parse`` call of one JSONL session file."""

    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        self.rel = chunk.ctx.rel
        self.native, self.cwd = session_of(self.rel)
        self.uid = f"{NAME}:{self.native}"
        self.prev: str | None = state.get("prev")
        self.open: dict[str, Any] | None = state.get("open")
        self.pending: dict[str, str] = dict(state.get("pending", {}))
        self.turns: int = state.get("turns", 0)
        self.rows: int = state.get("rows", 0)
        self.backend: list[str] = list(state.get("backend", []))
        self.crc = ""  # checksum of the line being handled (the content part of keys)
        self.model: str | None = state.get("model")
        side = chunk.ctx.sidecar if self.rel.endswith("updates.jsonl") else None
        self.fallback_model = summary_model(side) or "grok"
        self.info: dict[str, Any] = {}
        self.out = Parsed(consumed=0, state={})

    # -- tools (updates and chat history) ---------------------------------------------------
    def tool_call(
        self, key: str, name: str, cid: str | None, args: Any, acp_kind: Any, at: Any
    ) -> None:
        if cid:
            self.pending[cid] = name
            while len(self.pending) > MAX_PENDING_TOOLS:
                self.pending.pop(next(iter(self.pending)))
        command = shell_command(name, args)
        if command is None and acp_kind == "execute":
            command = first_str(args, "command", "cmd")
        src = self.emit(
            key,
            "tool_call",
            at,
            "assistant",
            command or "",
            summary=describe_call(name, args),
            tool=name,
            call_id=cid,
            payload=dump(args) if args is not None else None,
        )
        path = edited_path(name, args)
        if path is None and acp_kind in EDIT_KINDS:
            path = first_str(args, "path", "file_path", "target_file", "filePath") or ""
        if path is not None:
            self.derived(src, "edit", "edit", "assistant", path)
        if command is not None and is_test_command(command):
            self.derived(src, "test", "test_run", "assistant", command)

    def tool_result(
        self, key: str, cid: str | None, text: str, failed: bool, raw: Any, at: Any
    ) -> None:
        name = self.pending.pop(cid, None) if cid else None
        done = self.emit(
            key,
            "tool_result",
            at,
            "tool",
            text,
            body="",
            tool=name,
            call_id=cid,
            is_error=failed,
            payload=dump(raw) if raw else None,
            **result_signals(name, text, failed=failed, rejected="rejected" in text.lower()),
        )
        if failed and "rejected" in text.lower():
            self.derived(done, "human", "human_intervention", "user", text)
        elif failed:
            self.derived(done, "error", "error", "tool", text or "tool failed", is_error=True)

    # -- updates.jsonl ----------------------------------------------------------------------
    def update(self, offset: int, obj: Mapping[str, Any]) -> None:
        params = get_dict(obj, "params")
        upd = params.get("update", obj.get("update"))
        if not isinstance(upd, dict):
            self.unknown(obj.get("type") or obj.get("method"))
            return
        meta = get_dict(params, "_meta")
        at = (parse_ts(meta.get("agentTimestampMs")) or parse_ts(obj.get("timestamp")), offset)
        self.note_ts(at[0])
        kind = record_type(upd.get("sessionUpdate"), "sessionUpdate")
        turn_out = 0
        if isinstance(upd.get("usage"), dict):
            turn_out = self.usage(upd, meta, at)
        if kind in CHUNKS:
            host = get_dict(upd, "_meta").get("hostTurn") or meta.get("hostTurn")
            self.chunk("host" if host else CHUNKS[kind], block_text(upd.get("content")), at)
            return
        self.close()
        if kind in ("tool_call", "tool_call_update"):
            self.acp_tool(upd, at, kind == "tool_call")
        elif kind == "turn_completed":
            reason = first_str(upd, "stop_reason", "stopReason") or "end_turn"
            done = self.emit(  # the turn's usage comes with it: its output tokens
                f"turn#{self.crc}",
                "completion",
                at,
                "system",
                f"turn completed: {reason}",
                tokens=turn_out,
            )
            if reason == "cancelled":
                self.derived(done, "cancel", "human_intervention", "user", "turn cancelled")
        elif kind in LIFECYCLE_UPDATES:
            if kind == "session_info_update" and first_str(upd, "title"):
                self.info["title"] = first_str(upd, "title")
            label = first_str(upd, "event_name", "currentModeId", "title") or ""
            self.emit(f"u#{self.crc}", "lifecycle", at, "system", f"{kind} {label}".strip())
        elif kind not in QUIET_UPDATES and not (kind is None and "usage" in upd):
            self.unknown(kind)  # (a bare ``{usage}`` update is an older turn payload)

    def chunk(self, group: str, text: str, at: tuple[int | None, int]) -> None:
        if self.open is not None and self.open["g"] == group:
            if len(self.open["t"]) < BODY_LIMIT:
                self.open["t"] = (self.open["t"] + text)[:BODY_LIMIT]
            return
        self.close()
        self.open = {"g": group, "t": text[:BODY_LIMIT], "ts": at[0], "o": at[1], "c": self.crc}

    def close(self) -> None:
        """Emit the joined message whose chunks just ended."""
        if self.open is None:
            return
        o, self.open = self.open, None
        kind, role = _GROUPS[o["g"]]
        self.emit(f"u#{o['c']}", kind, (o["ts"], o["o"]), role, o["t"])

    def acp_tool(self, upd: Mapping[str, Any], at: Any, first: bool) -> None:
        cid = first_str(upd, "toolCallId")
        tool_meta = get_dict(get_dict(upd, "_meta"), "x.ai/tool")
        name = first_str(upd, "name") or first_str(tool_meta, "name") or first_str(upd, "title")
        if first:
            args = upd.get("rawInput")
            key = f"call:{cid}" if cid else f"call#{self.crc}"
            self.tool_call(key, name or "tool", cid, args, upd.get("kind"), at)
        status = upd.get("status")
        if status in ("completed", "failed"):
            raw = upd.get("rawOutput")
            text = block_text(upd.get("content")) or (raw if isinstance(raw, str) else "")
            text = text or (dump(raw).decode() if raw is not None else "")
            key = f"result:{cid}" if cid else f"result#{self.crc}"
            self.tool_result(key, cid, text, status == "failed", upd.get("content") or raw, at)

    def usage(
        self, upd: Mapping[str, Any], meta: Mapping[str, Any], at: tuple[int | None, int]
    ) -> int:
        """The turn's usage facts (one per model); returns its output tokens."""
        usage = get_dict(upd, "usage")
        per_model = {m: u for m, u in get_dict(usage, "modelUsage").items() if isinstance(u, dict)}
        rows: list[tuple[str, Mapping[str, Any]]] = [*per_model.items()]
        rows = rows or [(self.model or self.fallback_model, usage)]
        checked = [
            (model, [count(c, k, "usage") for k in _USAGE_KEYS]) for model, c in rows
        ]  # every count of the turn first: a bad one rejects the line before anything moves
        self.turns += 1
        prompt = first_str(upd, "prompt_id", "promptId") or first_str(meta, "promptId")
        base = f"{NAME}:{self.native}:{prompt or f'turn-{self.turns}'}"
        for i, (model, (inp, out, cached, reasoning)) in enumerate(checked):
            self.out.usage.append(
                UsageFact(
                    dedup_key=base if i == 0 else f"{base}#{model}",
                    session_uid=self.uid,
                    ts=at[0],
                    model=model,
                    input_tokens=max(inp - cached, 0),
                    output_tokens=out,
                    cache_read_tokens=cached,
                    reasoning_tokens=reasoning,
                    rank=self.rel,
                    replace=True,
                    offset=at[1],
                )
            )
        if per_model:
            self.model = self.info["model"] = rows[0][0]
        return sum(out for _, (_, out, _, _) in checked)

    # -- events.jsonl -----------------------------------------------------------------------
    def event(self, offset: int, obj: Mapping[str, Any]) -> None:
        """``{ts, type, session_id, turn_number, model_id, …}`` (design spec §2.3)."""
        rtype = record_type(obj.get("type"))
        if not rtype:
            self.unknown(rtype)
            return
        if rtype not in EVENT_TYPES:
            self.unknown(rtype)
        if first_str(obj, "model_id"):
            self.info["model"] = first_str(obj, "model_id")
        number = obj.get("turn_number")
        text = f"{rtype} (turn {number})" if isinstance(number, int) else rtype
        lowered = rtype.lower()
        kind = "error" if "error" in lowered or "fail" in lowered else "lifecycle"
        kind = "retry" if "retry" in lowered else kind
        at = (parse_ts(obj.get("ts", obj.get("timestamp"))), offset)
        self.note_ts(at[0])
        self.emit(f"ev#{self.crc}", kind, at, "system", text, body="", is_error=kind == "error")

    # -- chat_history.jsonl (fallback) ------------------------------------------------------
    def chat(self, offset: int, obj: Mapping[str, Any]) -> None:
        """One history row (agentsview ``parseGrokChatHistory``): legacy rows have ``role``."""
        self.rows += 1
        rtype = record_type(obj.get("type"))
        if rtype not in CHAT_TYPES:
            role = record_type(obj.get("role"), "role")
            rtype = "tool_result" if role == "tool" else role
            if rtype not in CHAT_TYPES:
                self.unknown(obj.get("type"))
                return
        key, at = f"ch#{self.crc}", (None, offset)
        if first_str(obj, "model_id"):
            self.info["model"] = first_str(obj, "model_id")
        if rtype == "user":
            text = block_text(obj.get("content"))
            reason = get_str(obj, "synthetic_reason")
            if reason and reason != "interjection":  # injected context, not a prompt
                self.emit(key, "lifecycle", at, "system", text, summary=f"context: {reason}")
            else:
                self.emit(key, "human_intervention" if reason else "user_msg", at, "user", text)
        elif rtype in ("reasoning", "assistant"):
            self.chat_assistant(key, obj, rtype, at)
        elif rtype == "tool_result":
            cid = first_str(obj, "tool_call_id")
            content = obj.get("content")
            self.tool_result(
                f"result:{cid}" if cid else key, cid, block_text(content), False, content, at
            )
        elif rtype == "backend_tool_call":  # a server-side tool: web/x search, code
            self.backend_tool(key, get_dict(obj, "kind"), at)

    def backend_tool(self, key: str, item: Mapping[str, Any], at: Any) -> None:
        """A server-side tool call (a ``backend_tool_call`` row's ``kind``, or a legacy
        ``raw_output`` item); the same id seen again (grok-build keeps both) adds nothing."""
        cid = first_str(item, "id")
        if cid and cid in self.backend:
            return
        if cid:
            self.backend = [*self.backend[-(MAX_PENDING_TOOLS - 1) :], cid]
        name = first_str(item, "tool_type") or BACKEND_OUTPUTS.get(get_str(item, "type"))
        args = item.get("action", item.get("input", item.get("code")))
        self.tool_call(f"call:{cid}" if cid else key, name or "backend_tool", cid, args, None, at)

    def chat_assistant(self, key: str, obj: Mapping[str, Any], rtype: str, at: Any) -> None:
        notes = [get_str(p, "text") for k in ("summary", "content") for p in _dicts(obj.get(k))]
        thought = "\n\n".join(n for n in notes if n.strip()) if rtype == "reasoning" else ""
        raw_output = _dicts(obj.get("raw_output"))  # legacy: the response's output items
        thought = thought or first_str(obj.get("reasoning"), "text") or ""
        thought = thought or "\n\n".join(_reasoning_texts(raw_output))
        thought = thought or first_str(obj, "reasoning_content") or ""
        if thought:
            tkey = key if rtype == "reasoning" else f"{key}:thinking"
            self.emit(tkey, "thinking", at, "assistant", thought)
        for i, item in enumerate(raw_output):
            if item.get("type") in BACKEND_OUTPUTS:
                self.backend_tool(f"{key}:raw{i}", item, at)
        text = block_text(obj.get("content")) if rtype == "assistant" else ""
        if text.strip():
            self.emit(key, "assistant_msg", at, "assistant", text)
        for i, call in enumerate(_dicts(obj.get("tool_calls"))):
            fn = get_dict(call, "function")
            args = call.get("arguments", fn.get("arguments", call.get("input")))
            if isinstance(args, str):
                try:
                    args = orjson.loads(args)
                except orjson.JSONDecodeError:
                    pass
            cid = first_str(call, "id", "tool_call_id")
            name = first_str(call, "name") or first_str(fn, "name") or "tool"
            self.tool_call(f"call:{cid}" if cid else f"{key}:call{i}", name, cid, args, None, at)

    def finish(self, consumed: int, lines: int) -> Parsed:
        out = self.out
        if out.events or out.usage or self.info:
            out.sessions.append(SessionInfo(self.uid, NAME, self.native, cwd=self.cwd, **self.info))
        state = {
            "prev": self.prev,
            "open": self.open,
            "pending": self.pending,
            "turns": self.turns,
            "rows": self.rows,
            "model": self.model,
            "backend": self.backend,
        }
        return Parsed(
            consumed, state, out.sessions, out.events, out.usage, out.bad, out.unknown_types, lines
        )


def _reasoning_texts(items: list[dict[str, Any]]) -> list[str]:
    """Plain reasoning text of ``raw_output`` reasoning items (never encrypted content)."""
    texts = [
        get_str(p, "text")
        for item in items
        if item.get("type") == "reasoning"
        for k in ("summary", "content")
        for p in _dicts(item.get(k))
    ]
    return [t for t in texts if t.strip()]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _parse_lines(
    chunk: Chunk, run: _Run, handle: Callable[[int, Mapping[str, Any]], None]
) -> Parsed:
    def line(offset: int, raw: bytes) -> None:
        obj, _repaired = jsonl.decode(raw)
        run.crc = f"{zlib.crc32(raw):08x}"  # events are keyed by content, not position
        kept = (run.open, run.prev, run.turns, run.rows, run.model, run.backend)
        try:
            handle(offset, obj)
        except Exception:
            # the guard drops the line's records, an open message closed by it included:
            # it stays open (and the chain as it was) for the next line to close
            run.open, run.prev, run.turns, run.rows, run.model, run.backend = kept
            raise

    consumed, lines = each_line(chunk, run, line)
    return run.finish(consumed, lines)


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one session file (see the module docstring for which and how)."""
    name = chunk.ctx.rel.rsplit("/", 1)[-1]
    if name == "summary.json":
        return parse_summary(chunk, state)
    run = _Run(chunk, state)
    if name == "updates.jsonl":
        return _parse_lines(chunk, run, run.update)
    if name == "events.jsonl":
        return _parse_lines(chunk, run, run.event)
    if chunk.ctx.sidecar is not None and chunk.ctx.sidecar.strip():
        lines, consumed = jsonl.frame(chunk.data, chunk.at_eof)
        return Parsed(consumed, dict(state), lines=len(lines))  # updates.jsonl is authoritative
    return _parse_lines(chunk, run, run.chat)


PARSERS: Final = {NAME: parse}

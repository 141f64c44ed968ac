"""Claude Code transcripts (``~/.claude/projects/<mangled cwd>/<session>.jsonl``).

Pure: bytes in, records out.  The rules it follows are in ``../shared/notes/formats.md``
§3, §9.1 and §11.1; the ones that shape numbers:

* **Session identity** comes from the path: ``<project>/<sid>.jsonl`` is ``claude:<sid>``;
  subagents (``<project>/<sid>/subagents/**/agent-<id>.jsonl``, and the legacy flat
  ``<project>/agent-<id>.jsonl``) are ``claude:agent-<id>``, linked to their parent by the
  directory name or, for flat files, by the records' ``sessionId``.
* **Usage** is one fact per API response, keyed ``message.id:requestId`` (``message.id``
  alone without a requestId); the store keeps the largest snapshot and credits the
  earliest main file, so streaming duplicates and resume/fork replays count once.
  Model ``<synthetic>`` counts nothing; ``agent_progress`` copies are never counted.
* **Turn DAG**: an event's key is ``<uuid>#<block>``; its parent key comes from
  ``parentUuid`` (or ``logicalParentUuid`` across a compaction boundary).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Adapter, Chunk
from helixd.adapters.toolkinds import (
    describe_call,
    edited_path,
    is_test_command,
    shell_command,
    shorten,
)
from helixd.records import BadLine, Event, Parsed, SessionInfo, UsageFact
from helixd.timeparse import parse_ts

NAME: Final = "claude"
VERSION: Final = 1
SYNTHETIC_MODEL: Final = "<synthetic>"
MAX_PENDING_TOOLS: Final = 256
BODY_LIMIT: Final = 64 * 1024

KNOWN_TYPES: Final = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "progress",
        "queue-operation",
        "attachment",
        "file-history-snapshot",
        "mode",
        "permission-mode",
        "agent-setting",
        "agent-name",
        "custom-title",
        "ai-title",
        "last-prompt",
        "pr-link",
        "worktree-state",
    }
)
INTERRUPT_MARKERS: Final = ("[Request interrupted by user", "[Request cancelled by user")
REJECTION_MARKERS: Final = (
    "The user doesn't want to proceed",
    "The user doesn't want to take this action",
    "User rejected",
)
_AGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$CLAUDE_CONFIG_DIR`` (comma-separated) or ``~/.claude`` and ``~/.config/claude``."""
    configured = [p.strip() for p in environ.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    bases = [Path(p).expanduser() for p in configured] or [
        home / ".claude",
        home / ".config/claude",
    ]
    return [base / "projects" for base in bases]


def matches(rel: str) -> bool:
    """Every ``*.jsonl`` under a projects root is a transcript; nothing else is opened."""
    return rel.endswith(".jsonl")


def sidecar(path: str) -> str | None:
    """A nested subagent's ``agent-<id>.meta.json`` (it names the agent type)."""
    p = PurePosixPath(path)
    if "subagents" in p.parts and _AGENT_FILE.match(p.name):
        return str(p.with_name(p.name[: -len(".jsonl")] + ".meta.json"))
    return None


def file_identity(rel: str) -> tuple[str, str | None, bool]:
    """``(native_id, parent_native_id, is_subagent)`` from the path under the root.

    ``parent_native_id`` is None for flat legacy subagents: it comes from the records.
    """
    parts = PurePosixPath(rel).parts
    name = parts[-1]
    agent = _AGENT_FILE.match(name)
    if "subagents" in parts:
        idx = parts.index("subagents")
        parent = parts[idx - 1] if idx >= 1 else None
        if agent:
            return f"agent-{agent.group(1)}", parent, True
        inner = "/".join(parts[idx + 1 :])[: -len(".jsonl")]
        return f"{parent}/{inner}", parent, True
    if agent:
        return f"agent-{agent.group(1)}", None, True
    return name[: -len(".jsonl")], None, False


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return 0
    return 0


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _dict(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _dump(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace")
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(jsonl.iter_text_blocks(content))


class _FileParse:
    """Mutable helper for one ``parse`` call; the pure function below drives it."""

    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        self.chunk = chunk
        native, parent, self.is_sub = file_identity(chunk.ctx.rel)
        self.uid = f"{NAME}:{native}"
        self.native = native
        self.parent_native: str | None = parent or state.get("parent")
        self.pending: dict[str, str] = dict(state.get("pending", {}))
        self.first_ts: int | None = state.get("first_ts")
        self.agent_type: str | None = state.get("agent_type")
        if self.agent_type is None and chunk.ctx.sidecar:
            try:
                meta = orjson.loads(chunk.ctx.sidecar)
                if isinstance(meta, dict) and isinstance(meta.get("agentType"), str):
                    self.agent_type = meta["agentType"]
            except orjson.JSONDecodeError:
                pass
        self.out = Parsed(consumed=0, state={})
        self.info: dict[str, Any] = {}

    # -- helpers ---------------------------------------------------------------------------
    def emit(
        self,
        obj: Mapping[str, Any],
        key: str,
        kind: str,
        ts: int | None,
        offset: int,
        parent: str | None,
        **fields: Any,
    ) -> None:
        self.out.events.append(
            Event(
                session_uid=self.uid,
                key=key,
                kind=kind,
                ts=ts,
                offset=offset,
                parent_key=parent,
                is_sidechain=bool(obj.get("isSidechain", False)),
                **fields,
            )
        )

    def rank(self) -> str:
        return f"{1 if self.is_sub else 0}{self.first_ts or 0:015d}{self.chunk.ctx.path}"

    def note_session(self, obj: Mapping[str, Any], ts: int | None) -> None:
        if ts is not None:
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            self.info["last_ts"] = max(ts, self.info.get("last_ts") or ts)
            self.info["first_ts"] = min(ts, self.info.get("first_ts") or ts)
        for src, dst in (("cwd", "cwd"), ("gitBranch", "git_branch"), ("version", "version")):
            value = obj.get(src)
            if isinstance(value, str) and value:
                self.info[dst] = value
        if self.is_sub and self.parent_native is None:
            sid = obj.get("sessionId")
            if isinstance(sid, str) and sid:
                self.parent_native = sid

    # -- record kinds ----------------------------------------------------------------------
    def line(self, offset: int, raw: bytes) -> None:
        try:
            obj, _repaired = jsonl.decode(raw)
        except jsonl.LineError as exc:
            self.out.bad.append(BadLine(offset, len(raw), str(exc)))
            return
        rtype = obj.get("type")
        if not isinstance(rtype, str) or rtype not in KNOWN_TYPES:
            name = rtype if isinstance(rtype, str) else repr(rtype)
            self.out.unknown_types[name] = self.out.unknown_types.get(name, 0) + 1
            return
        ts = parse_ts(obj.get("timestamp"))
        uuid = obj.get("uuid")
        key = (
            uuid
            if isinstance(uuid, str) and uuid
            else "@" + hashlib.blake2b(raw, digest_size=8).hexdigest()
        )
        parent_uuid = obj.get("parentUuid") or obj.get("logicalParentUuid")
        parent = f"{parent_uuid}#0" if isinstance(parent_uuid, str) else None
        if rtype in ("user", "assistant"):
            self.note_session(obj, ts)
            message = obj.get("message")
            if not isinstance(message, dict):
                message = {}
            if rtype == "assistant":
                self.assistant(obj, message, key, ts, offset, parent)
            else:
                self.user(obj, message, key, ts, offset, parent)
        else:
            self.other(obj, rtype, key, ts, offset, parent)

    def assistant(
        self,
        obj: Mapping[str, Any],
        message: Mapping[str, Any],
        key: str,
        ts: int | None,
        offset: int,
        parent: str | None,
    ) -> None:
        model = message.get("model") if isinstance(message.get("model"), str) else None
        usage = message.get("usage")
        out_tokens = _int(usage.get("output_tokens")) if isinstance(usage, dict) else 0
        if model and model != SYNTHETIC_MODEL:
            self.info["model"] = model
            if isinstance(usage, dict):
                self.usage(message, obj, model, usage, ts)
        if obj.get("isApiErrorMessage") or model == SYNTHETIC_MODEL:
            text = _result_text(message.get("content"))
            self.emit(
                obj,
                f"{key}#0",
                "error",
                ts,
                offset,
                parent,
                role="assistant",
                summary=shorten(text or "API error"),
                body=text[:BODY_LIMIT],
                is_error=True,
            )
            return
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        prev = parent
        for i, block in enumerate(blocks):
            if not isinstance(block, dict):
                continue
            bkey = f"{key}#{i}"
            btype = block.get("type")
            if btype == "text":
                text = _str(block, "text")
                self.emit(
                    obj,
                    bkey,
                    "assistant_msg",
                    ts,
                    offset,
                    prev,
                    role="assistant",
                    summary=shorten(text),
                    body=text[:BODY_LIMIT],
                    tokens=out_tokens,
                )
            elif btype in ("thinking", "redacted_thinking"):
                text = _str(block, "thinking")
                self.emit(
                    obj,
                    bkey,
                    "thinking",
                    ts,
                    offset,
                    prev,
                    role="assistant",
                    summary=shorten(text),
                    payload=text.encode("utf-8", "replace") or None,
                )
            elif btype in ("tool_use", "server_tool_use"):
                self.tool_use(obj, block, bkey, ts, offset, prev)
            else:
                self.emit(
                    obj,
                    bkey,
                    "assistant_msg",
                    ts,
                    offset,
                    prev,
                    role="assistant",
                    summary=shorten(str(btype)),
                    payload=_dump(block),
                )
            prev = bkey

    def usage(
        self,
        message: Mapping[str, Any],
        obj: Mapping[str, Any],
        model: str,
        usage: Mapping[str, Any],
        ts: int | None,
    ) -> None:
        msg_id = message.get("id")
        if not isinstance(msg_id, str) or not msg_id:
            return
        request_id = obj.get("requestId")
        dedup = f"{msg_id}:{request_id}" if isinstance(request_id, str) and request_id else msg_id
        creation = _int(usage.get("cache_creation_input_tokens"))
        split = usage.get("cache_creation")
        one_hour = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
        one_hour = min(one_hour, creation) if creation else one_hour
        self.out.usage.append(
            UsageFact(
                dedup_key=f"{NAME}:{dedup}",
                session_uid=self.uid,
                ts=ts,
                model=model,
                input_tokens=_int(usage.get("input_tokens")),
                output_tokens=_int(usage.get("output_tokens")),
                cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
                cache_write_5m_tokens=max(creation - one_hour, 0),
                cache_write_1h_tokens=one_hour,
                rank=self.rank(),
            )
        )

    def tool_use(
        self,
        obj: Mapping[str, Any],
        block: Mapping[str, Any],
        bkey: str,
        ts: int | None,
        offset: int,
        parent: str | None,
    ) -> None:
        tool = str(block.get("name") or "tool")
        args = block.get("input")
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        if call_id:
            self.pending[call_id] = tool
            while len(self.pending) > MAX_PENDING_TOOLS:
                self.pending.pop(next(iter(self.pending)))
        command = shell_command(tool, args)
        body = command if command is not None else ""
        self.emit(
            obj,
            bkey,
            "tool_call",
            ts,
            offset,
            parent,
            role="assistant",
            tool=tool,
            call_id=call_id,
            summary=describe_call(tool, args),
            body=body[:BODY_LIMIT],
            payload=_dump(args) if args is not None else None,
        )
        path = edited_path(tool, args)
        if path is not None:
            self.emit(
                obj,
                f"{bkey}:edit",
                "edit",
                ts,
                offset,
                bkey,
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(path),
                body=path,
            )
        if command is not None and is_test_command(command):
            self.emit(
                obj,
                f"{bkey}:test",
                "test_run",
                ts,
                offset,
                bkey,
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(command),
                body=command,
            )

    def user(
        self,
        obj: Mapping[str, Any],
        message: Mapping[str, Any],
        key: str,
        ts: int | None,
        offset: int,
        parent: str | None,
    ) -> None:
        content = message.get("content")
        if isinstance(content, str) or not isinstance(content, list):
            self.user_text(
                obj, content if isinstance(content, str) else "", f"{key}#0", ts, offset, parent
            )
            return
        prev = parent
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            bkey = f"{key}#{i}"
            btype = block.get("type")
            if btype == "tool_result":
                self.tool_result(obj, block, bkey, ts, offset, prev)
            elif btype == "text":
                text = _str(block, "text")
                self.user_text(obj, text, bkey, ts, offset, prev)
            else:
                self.emit(
                    obj,
                    bkey,
                    "user_msg",
                    ts,
                    offset,
                    prev,
                    role="user",
                    summary=f"[{btype}]",
                    payload=_dump(block),
                )
            prev = bkey

    def user_text(
        self,
        obj: Mapping[str, Any],
        text: str,
        bkey: str,
        ts: int | None,
        offset: int,
        parent: str | None,
    ) -> None:
        stripped = text.lstrip()
        kind = "user_msg"
        summary = shorten(text)
        if stripped.startswith(INTERRUPT_MARKERS):
            kind = "human_intervention"
        elif obj.get("isCompactSummary"):
            kind, summary = "lifecycle", "compaction summary"
        elif obj.get("isMeta") or stripped.startswith(("<local-command-", "<system-reminder>")):
            kind = "lifecycle"
        elif "<command-name>" in text:
            name = _COMMAND_NAME.search(text)
            args = _COMMAND_ARGS.search(text)
            summary = shorten(
                " ".join(m.group(1).strip() for m in (name, args) if m and m.group(1).strip())
            )
        self.emit(
            obj,
            bkey,
            kind,
            ts,
            offset,
            parent,
            role="user",
            summary=summary,
            body=text[:BODY_LIMIT],
        )

    def tool_result(
        self,
        obj: Mapping[str, Any],
        block: Mapping[str, Any],
        bkey: str,
        ts: int | None,
        offset: int,
        parent: str | None,
    ) -> None:
        call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
        tool = self.pending.pop(call_id, None) if call_id else None
        content = block.get("content")
        text = _result_text(content)
        is_error = bool(block.get("is_error"))
        payload: Any = content
        extra = obj.get("toolUseResult")
        if extra is not None and not isinstance(extra, str):
            payload = {"content": content, "toolUseResult": extra}
        self.emit(
            obj,
            bkey,
            "tool_result",
            ts,
            offset,
            parent,
            role="tool",
            tool=tool,
            call_id=call_id,
            summary=shorten(text),
            is_error=is_error,
            payload=_dump(payload) if payload else None,
        )
        if text.lstrip().startswith(REJECTION_MARKERS) or text.startswith(INTERRUPT_MARKERS):
            self.emit(
                obj,
                f"{bkey}:human",
                "human_intervention",
                ts,
                offset,
                bkey,
                role="user",
                tool=tool,
                call_id=call_id,
                summary=shorten(text),
                body=text[:BODY_LIMIT],
            )
        elif is_error:
            self.emit(
                obj,
                f"{bkey}:error",
                "error",
                ts,
                offset,
                bkey,
                role="tool",
                tool=tool,
                call_id=call_id,
                summary=shorten(text),
                body=text[:4096],
                is_error=True,
            )

    def other(
        self,
        obj: Mapping[str, Any],
        rtype: str,
        key: str,
        ts: int | None,
        offset: int,
        parent: str | None,
    ) -> None:
        kind, summary, body = "lifecycle", rtype, ""
        if rtype == "system":
            subtype = str(obj.get("subtype") or "system")
            body = _str(obj, "content")
            summary = f"system: {subtype}"
            if subtype in ("api_error", "error", "api_refusal"):
                kind = "error"
            elif subtype == "turn_duration":
                kind = "completion"
            elif subtype == "compact_boundary":
                summary = "compaction boundary"
        elif rtype == "summary":
            body = _str(obj, "summary")
            summary = "summary: " + shorten(body, 150)
        elif rtype in ("ai-title", "custom-title", "agent-name"):
            for field in ("aiTitle", "customTitle", "title", "agentName", "name"):
                if isinstance(obj.get(field), str):
                    body = obj[field]
                    break
            if body and rtype != "agent-name":
                self.info["title"] = body
            summary = f"{rtype}: {shorten(body, 150)}"
        elif rtype == "queue-operation":
            body = _str(obj, "content")
            if obj.get("operation") == "enqueue" and body:
                kind = "human_intervention"
            summary = f"queue {obj.get('operation')}" + (f": {shorten(body, 150)}" if body else "")
        elif rtype == "attachment":
            att = _dict(obj, "attachment")
            if att.get("type") == "queued_command":
                kind = "human_intervention"
                prompt = att.get("prompt")
                body = prompt if isinstance(prompt, str) else ""
            summary = f"attachment: {att.get('type')}"
        elif rtype == "progress":
            data = _dict(obj, "data")
            summary = f"progress: {data.get('type')}"
            if self.is_sub is False and data.get("type") == "agent_progress":
                agent_id = data.get("agentId")
                if isinstance(agent_id, str) and agent_id:
                    self.out.sessions.append(
                        SessionInfo(
                            uid=f"{NAME}:agent-{agent_id}",
                            agent=NAME,
                            native_id=f"agent-{agent_id}",
                            parent_uid=self.uid,
                        )
                    )
        if ts is not None and rtype != "summary":
            self.note_session({}, ts)
        self.emit(
            obj,
            f"{key}#0",
            kind,
            ts,
            offset,
            parent,
            role="system",
            summary=shorten(summary),
            body=body[:BODY_LIMIT],
        )

    def finish(self, consumed: int, lines: int) -> Parsed:
        parent_uid = f"{NAME}:{self.parent_native}" if self.parent_native else None
        if self.out.events or self.out.usage or self.info:
            self.out.sessions.insert(
                0,
                SessionInfo(
                    uid=self.uid,
                    agent=NAME,
                    native_id=self.native,
                    parent_uid=parent_uid,
                    agent_type=self.agent_type,
                    **self.info,
                ),
            )
        state: dict[str, Any] = {"pending": self.pending}
        if self.first_ts is not None:
            state["first_ts"] = self.first_ts
        if self.parent_native and self.is_sub:
            state["parent"] = self.parent_native
        if self.agent_type:
            state["agent_type"] = self.agent_type
        return Parsed(
            consumed=consumed,
            state=state,
            sessions=self.out.sessions,
            events=self.out.events,
            usage=self.out.usage,
            bad=self.out.bad,
            unknown_types=self.out.unknown_types,
            lines=lines,
        )


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse the complete lines of ``chunk`` (see the module docstring for the rules)."""
    lines, consumed = jsonl.frame(chunk.data, chunk.at_eof)
    run = _FileParse(chunk, state)
    for rel_offset, raw in lines:
        run.line(chunk.base + rel_offset, raw)
    return run.finish(consumed, len(lines))


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parse=parse,
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    description="Claude Code transcripts (~/.claude/projects)",
)

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

import functools
import re
import zlib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.claude_meta import meta_record
from helixd.adapters.claude_tools import BODY_LIMIT, INTERRUPT_MARKERS, ToolBlocks
from helixd.adapters.declared.claude import NAME
from helixd.adapters.fields import count, get_dict, get_str, result_text
from helixd.adapters.guard import each_line
from helixd.adapters.toolkinds import shorten
from helixd.core.records import Event, Parsed, Role, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

_make_event: Final = Event._make  # an event from its fields in order (``_FileParse.emit``)
_make_usage: Final = UsageFact._make  # a usage fact from its fields in order
_AGENT_FILE: Final = re.compile(r"^agent-(.+)\.jsonl$")  # a subagent's transcript

SYNTHETIC_MODEL: Final = "<synthetic>"

# Record types Claude Code writes (formats.md §3.6, §11.1).
_KNOWN = """user assistant system summary progress queue-operation attachment mode
    file-history-snapshot permission-mode agent-setting agent-name custom-title ai-title
    last-prompt pr-link worktree-state"""
KNOWN_TYPES: Final = frozenset(_KNOWN.split())
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


@functools.lru_cache(maxsize=4096)  # once per file, not per read (the daemon reads often)
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


class _FileParse(ToolBlocks):
    """Mutable helper for one ``parse`` call; the pure ``parse`` below drives it.

    ``obj``, ``ts``, ``offset`` and ``sidechain`` describe the line being handled."""

    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        self.path = chunk.ctx.path
        self.payloads = chunk.ctx.payloads
        native, parent, self.is_sub = file_identity(chunk.ctx.rel)
        self.uid = f"{NAME}:{native}"
        self.native = native
        self.parent_native: str | None = parent or state.get("parent")
        self.pending: dict[str, str] = dict(state.get("pending", {}))
        self.retries: dict[str, Any] = dict(state.get("retries", {}))
        self.first_ts: int | None = parse_ts(state.get("first_ts"))
        self.agent_type: str | None = state.get("agent_type") or _agent_type(chunk.ctx.sidecar)
        self.out = Parsed(consumed=0, state={})
        self.info: dict[str, Any] = {}
        self.obj: Mapping[str, Any] = {}
        self.ts: int | None = None
        self.offset = 0
        self.sidechain = False
        self.crc = ""
        self.share = 0
        self.rank_of: tuple[tuple[bool, int | None] | None, str] = (None, "")

    def emit(
        self,
        name: str,
        kind: str,
        parent: str | None,
        *,
        role: Role | None = None,
        tool: str | None = None,
        call_id: str | None = None,
        summary: str = "",
        body: str = "",
        payload: bytes | None = None,
        tokens: int = 0,
        is_error: bool = False,
        payload_size: int = 0,
        search_text: str = "",
        lines_added: int = 0,
        lines_removed: int = 0,
        status: str | None = None,
        tests: tuple[str, int, int, int] | None = None,
    ) -> None:
        """Append an event of the current line.  ``name`` (``<uuid>#<block>``) is what
        children point at; the key adds the line's checksum, so a different record that
        reuses a uuid is kept while a byte-identical replay is not.  The event is made from
        its fields in order (``Event._make``; the defaults are ``Event``'s): keywords
        through ``Event(...)`` cost ~1 µs an event more (issue 12)."""
        self.out.events.append(
            _make_event(
                (
                    self.uid,
                    f"{name}:{self.crc}",
                    kind,
                    self.ts,
                    self.offset,
                    parent,
                    role,
                    tool,
                    call_id,
                    summary,
                    body,
                    payload,
                    tokens,
                    is_error,
                    self.sidechain,
                    name,
                    payload_size,
                    search_text,
                    lines_added,
                    lines_removed,
                    status,
                    tests,
                )
            )
        )

    def long_text(self, text: str) -> bytes | None:
        """A message's whole text when a transcript is shown and the body was cut."""
        return text.encode("utf-8", "replace") if self.payloads and len(text) > BODY_LIMIT else None

    def rank(self) -> str:
        """Who gets the credit for a response seen in several files: main files before
        subagents, then the file the record natively belongs to (its ``sessionId`` is the
        file's name: a resume copies records verbatim into a new file), then the earliest
        first record, then the path."""
        native = get_str(self.obj, "sessionId") == self.native
        memo = (native, self.first_ts)
        if memo != self.rank_of[0]:  # the same for every response of a file, nearly
            sub = 1 if self.is_sub else 0
            self.rank_of = (memo, f"{sub}{0 if native else 1}{self.first_ts or 0:015d}{self.path}")
        return self.rank_of[1]

    def note_session(self, obj: Mapping[str, Any]) -> None:
        ts, info = self.ts, self.info
        if ts is not None:
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            last, first = info.get("last_ts"), info.get("first_ts")
            if not last or ts > last:  # ``max(ts, last or ts)``, set in the same order
                info["last_ts"] = ts
            if not first or ts < first:
                info["first_ts"] = ts
        # A record's session facts (``cwd``, ``gitBranch``, ``version``), copied when a
        # non-empty string: written out, not looped over (every user and assistant line).
        value = obj.get("cwd")
        if value and type(value) is str:
            info["cwd"] = value
        value = obj.get("gitBranch")
        if value and type(value) is str:
            info["git_branch"] = value
        value = obj.get("version")
        if value and type(value) is str:
            info["version"] = value
        if self.is_sub and self.parent_native is None and (sid := get_str(obj, "sessionId")):
            self.parent_native = sid

    def line(self, offset: int, raw: bytes) -> None:
        """One line (run under ``guard.guarded``: a line that raises is a bad line)."""
        obj, _repaired = jsonl.decode(raw)
        rtype = obj.get("type")
        if type(rtype) is not str:
            rtype = record_type(rtype)  # None, or a refusal of the line
        if rtype is None or rtype not in KNOWN_TYPES:
            name = str(rtype)
            self.out.unknown_types[name] = self.out.unknown_types.get(name, 0) + 1
            return
        self.obj, self.offset = obj, offset
        self.ts = parse_ts(obj.get("timestamp"))
        self.sidechain = bool(obj.get("isSidechain", False))
        self.crc = f"{zlib.crc32(raw):08x}"
        message = get_dict(obj, "message")
        content = message.get("content")
        # Bulky bodies stay in the raw line; each block is charged its share of it.
        self.share = len(raw) // (len(content) if isinstance(content, list) and content else 1)
        key = get_str(obj, "uuid") or f"@{len(raw)}"
        parent_uuid = obj.get("parentUuid") or obj.get("logicalParentUuid")
        parent = f"{parent_uuid}#0" if isinstance(parent_uuid, str) else None
        if rtype == "assistant":
            self.note_session(obj)
            self.assistant(message, key, parent)
        elif rtype == "user":
            self.note_session(obj)
            self.user(message, key, parent)
        else:
            if self.ts is not None and rtype != "summary":
                self.note_session({})
            kind, summary, body = meta_record(obj, rtype)
            if rtype in ("ai-title", "custom-title") and body:
                self.info["title"] = body
            self.emit(
                f"{key}#0",
                kind,
                parent,
                role="system",
                summary=shorten(summary),
                body=body[:BODY_LIMIT],
            )
            if rtype == "progress":
                data = get_dict(obj, "data")
                if not self.is_sub:
                    self.link_subagent(data)
                self.delegated_tools(data, key)

    def link_subagent(self, data: Mapping[str, Any]) -> None:
        """``agent_progress`` names a subagent of this session (its usage is never counted
        from these embedded copies, only from the subagent's own file)."""
        if data.get("type") == "agent_progress" and (agent_id := get_str(data, "agentId")):
            self.out.sessions.append(
                SessionInfo(
                    uid=f"{NAME}:agent-{agent_id}",
                    agent=NAME,
                    native_id=f"agent-{agent_id}",
                    parent_uid=self.uid,
                )
            )

    def assistant(self, message: Mapping[str, Any], key: str, parent: str | None) -> None:
        model = get_str(message, "model") or None
        usage = get_dict(message, "usage")
        out_tokens = count(usage, "output_tokens", "message.usage")
        if model and model != SYNTHETIC_MODEL:
            self.info["model"] = model
            if usage:
                self.usage(message, model, usage)
        if self.obj.get("isApiErrorMessage") or model == SYNTHETIC_MODEL:
            text = result_text(message.get("content"))
            self.emit(
                f"{key}#0",
                "error",
                parent,
                role="assistant",
                is_error=True,
                summary=shorten(text or "API error"),
                body=text[:BODY_LIMIT],
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
                text = get_str(block, "text")
                self.emit(
                    bkey,
                    "assistant_msg",
                    prev,
                    role="assistant",
                    summary=shorten(text),
                    body=text[:BODY_LIMIT],
                    tokens=out_tokens,
                    payload=self.long_text(text),
                )
            elif btype in ("thinking", "redacted_thinking"):
                text = get_str(block, "thinking")
                self.emit(
                    bkey,
                    "thinking",
                    prev,
                    role="assistant",
                    summary=shorten(text),
                    payload_size=len(text),
                    search_text=text[:BODY_LIMIT],
                    payload=text.encode("utf-8", "replace") if self.payloads else None,
                )
            elif btype in ("tool_use", "server_tool_use"):
                self.tool_use(block, bkey, prev)
            else:
                self.emit(
                    bkey,
                    "assistant_msg",
                    prev,
                    role="assistant",
                    summary=shorten(str(btype)),
                    payload_size=self.share,
                )
            prev = bkey

    def usage(self, message: Mapping[str, Any], model: str, usage: Mapping[str, Any]) -> None:
        msg_id = get_str(message, "id")
        if not msg_id:
            return
        request_id = get_str(self.obj, "requestId")
        dedup = f"{msg_id}:{request_id}" if request_id else msg_id
        creation = count(usage, "cache_creation_input_tokens", "message.usage")
        split = get_dict(usage, "cache_creation")
        one_hour = count(split, "ephemeral_1h_input_tokens", "message.usage.cache_creation")
        one_hour = min(one_hour, creation) if creation else one_hour
        # Made from its fields in order (``UsageFact._make``), as the events are.
        self.out.usage.append(
            _make_usage(
                (
                    f"{NAME}:{dedup}",  # dedup_key
                    self.uid,
                    self.ts,
                    model,
                    count(usage, "input_tokens", "message.usage"),
                    count(usage, "output_tokens", "message.usage"),
                    count(usage, "cache_read_input_tokens", "message.usage"),
                    max(creation - one_hour, 0),  # cache_write_5m_tokens
                    one_hour,  # cache_write_1h_tokens
                    0,  # reasoning_tokens
                    self.rank(),
                    False,  # replace
                    self.offset,
                    None,  # recorded_cost_usd
                )
            )
        )

    def user(self, message: Mapping[str, Any], key: str, parent: str | None) -> None:
        """A user record: tool results become one event each; the typed prompt (text blocks,
        pasted images) becomes one message; a record with no content keeps its place in the
        turn DAG as a lifecycle event."""
        content = message.get("content")
        if not isinstance(content, list):
            text = content if isinstance(content, str) else ""
            self.user_text(text, f"{key}#0", parent, [])
            return
        prev = parent
        texts: list[str] = []
        extras: list[Any] = []
        first: int | None = None
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                bkey = f"{key}#{i}"
                self.tool_result(block, bkey, prev)
                prev = bkey
                continue
            first = i if first is None else first
            if block.get("type") == "text":
                texts.append(get_str(block, "text"))
            else:
                extras.append(block)
        if first is not None:
            self.user_text("\n".join(texts), f"{key}#{first}", prev, extras)

    def user_text(self, text: str, bkey: str, parent: str | None, extras: list[Any]) -> None:
        stripped = text.lstrip()
        kind = "user_msg"
        summary = shorten(text) or " ".join(f"[{get_str(b, 'type')}]" for b in extras)
        if not stripped and not extras:
            kind, summary = "lifecycle", "empty user record"
        elif stripped.startswith(INTERRUPT_MARKERS):
            kind = "human_intervention"
        elif self.obj.get("isCompactSummary"):
            kind, summary = "lifecycle", "compaction summary"
        elif self.obj.get("isMeta") or stripped.startswith(
            ("<local-command-", "<system-reminder>")
        ):
            kind = "lifecycle"
        elif "<command-name>" in text:
            found = (_COMMAND_NAME.search(text), _COMMAND_ARGS.search(text))
            summary = shorten(" ".join(m.group(1).strip() for m in found if m))
        self.emit(
            bkey,
            kind,
            parent,
            role="user",
            summary=summary,
            body=text[:BODY_LIMIT],
            payload_size=self.share if extras else 0,
            payload=self.long_text(text),
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
        if self.retries:
            state["retries"] = self.retries
        if self.first_ts is not None:
            state["first_ts"] = self.first_ts
        if self.parent_native and self.is_sub:
            state["parent"] = self.parent_native
        if self.agent_type:
            state["agent_type"] = self.agent_type
        out = self.out
        return Parsed(
            consumed=consumed,
            state=state,
            sessions=out.sessions,
            events=out.events,
            usage=out.usage,
            bad=out.bad,
            unknown_types=out.unknown_types,
            lines=lines,
        )


def _agent_type(sidecar: bytes | None) -> str | None:
    """``agentType`` from a subagent's ``.meta.json`` sidecar, if it says."""
    if not sidecar:
        return None
    try:
        meta = orjson.loads(sidecar)
    except orjson.JSONDecodeError:
        return None
    value = meta.get("agentType") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse the complete lines of ``chunk`` (see the module docstring for the rules)."""
    run = _FileParse(chunk, state)
    consumed, lines = each_line(chunk, run, run.line)
    return run.finish(consumed, lines)


PARSERS: Final = {NAME: parse}

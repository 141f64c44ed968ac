"""Kiro's session files under ``~/.kiro/sessions/`` (``$KIRO_HOME/sessions``): the Kiro CLI
V2 engine's flat store and the V3 engine's (and the Kiro IDE's) per-workspace directories.

Pure: lines in, records out; each file is append-only JSONL, its small companion (the
session's header) passed as the sidecar.  No real file is public: the shapes below are from
public readers and measured notes (docs/adapters.md, "Kiro sessions"), the fixtures are
constructed from them.

* **V2** (``kiro-cli`` 2.x TUI): ``cli/<uuid>.jsonl`` beside its header ``cli/<uuid>.json``
  (``session_id``, ``cwd``, ``created_at``/``updated_at``, ``session_state.rts_model_state
  .model_info.model_id``).  Lines ``{"version": "v1", "kind": …, "data": {message_id,
  content[], meta}}``: ``Prompt`` (``content[]`` of ``{"kind": "text", "data": …}``;
  ``meta.timestamp`` in epoch seconds) → ``user_msg``; ``AssistantMessage`` → its text as
  ``assistant_msg`` (a reply streams as several records sharing one ``message_id``: one
  event each, keyed by the id and a checksum of the piece's text), ``thinking`` blocks,
  and a ``tool_call`` per ``{"kind": "toolUse", "data": {toolUseId, name, input}}``;
  ``ToolResults`` → a
  ``tool_result`` per ``{"kind": "toolResult", "data": {toolUseId, content[], status}}``
  (``content[]`` of ``text`` or ``json`` — a shell's ``{exit_status, stdout, stderr}``).
  Only the prompt carries a time: the reply and its calls take the prompt's.
* **V3** (``kiro-cli --v3``, and the Kiro IDE): ``<workspace>/<session>/messages.jsonl``
  beside ``session.json`` (``id``, ``title``, ``workspacePaths``/``rootPaths``,
  ``parentSessionId``, ``model``).  Lines ``{id, timestamp (RFC 3339), payload: {type, …}}``:
  ``user`` → ``user_msg``; ``assistant`` by ``operationType``: ``Say`` → ``assistant_msg``,
  ``Reasoning`` → ``thinking``, ``Summary`` (a compaction) → ``lifecycle``; ``tool_call``
  (``toolCallId``, ``toolName``, ``args``; one line per state the call passes through, the
  first one kept; ``status: denied`` → ``human_intervention``) and ``tool_result``
  (``content``); ``sub_agent_start``/``sub_agent_complete`` (``subSessionId``,
  ``subAgentName``, ``prompt``/``response``) as a call and its result; ``turn_end`` with a
  failing ``stopReason`` → ``error`` (``cancelled``/``aborted``: ``human_intervention``).
  The engine's bookkeeping (``turn_start``, ``session_start``, ``session_metadata``,
  ``session_event``, ``ContextualHookInvoked``, ``pending_interaction``,
  ``interaction_resolved``, ``usage_summary``, ``tombstone``, ``steering_inclusion``) adds
  no event.  Older IDE files hold flat ``{"role", "content"}`` lines: read as messages.
* **Usage**: none in tokens — V3 records credits (``usage_summary``), V2's header token
  counts are zero in every sample: shown as "not recorded".
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.kiro_sessions import NAME, V2_DIR
from helixd.adapters.fields import dump, get_dict, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import Turns
from helixd.core.records import Parsed, SessionInfo
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

# Kiro's tool names -> the common names calls are classified by (a shell, an edit)
KIND_OF: Final = {
    "shell": "bash",
    "execute_bash": "bash",
    "execute_pwsh": "bash",
    "write": "Write",
    "fs_write": "Write",
    "fs_append": "Write",
    "str_replace": "Edit",
    "read": "Read",
    "fs_read": "Read",
    "read_file": "Read",
}
QUIET_V3: Final = frozenset(
    {
        "turn_start",
        "session_start",
        "session_metadata",
        "session_event",
        "ContextualHookInvoked",
        "pending_interaction",
        "interaction_resolved",
        "usage_summary",
        "tombstone",
        "steering_inclusion",
    }
)
FAILED_STOPS: Final = frozenset({"error", "failed"})
USER_STOPS: Final = frozenset({"cancelled", "aborted"})


def _header(raw: bytes | None) -> Mapping[str, Any]:
    if not raw:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}  # cut at the companion limit, or mid-write: the names stand in
    return value if isinstance(value, dict) else {}


def _first_str(values: Any) -> str:
    if isinstance(values, list):
        return next((v for v in values if isinstance(v, str) and v), "")
    return ""


def _texts(blocks: Any, kind: str = "text") -> str:
    """The text of the ``{"kind": kind, "data": …}`` blocks of a V2 record, joined."""
    if not isinstance(blocks, list):
        return ""
    out = []
    for block in blocks:
        if isinstance(block, dict) and block.get("kind") == kind:
            data = block.get("data")
            if isinstance(data, str):
                out.append(data)
            elif isinstance(data, dict) and isinstance(data.get("text"), str):
                out.append(data["text"])
    return "\n\n".join(t for t in out if t)


def _result_text(blocks: Any) -> str:
    """A V2 tool result's ``content[]``: text blocks as written, JSON blocks (a shell's
    ``{exit_status, stdout, stderr}``) as their stdout and stderr, else as JSON."""
    if not isinstance(blocks, list):
        return ""
    out = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        data = block.get("data")
        if isinstance(data, str):
            out.append(data)
        elif isinstance(data, dict) and ("stdout" in data or "stderr" in data):
            out.extend(s for s in (get_str(data, "stdout"), get_str(data, "stderr")) if s)
        elif data is not None:
            out.append(dump(data).decode("utf-8", "replace"))
    return "\n".join(out)


def _crc(text: str) -> str:
    return f"{zlib.crc32(text.encode('utf-8', 'replace')):08x}"


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    return dump(value).decode("utf-8", "replace") if value is not None else ""


class _Run(Turns):
    def __init__(self, state: Mapping[str, Any], chunk: Chunk) -> None:
        super().__init__(state)
        rel = chunk.ctx.rel
        self.v2 = rel.startswith(V2_DIR + "/")
        head = _header(chunk.ctx.sidecar)
        parts = rel.split("/")
        if self.v2:
            native = get_str(head, "session_id") or parts[-1].removesuffix(".jsonl")
            cwd = get_str(head, "cwd")
            state_ = get_dict(head, "session_state")
            model = get_str(get_dict(get_dict(state_, "rts_model_state"), "model_info"), "model_id")
            parent = ""
            title = get_str(head, "title")
        else:
            native = get_str(head, "id") or (parts[-2] if len(parts) > 1 else "")
            cwd = _first_str(head.get("workspacePaths")) or _first_str(head.get("rootPaths"))
            model = get_str(head, "model") or get_str(head, "modelId")
            parent = get_str(head, "parentSessionId")
            title = get_str(head, "title")
        self.native = native or "unknown"
        self.uid = f"{NAME}:{self.native}"
        self.facts = SessionInfo(
            uid=self.uid,
            agent=NAME,
            native_id=self.native,
            parent_uid=f"{NAME}:{parent}" if parent else None,
            cwd=cwd or None,
            model=model or None,
            title=title or None,
            agent_type="subagent" if parent else None,
        )
        ts = state.get("ts")
        self.ts: int | None = ts if isinstance(ts, int) else None
        self.seen = False

    def session(self, ts: int | None) -> None:
        if not self.seen or ts is not None:
            self.out.sessions.append(self.facts._replace(first_ts=ts, last_ts=ts))
            self.seen = True

    def line(self, offset: int, raw: bytes) -> None:
        obj, _ = jsonl.decode(raw)
        if "payload" in obj or not self.v2 and "role" in obj:
            self.v3(offset, obj)
        else:
            self.v2_record(offset, obj)

    # -- V2: {"version", "kind", "data"} ------------------------------------------------
    def v2_record(self, offset: int, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        data = get_dict(obj, "data")
        mid = get_str(data, "message_id")
        blocks = data.get("content")
        if kind == "Prompt":
            self.ts = parse_ts(get_dict(data, "meta").get("timestamp")) or self.ts
            self.session(self.ts)
            text = _texts(blocks)
            key = mid or f"prompt:{_crc(text)}"
            self.emit(self.uid, key, "user_msg", (self.ts, offset), "user", text)
        elif kind == "AssistantMessage":
            self.session(None)
            self.assistant_v2(offset, mid, blocks)
        elif kind == "ToolResults":
            self.session(None)
            for block in blocks if isinstance(blocks, list) else []:
                res = get_dict(block, "data") if isinstance(block, dict) else {}
                cid = get_str(res, "toolUseId")
                if not cid or block.get("kind") != "toolResult":
                    self.unknown("ToolResults:block")
                    continue
                failed = get_str(res, "status").lower() in ("error", "failed")
                text = _result_text(res.get("content"))
                self.tool_result(self.uid, f"{cid}:result", (self.ts, offset), cid, text, failed)
        else:
            self.unknown(record_type(kind, "kind"))

    def assistant_v2(self, offset: int, mid: str, blocks: Any) -> None:
        at = (self.ts, offset)
        # the pieces of one streamed reply share its id: each is keyed by its text too, so
        # a key depends on its own record alone (not on its offset or on the other pieces)
        thought = _texts(blocks, "thinking")
        if thought:
            key = f"{mid or 'reply'}:{_crc(thought)}:thinking"
            self.emit(self.uid, key, "thinking", at, "assistant", thought)
        text = _texts(blocks)
        if text:
            key = f"{mid or 'reply'}:{_crc(text)}"
            self.emit(self.uid, key, "assistant_msg", at, "assistant", text)
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict) or block.get("kind") != "toolUse":
                continue
            use = get_dict(block, "data")
            cid = get_str(use, "toolUseId")
            name = get_str(use, "name") or "tool"
            if cid:
                self.tool_call(
                    self.uid, cid, at, name, cid, use.get("input"), kind_of=KIND_OF.get(name)
                )

    # -- V3: {"id", "timestamp", "payload"} ---------------------------------------------
    def v3(self, offset: int, obj: Mapping[str, Any]) -> None:
        ts = parse_ts(obj.get("timestamp")) or self.ts
        self.ts = ts
        self.session(ts)
        eid = get_str(obj, "id") or f"line:{_crc(dump(obj).decode('utf-8', 'replace'))}"
        at = (ts, offset)
        if "payload" not in obj:  # an older IDE line: {"role", "content"}
            role = get_str(obj, "role")
            text = _content(obj.get("content"))
            if role == "user":
                self.emit(self.uid, eid, "user_msg", at, "user", text)
            elif role == "assistant":
                self.emit(self.uid, eid, "assistant_msg", at, "assistant", text)
            else:
                self.unknown(f"role:{record_type(role)}")
            return
        payload = get_dict(obj, "payload")
        ptype = payload.get("type")
        if ptype == "user":
            self.emit(self.uid, eid, "user_msg", at, "user", _content(payload.get("content")))
        elif ptype == "assistant":
            self.assistant_v3(eid, at, payload)
        elif ptype in ("tool_call", "sub_agent_start"):
            self.call_v3(eid, at, payload, ptype == "sub_agent_start")
        elif ptype in ("tool_result", "sub_agent_complete"):
            sub = ptype == "sub_agent_complete"
            cid = get_str(payload, "subSessionId" if sub else "toolCallId")
            text = _content(payload.get("response" if sub else "content"))
            failed = get_str(payload, "status").lower() in ("error", "failed")
            key = f"{cid}:result" if cid else eid
            self.tool_result(self.uid, key, at, cid or None, text, failed)
        elif ptype == "turn_end":
            stop = get_str(payload, "stopReason")
            if stop in FAILED_STOPS:
                self.emit(self.uid, eid, "error", at, "system", stop, is_error=True)
            elif stop in USER_STOPS:
                self.emit(self.uid, eid, "human_intervention", at, "user", stop)
        elif ptype not in QUIET_V3:
            self.unknown(f"payload:{record_type(ptype)}")

    def assistant_v3(
        self, eid: str, at: tuple[int | None, int], payload: Mapping[str, Any]
    ) -> None:
        op = payload.get("operationType")
        text = _content(payload.get("content"))
        if op == "Say":
            self.emit(self.uid, eid, "assistant_msg", at, "assistant", text)
        elif op == "Reasoning":
            self.emit(self.uid, eid, "thinking", at, "assistant", text)
        elif op == "Summary":
            self.emit(self.uid, eid, "lifecycle", at, "assistant", text)
        else:
            self.unknown(f"assistant:{record_type(op, 'operationType')}")

    def call_v3(
        self, eid: str, at: tuple[int | None, int], payload: Mapping[str, Any], sub: bool
    ) -> None:
        cid = get_str(payload, "subSessionId" if sub else "toolCallId")
        if sub:
            name = f"subagent:{get_str(payload, 'subAgentName') or 'unknown'}"
            args: Any = {"prompt": payload.get("prompt")}
        else:
            name = get_str(payload, "toolName") or "tool"
            args = payload.get("args")
        key = cid or eid
        if get_str(payload, "status") == "denied":
            self.emit(self.uid, f"{key}:denied", "human_intervention", at, "user", name)
            return
        if cid and cid in self.pending:
            return  # the same call again in its next state: already recorded
        self.tool_call(self.uid, key, at, name, cid or None, args, kind_of=KIND_OF.get(name))


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(state, chunk)
    consumed, lines = each_line(chunk, run, run.line)
    return run.parsed(consumed, lines, ts=run.ts)


PARSERS: Final = {NAME: parse}

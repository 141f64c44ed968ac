"""Kiro CLI conversations (``<data dir>/kiro-cli/data.sqlite3``, SQLite), and the Amazon Q
Developer CLI's it grew from (``<data dir>/amazon-q/data.sqlite3``).

Pure: row lines in, records out (``helixd/sources/sqlite.py``).  No real database is public;
the reader follows the evidence (docs/formats-agents.md, "Kiro CLI"):

* **Tables**: ``conversations_v2 (key, conversation_id, value, created_at, updated_at)`` —
  Kiro CLI's v1 engine, one row per conversation, rewritten in place (watermark
  ``updated_at``) — and Q's ``conversations (key, value)`` (migration
  ``007_conversations_table.sql`` of aws/amazon-q-developer-cli; one row per directory,
  ``INSERT OR REPLACE``: read as a key/value table, a row again when its value changed).
  ``key`` is the directory the conversation ran in (the cwd).
* **Value**: Q's ``ConversationState`` serialized by serde (``cli/chat/conversation.rs``,
  ``message.rs``): ``conversation_id``, ``model`` / ``model_info.model_id``, ``history[]`` of
  ``{user, assistant, request_metadata}``.  ``user.content`` is one of ``{"Prompt":
  {prompt}}`` (``user_msg``), ``{"ToolUseResults": {tool_use_results[]}}`` (``tool_result``:
  ``tool_use_id``, ``content[]`` of ``{"Text": …}`` / ``{"Json": …}``, ``status``
  ``Success``/``Error``) or ``{"CancelledToolUses": {prompt?, tool_use_results[]}}`` (the
  results are rejections, the prompt a ``user_msg``); ``user.timestamp`` is RFC 3339.
  ``assistant`` is ``{"Response": {message_id, content}}`` (``assistant_msg``) or
  ``{"ToolUse": {message_id, content, tool_uses[{id, name, args}]}}`` (its text, then a
  ``tool_call`` per use; ``fs_write`` is classified as an edit, ``execute_bash`` as a shell).
  ``request_metadata.stream_end_timestamp_ms`` times the reply.
* **Identity**: ``kiro_cli:<conversation_id>``; event keys from the reply's ``message_id``
  (else the request's, else the entry's index), tool calls and results by tool use id: a
  conversation read again (its row rewritten) gives the same keys.
* **Usage**: none in tokens — Q records request and response sizes in bytes, Kiro credits.
* **Not read**: the ``history`` table of shell commands, ``state`` and ``auth_kv``.  The
  V2 and V3 engines' session files (``~/.kiro/sessions/``) are ``kiro_sessions.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.kiro_cli import LEGACY, NAME, V2
from helixd.adapters.fields import dump, get_dict, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import Turns
from helixd.core.records import Parsed, SessionInfo
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

KIND_OF: Final = {"execute_bash": "bash", "fs_write": "Write"}


def _result_text(blocks: Any) -> str:
    if not isinstance(blocks, list):
        return ""
    parts = []
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("Text"), str):
            parts.append(block["Text"])
        elif isinstance(block, dict) and "Json" in block:
            parts.append(dump(block["Json"]).decode("utf-8", "replace"))
    return "\n".join(parts)


class _Run(Turns):
    def line(self, offset: int, raw: bytes) -> None:
        obj, _ = jsonl.decode(raw)
        table, row = obj.get("table"), obj.get("row")
        if table not in (V2, LEGACY) or not isinstance(row, dict):
            self.unknown(record_type(table, "table"))
            return
        value = row.get("value")
        doc = orjson.loads(value) if isinstance(value, str) and value else None
        if not isinstance(doc, dict):
            raise ValueError(f"{table} row {get_str(row, 'key')!r}: not a JSON object")
        native = get_str(doc, "conversation_id") or get_str(row, "conversation_id")
        history = doc.get("history")
        if not native or not isinstance(history, list):
            raise ValueError(f"{table}: a conversation without conversation_id or history")
        uid = f"{NAME}:{native}"
        times: list[int] = []
        for i, entry in enumerate(history):
            if isinstance(entry, dict):
                times.extend(self.entry(uid, offset, i, entry))
            else:
                self.unknown("history:not an object")
        info = get_dict(doc, "model_info")
        model = get_str(info, "model_id") or get_str(doc, "model") or None
        self.out.sessions.append(
            SessionInfo(
                uid=uid,
                agent=NAME,
                native_id=native,
                cwd=get_str(row, "key") or None,
                model=model,
                first_ts=min(times, default=None),
                last_ts=max(times, default=None),
            )
        )

    def entry(self, uid: str, offset: int, i: int, entry: Mapping[str, Any]) -> list[int]:
        user, meta = get_dict(entry, "user"), get_dict(entry, "request_metadata")
        reply = entry.get("assistant")
        variant, body = next(iter(reply.items())) if isinstance(reply, dict) and reply else ("", {})
        body = body if isinstance(body, dict) else {}
        turn = get_str(body, "message_id") or get_str(meta, "message_id") or f"#{i}"
        asked = parse_ts(user.get("timestamp"))
        answered = parse_ts(meta.get("stream_end_timestamp_ms")) or asked
        self.user(uid, turn, (asked, offset), get_dict(user, "content"))
        text = get_str(body, "content")
        if variant in ("Response", "ToolUse"):
            if text or variant == "Response":
                self.emit(uid, turn, "assistant_msg", (answered, offset), "assistant", text)
            for use in body.get("tool_uses") or [] if variant == "ToolUse" else []:
                if isinstance(use, dict) and get_str(use, "id"):
                    name = get_str(use, "name") or "tool"
                    cid = get_str(use, "id")
                    at = (answered, offset)
                    kind = KIND_OF.get(name)
                    self.tool_call(uid, cid, at, name, cid, use.get("args"), kind_of=kind)
        else:
            self.unknown(f"assistant:{record_type(variant, 'variant')}")
        return [t for t in (asked, answered) if t is not None]

    def user(self, uid: str, turn: str, at: tuple[int | None, int], content: Any) -> None:
        if not isinstance(content, dict) or not content:
            self.unknown("user:no content")
            return
        variant, body = next(iter(content.items()))
        body = body if isinstance(body, dict) else {}
        prompt = get_str(body, "prompt")
        if variant == "Prompt" or (variant == "CancelledToolUses" and prompt):
            self.emit(uid, f"{turn}:user", "user_msg", at, "user", prompt)
        if variant in ("ToolUseResults", "CancelledToolUses"):
            cancelled = variant == "CancelledToolUses"
            for res in body.get("tool_use_results") or []:
                cid = get_str(res, "tool_use_id") if isinstance(res, dict) else ""
                if not cid:
                    continue
                text = _result_text(res.get("content")) or ("cancelled" if cancelled else "")
                failed = cancelled or get_str(res, "status").lower() == "error"
                self.tool_result(
                    uid,
                    f"{cid}:result",
                    at,
                    cid,
                    text,
                    failed,
                    rejected=True if cancelled else None,
                )
        elif variant != "Prompt":
            self.unknown(f"user:{record_type(variant, 'variant')}")


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(state)
    return run.parsed(*each_line(chunk, run, run.line))


PARSERS: Final = {NAME: parse}

"""Continue sessions (``${CONTINUE_GLOBAL_DIR:-~/.continue}/sessions/<uuid>.json``).

Pure: bytes in, records out.  From five real files of one user's ``~/.continue`` in the
corpus (VS Code extension, Dec 2024) and Continue's ``core`` types for the newer fields
(``toolCalls``, ``tool`` messages, ``thinking``).

* **Files**: ``<sessionId>.json``, one JSON document per session, rewritten whole
  (``whole_file``): ``{sessionId, title, workspaceDirectory, history[]}``.  The index
  ``sessions.json`` is the sidecar (``dateCreated``, a string of epoch milliseconds, is
  the only time Continue records for a session); it is never parsed as a session.
* **History items** ``{message{role, content, id}, contextItems, editorState}``: ``user``
  → ``user_msg`` (its text blocks); ``assistant`` → ``assistant_msg`` and one
  ``tool_call`` per ``toolCalls`` entry; ``tool`` → ``tool_result`` joined on
  ``toolCallId``; ``thinking`` → ``thinking``; ``system`` adds nothing.  Events are keyed
  by message id (else position and role): a rewrite replaces their content.
* **Usage**: none.  Session files hold no token counts; ``dev_data/tokens_generated.jsonl``
  logs ``{model, provider, promptTokens, generatedTokens}`` per call without a session id
  or a time, so it cannot be credited to a session and is not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_items
from helixd.adapters.declared.continue_dev import NAME
from helixd.adapters.fields import first_str, get_dict, result_text
from helixd.core.records import Parsed
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type


def created_at(index: bytes | None, sid: str) -> int | None:
    """The session's ``dateCreated`` from the index (a string of epoch ms), if listed."""
    try:
        entries = orjson.loads(index) if index else []
    except orjson.JSONDecodeError:
        return None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("sessionId") == sid:
            raw = entry.get("dateCreated")
            return parse_ts(int(raw) if isinstance(raw, str) and raw.isdigit() else raw)
    return None


class HistoryRun(ChainRun):
    """A Continue-shaped session document's ``history`` (also Kiro's, whose chat is built
    on Continue: ``helixd/adapters/kiro.py``)."""

    CWD_KEY = "workspaceDirectory"

    def document(self, obj: Mapping[str, Any], created: int | None) -> None:
        self.note_ts(created)
        for field, key in (("title", "title"), ("cwd", self.CWD_KEY)):
            value = first_str(obj, key)
            if value:
                self.info[field] = value

    def item(self, index: int, offset: int, item: Mapping[str, Any]) -> None:
        msg = get_dict(item, "message")
        role = record_type(msg.get("role"), "role")
        key = first_str(msg, "id") or f"@{index}:{role}"
        at = (self.info.get("first_ts"), offset)
        text = result_text(msg.get("content"))
        if role == "user":
            self.emit(key, "user_msg", at, "user", text)
        elif role == "assistant":
            if text.strip():
                self.emit(key, "assistant_msg", at, "assistant", text)
            calls = msg.get("toolCalls")
            for i, call in enumerate(calls if isinstance(calls, list) else []):
                if isinstance(call, dict):
                    self.call(f"{key}:call{i}", call, at)
        elif role == "tool":
            cid = first_str(msg, "toolCallId")
            self.tool_result(f"{key}:result", cid, text, at)
        elif role == "thinking":
            self.emit(key, "thinking", at, "assistant", text)
        elif role != "system":
            self.unknown(f"role/{role}")

    def call(self, key: str, call: Mapping[str, Any], at: Any) -> None:
        fn = get_dict(call, "function")
        args: Any = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = orjson.loads(args)
            except orjson.JSONDecodeError:
                pass
        name = first_str(fn, "name") or "tool"
        self.tool_call(key, name, first_str(call, "id"), args, at)


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one session document (see the module docstring)."""
    return parse_history(HistoryRun, NAME, chunk)


def parse_history(kind: type[HistoryRun], name: str, chunk: Chunk) -> Parsed:
    """One Continue-shaped session document of agent ``name``, read by ``kind``."""
    obj = jsonl.whole_document(chunk, "session document")
    if isinstance(obj, Parsed):
        return obj
    stem = chunk.ctx.rel.rsplit("/", 1)[-1][: -len(".json")]
    run = kind(name, stem, {})
    sid = first_str(obj, "sessionId")
    if sid:
        run.rename(sid)
    run.document(obj, created_at(chunk.ctx.sidecar, run.native))
    return parse_items(chunk, run, obj.get("history"), run.item, "history")


PARSERS: Final = {NAME: parse}

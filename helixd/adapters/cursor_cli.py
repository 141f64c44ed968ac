"""The cursor-agent CLI's chats: ``~/.cursor/chats/<workspace-hash>/<chat-id>/store.db``
(SQLite, WAL), one database per chat.

Pure: row lines in, records out (``helixd/sources/sqlite.py`` reads the rows).  No real
``store.db`` is public; the shape is the one public readers agree on (docs/adapters.md,
"cursor-agent CLI chats"): chenhg5/tape's Cursor source test
(``internal/…/cursor`` ``buildStore``), a Python sidecar's ``create_production_store`` test
and jazzyalex/agent-sessions' constructed ``test-store.db`` (the corpus):

* **Tables**: ``meta (key TEXT PRIMARY KEY, value TEXT)`` — one row, key ``"0"``, whose value
  is **hex-encoded** JSON ``{agentId, name, mode, createdAt (ms), lastUsedModel,
  latestRootBlobId}``, rewritten in place (read as a key/value table: again when its value
  changes) — and ``blobs (id TEXT PRIMARY KEY, data BLOB)``, content-addressed (``id`` =
  sha256 of ``data``), only ever inserted (watermark ``rowid``).
* **Blobs read**: those whose data starts with ``{`` — the JSON messages ``{role, content}``;
  ``content`` a string or a list of ``{type: text | reasoning | tool-call {toolCallId,
  toolName, args} | tool-result {toolCallId, toolName, result}}``.  The other blobs are
  protobuf tree nodes: the root (``latestRootBlobId``) lists the message blob ids (field 1,
  32 bytes each, repeated) and the workspace URI (field 9).
* **Order**: the rows' insertion order (``rowid``).  The root blob's order is not used: row
  values reach adapters as UTF-8 text (``sources/sqlite.py``), which loses the root's binary
  ids.  Every public builder inserts the messages in the root's order before the root itself,
  so both orders agree there; a chat whose messages were stored out of order would show them
  as stored.
* **Identity**: ``cursor_cli:<chat-id>`` (the directory, which is also ``agentId``).  Event
  keys: ``<blob id>:<block index>`` (a message's blob id is its content's hash, so a message
  read again has the same keys).
* **Events**: ``user`` → ``user_msg`` (the ``<user_query>`` of Cursor's envelope when
  there is one, else the whole text; the envelope's ``Workspace Path:`` is the session's
  cwd), ``assistant`` → ``assistant_msg`` per text block, ``thinking`` per reasoning block,
  ``tool_call`` per tool-call block (``Shell`` classified as a shell command, so a test
  command is also a ``test_run``); ``tool`` → ``tool_result`` per tool-result block.
  ``system`` messages (the vendor's prompt) add nothing.  Messages carry no time: events
  are undated, the session dated by ``createdAt``.
* **Usage**: none recorded (no per-message tokens in the store).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.cursor_cli import NAME
from helixd.adapters.fields import dump, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import Turns
from helixd.core.records import Parsed, SessionInfo
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

QUERY: Final = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)
WORKSPACE: Final = re.compile(r"<user_info>.*?Workspace Path: ([^\n<]+)", re.DOTALL)
KIND_OF: Final = {"Shell": "bash"}  # cursor's shell tool, classified as a shell command


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (dict, list)):
        return dump(content).decode("utf-8", "replace")
    return "" if content is None else str(content)


def _query(text: str) -> str:
    found = QUERY.search(text)
    return found.group(1).strip() if found else text


class _Run(Turns):
    def __init__(self, state: Mapping[str, Any], native: str) -> None:
        super().__init__(state)
        self.native = native
        self.uid = f"{NAME}:{native}"

    def line(self, offset: int, raw: bytes) -> None:
        obj, _ = jsonl.decode(raw)
        table, row = obj.get("table"), obj.get("row")
        if not isinstance(row, dict):
            self.unknown(record_type(table if table is not None else obj.get("type"), "table"))
        elif table == "meta":
            self.meta(row)
        elif table == "blobs":
            self.blob(offset, row)
        else:
            self.unknown(record_type(table, "table"))

    def meta(self, row: Mapping[str, Any]) -> None:
        value = get_str(row, "value")
        try:
            doc = orjson.loads(bytes.fromhex(value))
        except ValueError as exc:  # not hex, or not JSON (orjson's error is a ValueError)
            raise ValueError(f"meta {get_str(row, 'key')!r}: not hex-encoded JSON") from exc
        if not isinstance(doc, dict):
            raise ValueError(f"meta {get_str(row, 'key')!r}: not a JSON object")
        created = parse_ts(doc.get("createdAt"))
        self.out.sessions.append(
            SessionInfo(
                uid=self.uid,
                agent=NAME,
                native_id=self.native,
                title=get_str(doc, "name") or None,
                model=get_str(doc, "lastUsedModel") or None,
                first_ts=created,
                last_ts=created,
            )
        )

    def blob(self, offset: int, row: Mapping[str, Any]) -> None:
        bid, data = get_str(row, "id"), get_str(row, "data")
        if not bid:
            raise ValueError("a blob without id")
        message = orjson.loads(data)
        if not isinstance(message, dict):
            raise ValueError(f"blob {bid[:12]}: not a JSON object")
        role, content = message.get("role"), message.get("content")
        at = (None, offset)
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if role == "system":
            return
        if role not in ("user", "assistant", "tool"):
            self.unknown(f"role:{record_type(role)}")
            return
        for i, block in enumerate(blocks):
            key = f"{bid}:{i}"
            if not isinstance(block, dict):
                self.unknown(f"block:{type(block).__name__}")
            else:
                self.block(role, key, at, block)

    def block(self, role: str, key: str, at: tuple[None, int], block: Mapping[str, Any]) -> None:
        kind, uid = block.get("type"), self.uid
        if kind == "text" and role == "user":
            text = _text(block.get("text"))
            self.emit(uid, key, "user_msg", at, "user", _query(text))
            workspace = WORKSPACE.search(text)
            if workspace:
                cwd = workspace.group(1).strip()
                self.out.sessions.append(SessionInfo(uid, NAME, self.native, cwd=cwd))
        elif kind == "text" and role == "assistant":
            self.emit(uid, key, "assistant_msg", at, "assistant", _text(block.get("text")))
        elif kind == "reasoning" and role == "assistant":
            self.emit(uid, key, "thinking", at, "assistant", _text(block.get("text")))
        elif kind == "tool-call" and role == "assistant":
            cid = get_str(block, "toolCallId") or None
            name = get_str(block, "toolName") or "tool"
            self.tool_call(uid, key, at, name, cid, block.get("args"), kind_of=KIND_OF.get(name))
        elif kind == "tool-result":
            cid = get_str(block, "toolCallId") or None
            text = _text(block.get("result"))
            failed = block.get("isError") is True
            self.tool_result(uid, key, at, cid, text, failed, name=get_str(block, "toolName"))
        else:
            self.unknown(f"{role}:{record_type(kind)}")


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    parts = chunk.ctx.rel.split("/")
    native = parts[-2] if len(parts) >= 2 else chunk.ctx.rel
    run = _Run(state, native)
    return run.parsed(*each_line(chunk, run, run.line))


PARSERS: Final = {NAME: parse}

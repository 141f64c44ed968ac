"""Cursor IDE chats (``<Cursor user dir>/workspaceStorage/<hash>/state.vscdb``, SQLite).

Pure: row lines in, records out (``helixd/sources/sqlite.py``).  Rules from
``../shared/notes/formats.md`` §8/§8.1 and the real workspace database in the corpus (2024):

* **Read**: two rows of the key/value table ``ItemTable`` (``Table(order=None)``: a row is
  read again when its value changed — each is one JSON document the IDE rewrites whole):
  ``workbench.panel.aichat.view.aichat.chatdata`` (the chat panel: ``tabs[].bubbles[]``) and
  ``composer.composerData`` (the composer: ``allComposers[].conversation[]``).  Nothing
  else of the table (editor state, terminal buffers, prompts history) is selected.
* **Identity**: ``cursor_ide:<tabId>`` for a chat tab, ``cursor_ide:<composerId>`` for a composer
  session; title ``chatTitle`` / ``name``.  The workspace folder is in the sibling
  ``workspace.json`` (the sidecar): its ``folder`` URI is the cwd.
* **Events**: a bubble of ``type`` ``user`` (chat) or ``1`` (composer) is a ``user_msg``;
  ``ai`` or ``2`` an ``assistant_msg``, keyed by the bubble id (``bubbleId``/``id``).
  Times: the tab's ``lastSendTime``, the composer's ``createdAt``/``lastUpdatedAt``.
* **No tokens** are recorded locally: Cursor adds no usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote, urlparse

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.cursor_ide import CHAT, COMPOSER, NAME
from helixd.adapters.fields import get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import Turns
from helixd.core.records import Parsed, SessionInfo
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

USER_TYPES: Final = frozenset({"user", 1})
AI_TYPES: Final = frozenset({"ai", 2})


def _folder(side: bytes | None) -> str | None:
    if not side:
        return None
    try:
        doc = orjson.loads(side)
    except orjson.JSONDecodeError:
        return None
    uri = doc.get("folder") if isinstance(doc, dict) else None
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return None
    return unquote(urlparse(uri).path) or None


class _Run(Turns):
    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        super().__init__(state)
        self.cwd = _folder(chunk.ctx.sidecar)

    def line(self, offset: int, raw: bytes) -> None:
        obj, _ = jsonl.decode(raw)
        row = obj.get("row")
        if obj.get("table") != "ItemTable" or not isinstance(row, dict):
            self.unknown(record_type(obj.get("table", obj.get("type")), "table"))
            return
        key, value = row.get("key"), row.get("value")
        doc = orjson.loads(value) if isinstance(value, str) and value else {}
        if not isinstance(doc, dict):
            raise ValueError(f"{key}: not a JSON object")
        if key == CHAT:
            for tab in doc.get("tabs") or []:
                if isinstance(tab, dict):
                    self.conversation(offset, tab, "tabId", "chatTitle", "bubbles")
        elif key == COMPOSER:
            for comp in doc.get("allComposers") or []:
                if isinstance(comp, dict):
                    self.conversation(offset, comp, "composerId", "name", "conversation")
        else:
            self.unknown(f"ItemTable:{record_type(key, 'key')}")

    def conversation(
        self, offset: int, conv: Mapping[str, Any], id_key: str, title_key: str, list_key: str
    ) -> None:
        native = get_str(conv, id_key)
        bubbles = conv.get(list_key)
        if not native or not isinstance(bubbles, list):
            return
        uid = f"{NAME}:{native}"
        first = parse_ts(conv.get("createdAt")) or parse_ts(conv.get("lastSendTime"))
        last = parse_ts(conv.get("lastUpdatedAt")) or parse_ts(conv.get("lastSendTime")) or first
        model = None
        for i, bubble in enumerate(bubbles):
            if not isinstance(bubble, dict):
                continue
            btype = bubble.get("type")
            key = get_str(bubble, "bubbleId") or get_str(bubble, "id") or f"#{i}"
            text = get_str(bubble, "text") or get_str(bubble, "rawText")
            model = get_str(bubble, "modelType") or model
            if btype in USER_TYPES:
                self.emit(uid, key, "user_msg", (first, offset), "user", text)
            elif btype in AI_TYPES:
                self.emit(uid, key, "assistant_msg", (last, offset), "assistant", text)
            else:
                self.unknown(f"bubble:{btype!r}")
        self.out.sessions.append(
            SessionInfo(
                uid=uid,
                agent=NAME,
                native_id=native,
                cwd=self.cwd,
                title=get_str(conv, title_key) or None,
                model=model,
                first_ts=first,
                last_ts=last,
            )
        )


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(chunk, state)
    return run.parsed(*each_line(chunk, run, run.line))


PARSERS: Final = {NAME: parse}

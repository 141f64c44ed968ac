"""Goose sessions (``${XDG_DATA_HOME:-~/.local/share}/goose/sessions/sessions.db``, SQLite).

Pure: row lines in, records out (``helixd/sources/sqlite.py``).  Rules from
``../shared/notes/formats.md`` §8.1, the real database in the corpus (schema version 1 of
``schema_version``) and Goose's message format (``content_json``: a list of content
items tagged by ``type``):

* **Tables read**: ``messages`` (append-only: watermark ``id``), then ``sessions``
  (``updated_at``: names and token totals change).
* **Identity**: ``goose:<sessions.id>`` (``YYYYMMDD_N``); cwd ``working_dir``; title
  ``name`` (else ``description``).
* **Events**: ``text`` → ``user_msg``/``assistant_msg``; ``thinking`` → ``thinking``;
  ``toolRequest`` (``toolCall.value.{name, arguments}``) → ``tool_call``;
  ``toolResponse`` (``toolResult.status``/``value``) → ``tool_result``;
  ``redactedThinking``, ``image``, ``contextLengthExceeded``, ``summarizationRequested``
  and the like add no event; an unknown item type is counted.  Keys:
  ``<message id>#<item index>``.
* **Usage exists only per session**: ``accumulated_input_tokens`` /
  ``accumulated_output_tokens`` (else ``input_tokens``/``output_tokens``), one fact per
  session keyed ``goose:<id>``, ``replace=True``.  Goose records no model per session:
  the fact's model is ``unknown``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters.base import Chunk
from helixd.adapters.declared.goose import NAME
from helixd.adapters.fields import count, get_dict, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import SessionTables
from helixd.core.records import Parsed, Role, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

ROLES: Final[dict[str, tuple[str, Role]]] = {
    "user": ("user_msg", "user"),
    "assistant": ("assistant_msg", "assistant"),
}
QUIET_ITEMS: Final = frozenset(
    {
        "redactedThinking",
        "image",
        "contextLengthExceeded",
        "summarizationRequested",
        "toolConfirmationRequest",
        "frontendToolRequest",
        "systemNotification",
    }
)


class _Run(SessionTables):
    def session(self, offset: int, row: Mapping[str, Any]) -> None:
        native = get_str(row, "id")
        if not native:
            raise ValueError("a session row without id")
        uid = f"{NAME}:{native}"
        inp = count(row, "accumulated_input_tokens", "sessions") or count(
            row, "input_tokens", "sessions"
        )
        out = count(row, "accumulated_output_tokens", "sessions") or count(
            row, "output_tokens", "sessions"
        )
        updated = parse_ts(row.get("updated_at"))
        self.out.sessions.append(
            SessionInfo(
                uid=uid,
                agent=NAME,
                native_id=native,
                cwd=get_str(row, "working_dir") or None,
                title=get_str(row, "name") or get_str(row, "description") or None,
                first_ts=parse_ts(row.get("created_at")),
                last_ts=updated,
            )
        )
        if inp or out:
            self.out.usage.append(
                UsageFact(
                    dedup_key=uid,
                    session_uid=uid,
                    ts=updated,
                    model="unknown",
                    input_tokens=inp,
                    output_tokens=out,
                    replace=True,
                    offset=offset,
                )
            )

    def message(self, offset: int, row: Mapping[str, Any]) -> None:
        mid, native = row.get("id"), get_str(row, "session_id")
        if mid is None or not native:
            raise ValueError("a message row without id or session_id")
        items = row.get("content_json")
        if isinstance(items, str):
            items = orjson.loads(items)
        if not isinstance(items, list):
            raise ValueError("messages.content_json is not a list")
        uid = f"{NAME}:{native}"
        ts = parse_ts(row.get("created_timestamp")) or parse_ts(row.get("timestamp"))
        self.out.sessions.append(
            SessionInfo(uid=uid, agent=NAME, native_id=native, first_ts=ts, last_ts=ts)
        )
        role = get_str(row, "role")
        for i, item in enumerate(items):
            if isinstance(item, dict):
                self.item(uid, f"{mid}#{i}", (ts, offset), role, item)

    def item(
        self, uid: str, key: str, at: tuple[int | None, int], role: str, item: Mapping[str, Any]
    ) -> None:
        itype = item.get("type")
        if itype == "text":
            kind, erole = ROLES.get(role, ("lifecycle", "system"))
            self.emit(uid, key, kind, at, erole, get_str(item, "text"))
        elif itype == "thinking":
            self.emit(uid, key, "thinking", at, "assistant", get_str(item, "thinking"))
        elif itype == "toolRequest":
            call = get_dict(get_dict(item, "toolCall"), "value")
            name = get_str(call, "name") or "tool"
            self.tool_call(uid, key, at, name, get_str(item, "id") or None, call.get("arguments"))
        elif itype == "toolResponse":
            result = get_dict(item, "toolResult")
            failed = result.get("status") == "error"
            value = result.get("value")
            text = get_str(result, "error") if failed else ""
            if isinstance(value, list):
                text = "\n".join(
                    get_str(v, "text") for v in value if isinstance(v, dict) and "text" in v
                )
            self.tool_result(uid, key, at, get_str(item, "id") or None, text, failed)
        elif itype not in QUIET_ITEMS:
            self.unknown(f"content:{record_type(itype)}")


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(state)
    return run.parsed(*each_line(chunk, run, run.line))


PARSERS: Final = {NAME: parse}

"""Cursor agent transcripts (``~/.cursor/projects/<slug>/agent-transcripts/``), written by the
cursor-agent CLI and Cursor's agent.

Pure: bytes in, records out.  Evidence: the corpus's constructed transcripts
(``jazzyalex/agent-sessions`` fixtures) and public readers of real ones, which agree on the
shape and layout (a real path: ``projects/<slug>/agent-transcripts/<uuid>/<uuid>.jsonl``):

* **Files** (append-only JSONL): ``<id>.jsonl`` and ``<id>/<id>.jsonl`` directly under
  ``agent-transcripts/``; a subagent's ``<id>/subagents/<child>.jsonl`` (its parent is
  ``<id>``).  ``<slug>`` is the workspace path with ``/`` turned into ``-``: not reversible,
  so no cwd is taken from it.  The older ``.txt`` transcripts are not read.
* **Lines** ``{role: user|assistant, message: {content: [...]}}`` with Claude-API-style
  blocks: ``text`` → ``user_msg`` (the ``<user_query>`` wrapper removed) or
  ``assistant_msg``; ``thinking`` → ``thinking``; ``tool_use {name, input[, id]}`` →
  ``tool_call``; ``tool_result {content[, tool_use_id, is_error]}`` → ``tool_result``,
  joined by id when there is one, else to the oldest open call (results follow their calls
  in order).  ``{type: turn_ended}`` lines add nothing; other record types are counted.
* **Identity**: ``cursor_agent:<file stem>``.  No ids or times are recorded per line: event
  keys are the line's byte offset, its checksum (a file replaced by another keeps neither's
  events from the other) and the block's index; events have no time.
* **Usage**: none recorded.
* **Not read**: the CLI's ``~/.cursor/chats/<hash>/<id>/store.db`` (content-addressed blobs;
  the only sample in the corpus is a constructed database with no blob).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_lines
from helixd.adapters.declared.cursor_agent import NAME, _layout
from helixd.adapters.fields import first_str, get_dict, result_text
from helixd.core.records import Parsed
from helixd.core.values import record_type

QUIET: Final = frozenset({"turn_ended"})
MAX_OPEN: Final = 64
QUERY: Final = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.DOTALL)


class _Run(ChainRun):
    def line(self, offset: int, obj: Mapping[str, Any]) -> None:
        role = obj.get("role")
        if role not in ("user", "assistant"):
            rtype = record_type(obj.get("type") if role is None else role, "role")
            if rtype not in QUIET:
                self.unknown(rtype)
            return
        content = get_dict(obj, "message").get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for i, block in enumerate(blocks):
            if isinstance(block, dict):
                self.block(f"{offset}:{self.crc}:{i}", (None, offset), role, block)

    def block(self, key: str, at: Any, role: str, block: Mapping[str, Any]) -> None:
        btype = block.get("type")
        opened: list[str] = self.extra.setdefault("open", [])
        if btype == "text":
            text = first_str(block, "text") or ""
            if role == "user":
                found = QUERY.match(text)
                self.emit(key, "user_msg", at, "user", found.group(1) if found else text)
            elif text.strip():
                self.emit(key, "assistant_msg", at, "assistant", text)
        elif btype == "thinking":
            self.emit(key, "thinking", at, "assistant", first_str(block, "thinking", "text") or "")
        elif btype == "tool_use":
            name = first_str(block, "name") or "tool"
            cid = first_str(block, "id") or None
            if cid is None:
                opened.append(name)
                del opened[:-MAX_OPEN]
            self.tool_call(key, name, cid, block.get("input"), at)
        elif btype == "tool_result":
            cid = first_str(block, "tool_use_id") or None
            called = opened.pop(0) if cid is None and opened else None
            text = result_text(block.get("content"))
            failed = block.get("is_error") is True
            self.tool_result(key, cid, text, at, failed=failed, name=called)
        else:
            self.unknown(f"block:{record_type(btype)}")


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    layout = _layout(chunk.ctx.rel)
    native, parent = layout if layout else (Path(chunk.ctx.rel).stem, None)
    run = _Run(NAME, native, state)
    facts = {"parent_uid": f"{NAME}:{parent}"} if parent else {}
    return parse_lines(chunk, run, run.line, **facts)


PARSERS: Final = {NAME: parse}

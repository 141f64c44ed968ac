"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/``).

Pure: bytes in, records out.  Rules from ``../shared/notes/formats.md`` §6, §9.4, §11.3 and
upstream ``packages/core/src/services/chatRecordingService.ts``:

* **Files.** ``session-<time>-<short id>.json`` is one JSON document rewritten whole;
  ``session-*.jsonl`` (newer) is a header line, message lines, ``{"$set": …}`` metadata
  patches and ``{"$rewindTo": id}`` markers, where a later line with the same message ``id``
  replaces the earlier one.  Subagents write ``chats/<parent session id>/<session id>.jsonl``.
  **Both forms are declared ``whole_file``**: the store replaces an event only for such
  files, and a message line is rewritten several times as it fills in (tokens, tool
  results), so the ``.jsonl`` is re-read from byte 0 on every change too.  Within one
  ``parse`` call the last version of each message id wins (the store keeps the first
  occurrence of a key inside one batch); across calls the later batch replaces.
* **A ``.json`` that does not parse** at end of file and does not end with ``}`` is taken to
  be mid-rewrite: nothing is consumed and the next rewrite is read as a new generation.  One
  that ends with ``}`` but still fails is one ``BadLine`` covering the whole file.  A read
  that does not reach the end of the file consumes nothing (the document must be whole).
* **Identity.** ``gemini:<sessionId>`` from the header/document (the file name's stem when
  missing).  Resume writes a new file (``.json`` → ``.jsonl`` migration, same short id)
  holding the same session id and message ids, so events (keyed by message id) and usage
  (``gemini:<sessionId>:<message id>``) count once across files.
* **Tokens** (per API response, one fact per message id, ``replace=True`` so the latest
  snapshot wins): ``cached`` ⊂ ``input``; ``tool`` (tool-use prompt tokens) is billed as
  input outside ``input`` (ccusage's rule: ``total = input + output + thoughts + tool``);
  thoughts are billed as output.  So ``input_tokens = input - cached + tool``,
  ``cache_read = cached``, ``output_tokens = output + thoughts``, ``reasoning = thoughts``.
* **Rewind** keeps the rewound messages (they happened and were billed) and adds a
  ``lifecycle`` event; ``$set.messages`` entries are treated as message records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.gemini import NAME, _is_subagent
from helixd.adapters.fields import count, dump, get_str
from helixd.adapters.guard import each_line, guarded
from helixd.adapters.toolkinds import (
    describe_call,
    edited_path,
    is_test_command,
    result_signals,
    shell_command,
    shorten,
)
from helixd.core.records import Event, Parsed, Role, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

BODY_LIMIT: Final = 64 * 1024
MESSAGE_TYPES: Final = frozenset({"user", "gemini", "model", "info", "warning", "error"})
TERMINAL_STATUSES: Final = frozenset({"success", "error", "cancelled"})
CANCEL_MARKERS: Final = ("Request cancelled", "[Operation Cancelled]")
_EXIT_CODE = re.compile(r"Exit Code: (\d+)")


def file_identity(rel: str) -> tuple[str, str | None]:
    """``(fallback native id, parent native id)`` from the path: the stem, and for a
    subagent the directory it sits in (its parent's full session id)."""
    parts = rel.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    return stem, (parts[-2] if _is_subagent(parts) else None)


def content_text(content: Any) -> str:
    """Text of a ``PartListUnion``: a string, a part, or a list of parts."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            text = part.get("text")
            if isinstance(text, str):
                out.append(text)
            elif part.get("inlineData") is not None or part.get("fileData") is not None:
                out.append("[attachment]")
    return "\n".join(out)


def result_text(result: Any, display: Any) -> tuple[str, bool]:
    """``(text, reported_error)`` of a tool call's ``result`` parts (``functionResponse``
    ``output``/``error``), falling back to the ``resultDisplay`` string."""
    pieces: list[str] = []
    error = False
    for part in result if isinstance(result, list) else [result]:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        resp = response.get("response") if isinstance(response, dict) else None
        if isinstance(resp, dict):
            out, err = resp.get("output"), resp.get("error")
            if isinstance(out, str):
                pieces.append(out)
            if err:
                error = True
                pieces.append(err if isinstance(err, str) else dump(err).decode())
            if not isinstance(out, str) and not err:
                pieces.append(dump(resp).decode())
        elif part is not None:
            pieces.append(content_text(part))
    if not any(pieces) and isinstance(display, str):
        pieces = [display]
    return "\n".join(p for p in pieces if p), error


_PLAIN_KINDS: Final[dict[str, tuple[str, Role]]] = {
    "user": ("user_msg", "user"),
    "error": ("error", "system"),
    "info": ("lifecycle", "system"),
    "warning": ("lifecycle", "system"),
}


class _Recording:
    """Mutable helper for one ``parse`` call: message records are collected (last version
    of each id wins, first appearance keeps the order) and turned into records at the end,
    each under ``guard.guarded`` (a message that fails is a bad line: its line's offset and
    length, or its position and 0 inside a whole document)."""

    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        self.rel = chunk.ctx.rel
        self.fallback, self.parent = file_identity(self.rel)
        self.sid: str = state.get("sid") or ""
        self.prev: str | None = state.get("prev")
        self.model: str | None = state.get("model")
        self.info: dict[str, Any] = {}
        self.entries: dict[str, tuple[int, int, str, Mapping[str, Any]]] = {}
        self.length = 0  # of the line being collected
        self.out = Parsed(consumed=0, state={})
        self.uid = ""

    # -- collecting ------------------------------------------------------------------------
    def line(self, offset: int, raw: bytes) -> None:
        obj, _repaired = jsonl.decode(raw)
        self.length = len(raw)
        self.record(offset, obj)

    def record(self, offset: int, obj: Mapping[str, Any]) -> None:
        """One JSONL line: a rewind marker, a ``$set`` patch, a message or the header."""
        if isinstance(obj.get("$rewindTo"), str):
            # keyed by its target and the number of earlier rewinds to it, not by its offset:
            # a rewritten earlier line of another length must not make it a new event
            base = f"rewind:{obj['$rewindTo']}"
            n = sum(1 for k in self.entries if k == base or k.startswith(base + "#"))
            key = base if n == 0 else f"{base}#{n}"
            self.entries[key] = (offset, self.length, "rewind", obj)
        elif isinstance(obj.get("$set"), dict):
            self.meta(offset, obj["$set"])
        elif isinstance(obj.get("id"), str) or ("type" in obj and "content" in obj):
            self.message(offset, obj, f"@{offset}")
        elif isinstance(obj.get("sessionId"), str):
            self.meta(offset, obj)
        else:
            self.unknown(obj.get("type"))

    def unknown(self, rtype: Any) -> None:
        name = rtype if isinstance(rtype, str) else repr(rtype)
        self.out.unknown_types[name] = self.out.unknown_types.get(name, 0) + 1

    def meta(self, offset: int, meta: Mapping[str, Any]) -> None:
        sid = meta.get("sessionId")
        if isinstance(sid, str) and sid and not self.sid:
            self.sid = sid
        self.note_ts(parse_ts(meta.get("startTime")))
        self.note_ts(parse_ts(meta.get("lastUpdated")))
        if isinstance(meta.get("summary"), str) and meta["summary"]:
            self.info["title"] = meta["summary"]
        dirs = meta.get("directories")
        if isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
            self.info["cwd"] = dirs[0]
        if meta.get("kind") == "subagent" or self.parent:
            self.info["agent_type"] = "subagent"
        messages = meta.get("messages")
        if isinstance(messages, list):
            for i, msg in enumerate(messages):
                if isinstance(msg, dict):
                    self.message(offset, msg, f"@{offset}.{i}")

    def message(self, offset: int, msg: Mapping[str, Any], fallback_key: str) -> None:
        mtype = record_type(msg.get("type"))
        if mtype not in MESSAGE_TYPES:
            self.unknown(mtype)
            return
        mid = msg.get("id")
        key = mid if isinstance(mid, str) and mid else fallback_key
        self.entries[key] = (offset, self.length, "msg", msg)

    def note_ts(self, ts: int | None) -> None:
        if ts is not None:
            self.info["first_ts"] = min(ts, self.info.get("first_ts", ts))
            self.info["last_ts"] = max(ts, self.info.get("last_ts", ts))

    # -- emitting --------------------------------------------------------------------------
    def emit(
        self, key: str, kind: str, at: tuple[int | None, int], role: Role, text: str, **kw: Any
    ) -> Event:
        """A conversation event chained to the previous one (the flat turn order); ``at`` is
        ``(ts, offset)``, ``text`` gives the summary and the body unless overridden."""
        fields: dict[str, Any] = {"summary": shorten(text), "body": text[:BODY_LIMIT], **kw}
        ev = Event(self.uid, key, kind, at[0], at[1], parent_key=self.prev, role=role, **fields)
        self.out.events.append(ev)
        self.prev = key
        return ev

    def derived(self, src: Event, suffix: str, kind: str, role: Role, text: str, **kw: Any) -> None:
        """An event derived from ``src`` (edit, test run, error, intervention): it hangs off
        its source and does not move the chain."""
        self.out.events.append(
            Event(
                self.uid,
                f"{src.key}:{suffix}",
                kind,
                src.ts,
                src.offset,
                parent_key=src.key,
                role=role,
                tool=src.tool,
                call_id=src.call_id,
                summary=shorten(text),
                body=text[:BODY_LIMIT],
                **kw,
            )
        )

    def finish(self, consumed: int, lines: int) -> Parsed:
        native = self.sid or self.fallback
        self.uid = f"{NAME}:{native}"
        for key, (offset, length, what, obj) in self.entries.items():
            if what == "rewind":
                text = "rewind to " + get_str(obj, "$rewindTo")
                self.emit(key, "lifecycle", (None, offset), "system", text)
            else:
                guarded(self, offset, length, self.emit_entry, key, offset, obj)
        out = self.out
        if out.events or out.usage or self.info or self.sid:
            parent_uid = f"{NAME}:{self.parent}" if self.parent else None
            info = SessionInfo(
                self.uid, NAME, native, parent_uid=parent_uid, model=self.model, **self.info
            )
            out.sessions.append(info)
        state = {"sid": self.sid, "prev": self.prev, "model": self.model}
        return Parsed(
            consumed, state, out.sessions, out.events, out.usage, out.bad, out.unknown_types, lines
        )

    def emit_entry(self, mid: str, offset: int, msg: Mapping[str, Any]) -> None:
        """``emit_message``, leaving the chain and the model as they were if it fails."""
        prev, model = self.prev, self.model
        try:
            self.emit_message(mid, offset, msg)
        except Exception:
            self.prev, self.model = prev, model
            raise

    def emit_message(self, mid: str, offset: int, msg: Mapping[str, Any]) -> None:
        mtype = str(msg.get("type"))
        at = (parse_ts(msg.get("timestamp")), offset)
        self.note_ts(at[0])
        if mtype in ("gemini", "model"):
            self.assistant(mid, at, msg)
            return
        text = content_text(msg.get("content", msg.get("parts")))
        kind, role = _PLAIN_KINDS[mtype]
        if mtype == "user":
            text = content_text(msg.get("displayContent")) or text
        elif mtype == "info" and text.lstrip().startswith(CANCEL_MARKERS):
            kind, role = "human_intervention", "user"
        if not text.strip() and kind != "error":
            return  # nothing said (e.g. a turn holding only function responses)
        summary = shorten(f"{mtype}: {text}" if kind == "lifecycle" else text)
        self.emit(f"{mid}#0", kind, at, role, text, summary=summary, is_error=kind == "error")

    def assistant(self, mid: str, at: tuple[int | None, int], msg: Mapping[str, Any]) -> None:
        if isinstance(msg.get("model"), str) and msg["model"]:
            self.model = msg["model"]
        tokens = msg.get("tokens")
        out_tokens = self.usage(mid, tokens, at) if isinstance(tokens, dict) else 0
        thoughts = msg.get("thoughts")
        notes = [
            ": ".join(x for x in (get_str(t, "subject"), get_str(t, "description")) if x)
            for t in (thoughts if isinstance(thoughts, list) else [])
            if isinstance(t, dict)
        ]
        if any(notes):
            text = "\n\n".join(x for x in notes if x)
            payload = text.encode("utf-8", "replace")
            self.emit(
                f"{mid}#thoughts", "thinking", at, "assistant", text, body="", payload=payload
            )
        text = content_text(msg.get("content", msg.get("parts")))
        if text.strip():
            self.emit(f"{mid}#0", "assistant_msg", at, "assistant", text, tokens=out_tokens)
        calls = msg.get("toolCalls")
        for i, call in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(call, dict):
                self.tool(f"{mid}#call:{get_str(call, 'id') or i}", call, at)

    def usage(self, mid: str, tokens: Mapping[str, Any], at: tuple[int | None, int]) -> int:
        inp, out, cached = (count(tokens, k, "tokens") for k in ("input", "output", "cached"))
        thoughts, tool = (count(tokens, k, "tokens") for k in ("thoughts", "tool"))
        total = count(tokens, "total", "tokens")
        if not (inp or out or cached or thoughts or tool):
            return 0
        # cached is part of input unless the total shows it was counted on top of it.
        separate = cached > 0 and total == inp + out + thoughts + tool + cached
        fresh = inp if separate else max(inp - cached, 0)
        self.out.usage.append(
            UsageFact(
                dedup_key=f"{NAME}:{self.sid or self.fallback}:{mid}",
                session_uid=self.uid,
                ts=at[0],
                model=self.model or "unknown",
                input_tokens=fresh + tool,
                output_tokens=out + thoughts,
                cache_read_tokens=cached,
                reasoning_tokens=thoughts,
                rank=self.rel,
                replace=True,
                offset=at[1],
            )
        )
        return out + thoughts

    def tool(self, ckey: str, call: Mapping[str, Any], at: tuple[int | None, int]) -> None:
        name = get_str(call, "name") or "tool"
        args = call.get("args")
        command = shell_command(name, args)
        at = (parse_ts(call.get("timestamp")) or at[0], at[1])
        src = self.emit(
            ckey,
            "tool_call",
            at,
            "assistant",
            command or "",
            summary=describe_call(name, args),
            tool=name,
            call_id=get_str(call, "id") or None,
            payload=dump(args) if args is not None else None,
        )
        path = edited_path(name, args)
        if path is not None:
            self.derived(src, "edit", "edit", "assistant", path)
        if command is not None and is_test_command(command):
            self.derived(src, "test", "test_run", "assistant", command)
        status, result = call.get("status"), call.get("result")
        if result is None and status not in TERMINAL_STATUSES:
            return  # still running: the next rewrite brings the result
        text, reported = result_text(result, call.get("resultDisplay"))
        code = _EXIT_CODE.search(text) if command is not None else None
        cancelled = status == "cancelled" or text.lstrip().startswith(CANCEL_MARKERS)
        failed = reported or status == "error" or bool(code and code.group(1) != "0")
        done = self.emit(
            ckey.replace("#call:", "#result:", 1),
            "tool_result",
            at,
            "tool",
            text,
            summary=shorten(text or str(status)),
            body="",
            tool=name,
            call_id=src.call_id,
            is_error=cancelled or failed,
            payload=dump(result) if result else None,
            **result_signals(
                name if command is None else None,
                text,
                failed=failed,
                rejected=cancelled and result is None,
                interrupted=cancelled and result is not None,
            ),
        )
        if cancelled:
            self.derived(done, "human", "human_intervention", "user", text or "cancelled")
        elif failed:
            self.derived(done, "error", "error", "tool", text or "tool error", is_error=True)


def _parse_document(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    data = chunk.data
    obj = jsonl.whole_document(chunk, "session document")
    if isinstance(obj, Parsed):
        return obj
    run = _Recording(chunk, {})
    run.meta(chunk.base, {k: v for k, v in obj.items() if k != "messages"})
    messages = obj.get("messages")
    if not isinstance(messages, list):
        run.unknown("document without messages")
        messages = []
    pos = 0
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            run.unknown(type(msg).__name__)
            continue
        mid = msg.get("id")
        if isinstance(mid, str) and mid:
            found = data.find(b'"' + mid.encode("utf-8", "replace") + b'"', pos)
            pos = found if found >= 0 else pos
        guarded(run, chunk.base + pos, 0, run.message, chunk.base + pos, msg, f"@{i}")
    return run.finish(len(data), 1)


def _parse_lines(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Recording(chunk, state)
    consumed, lines = each_line(chunk, run, run.line)
    return run.finish(consumed, lines)


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse a chat recording (see the module docstring for the rules)."""
    if chunk.ctx.rel.endswith(".jsonl"):
        return _parse_lines(chunk, state)
    return _parse_document(chunk, state)


PARSERS: Final = {NAME: parse}

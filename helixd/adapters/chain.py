"""A conversation read line by line, each event chained to the previous one: the per-call
helper the line-oriented adapters without a turn DAG share (Copilot CLI, Pi, …).

``ChainRun`` holds what one ``parse`` call collects (``out``, the session facts ``info``)
and what travels in ``state`` across reads (the previous event's key, pending tool calls by
call id, adapter extras in ``extra``).  ``line`` decodes one line with the one decoder and
sets ``crc`` (the line's checksum: the content part of event keys), so that a line the
guard drops leaves the chain as it was.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.fields import dump, first_str, get_str
from helixd.adapters.guard import each_line, guarded
from helixd.adapters.toolkinds import (
    describe_call,
    edited_path,
    is_test_command,
    result_signals,
    shell_command,
    shorten,
)
from helixd.core.records import Event, Parsed, Role, SessionInfo

BODY_LIMIT: Final = 64 * 1024
MAX_PENDING_TOOLS: Final = 256


class ChainEvents:
    """Events of one session chained in order (each hangs off the previous one): what
    ``ChainRun`` and Grok's reader share.  The class sets ``uid``, ``prev``, ``info`` and
    ``out``."""

    uid: str
    prev: str | None
    info: dict[str, Any]
    out: Parsed

    def unknown(self, rtype: Any) -> None:
        key = rtype if isinstance(rtype, str) else repr(rtype)
        self.out.unknown_types[key] = self.out.unknown_types.get(key, 0) + 1

    def note_ts(self, ts: int | None) -> None:
        if ts is not None:
            self.info["first_ts"] = min(ts, self.info.get("first_ts", ts))
            self.info["last_ts"] = max(ts, self.info.get("last_ts", ts))

    def emit(
        self, key: str, kind: str, at: tuple[int | None, int], role: Role, text: str, **kw: Any
    ) -> Event:
        """An event chained to the previous one; ``at`` is ``(ts, offset)``.  Thinking goes
        to the payload, other text to the body."""
        fields: dict[str, Any] = {"summary": shorten(text), "body": text[:BODY_LIMIT], **kw}
        if kind == "thinking":
            fields.update(body="", payload=text.encode("utf-8", "replace"))
        ev = Event(self.uid, key, kind, at[0], at[1], parent_key=self.prev, role=role, **fields)
        self.out.events.append(ev)
        self.prev = key
        return ev

    def derived(self, src: Event, suffix: str, kind: str, role: Role, text: str, **kw: Any) -> None:
        """An event derived from ``src``: it hangs off it and does not move the chain."""
        fields: dict[str, Any] = {
            "payload": None,
            "is_error": False,
            "tokens": 0,
            "status": None,
            "tests": None,
            "tool": src.tool,
            **kw,
        }
        ev = src._replace(key=f"{src.key}:{suffix}", kind=kind, parent_key=src.key, role=role)
        ev = ev._replace(summary=shorten(text), body=text[:BODY_LIMIT], **fields)
        self.out.events.append(ev)


class ChainRun(ChainEvents):
    """One ``parse`` call of one session file of agent ``name`` (session ``native``)."""

    def __init__(self, name: str, native: str, state: Mapping[str, Any]) -> None:
        self.name = name
        self.native: str = state.get("native") or native
        self.uid = f"{name}:{self.native}"
        self.prev: str | None = state.get("prev")
        self.pending: dict[str, str] = dict(state.get("pending", {}))
        self.extra: dict[str, Any] = dict(state.get("extra", {}))
        self.crc = ""
        self.info: dict[str, Any] = {}
        self.out = Parsed(consumed=0, state={})

    def rename(self, native: str) -> None:
        """The session's own id, learned from its first record (kept for later reads)."""
        self.native, self.uid = native, f"{self.name}:{native}"

    def tool_call(self, key: str, name: str, cid: str | None, args: Any, at: Any) -> Event:
        """A tool call (its ``edit`` and ``test_run`` derived from the arguments)."""
        if cid:
            self.pending[cid] = name
            while len(self.pending) > MAX_PENDING_TOOLS:
                self.pending.pop(next(iter(self.pending)))
        command = shell_command(name, args)
        src = self.emit(
            key,
            "tool_call",
            at,
            "assistant",
            command or "",
            summary=describe_call(name, args),
            tool=name,
            call_id=cid,
            payload=dump(args) if args is not None else None,
        )
        path = edited_path(name, args)
        if path is not None:
            self.derived(src, "edit", "edit", "assistant", path)
        if command is not None and is_test_command(command):
            self.derived(src, "test", "test_run", "assistant", command)
        return src

    def message_block(self, key: str, role: Any, block: Mapping[str, Any], at: Any) -> bool:
        """A block of an Anthropic-shaped message (Amp, Factory Droid): ``text`` (the role's
        message), ``thinking`` and ``tool_use`` made into events, an ``image`` or
        ``redacted_thinking`` passed over; False for any other type (``tool_result``,
        whose shape is each agent's own, and unknown types), left to the caller."""
        btype = block.get("type")
        if btype == "text":
            text = get_str(block, "text")
            if text.strip():
                if role == "assistant":
                    self.emit(key, "assistant_msg", at, "assistant", text)
                else:
                    self.emit(key, "user_msg", at, "user", text)
        elif btype == "thinking":
            if get_str(block, "thinking").strip():
                self.emit(key, "thinking", at, "assistant", get_str(block, "thinking"))
        elif btype == "tool_use":
            name = first_str(block, "name") or "tool"
            self.tool_call(key, name, first_str(block, "id"), block.get("input"), at)
        else:
            return btype in ("image", "redacted_thinking")
        return True

    def tool_result(
        self,
        key: str,
        cid: str | None,
        text: str,
        at: Any,
        *,
        failed: bool = False,
        rejected: bool = False,
        name: str | None = None,
    ) -> Event:
        """A tool's result joined to its call by ``cid``; a failure adds an ``error`` (a
        rejection by the user a ``human_intervention``)."""
        name = (self.pending.pop(cid, None) if cid else None) or name
        done = self.emit(
            key,
            "tool_result",
            at,
            "tool",
            text,
            body="",
            tool=name,
            call_id=cid,
            is_error=failed or rejected,
            payload=text.encode("utf-8", "replace") if text else None,
            **result_signals(name, text, failed=failed, rejected=rejected),
        )
        if rejected:
            self.derived(done, "human", "human_intervention", "user", text or "tool rejected")
        elif failed:
            self.derived(done, "error", "error", "tool", text or "tool failed", is_error=True)
        return done

    def state(self) -> dict[str, Any]:
        return {
            "native": self.native,
            "prev": self.prev,
            "pending": self.pending,
            "extra": self.extra,
        }

    def finish(self, consumed: int, lines: int, **facts: Any) -> Parsed:
        out = self.out
        if out.events or out.usage or self.info:
            merged = {**facts, **self.info}
            out.sessions.append(SessionInfo(self.uid, self.name, self.native, **merged))
        return Parsed(
            consumed,
            self.state(),
            out.sessions,
            out.events,
            out.usage,
            out.bad,
            out.unknown_types,
            lines,
        )


def parse_lines(
    chunk: Chunk, run: ChainRun, handle: Callable[[int, dict[str, Any]], None], **facts: Any
) -> Parsed:
    """Each complete line of ``chunk`` decoded and handed to ``handle(offset, obj)`` under
    the guard; a line that fails leaves the chain, the pending calls and ``extra`` as they
    were.  ``facts`` are session facts known without reading (a sidecar's cwd, say)."""

    def line(offset: int, raw: bytes) -> None:
        obj, _repaired = jsonl.decode(raw)
        run.crc = f"{zlib.crc32(raw):08x}"
        kept = (run.prev, dict(run.pending), dict(run.extra), run.native, run.uid)
        try:
            handle(offset, obj)
        except Exception:
            run.prev, run.pending, run.extra, run.native, run.uid = kept
            raise

    consumed, lines = each_line(chunk, run, line)
    return run.finish(consumed, lines, **facts)


def parse_items(
    chunk: Chunk,
    run: ChainRun,
    items: Any,
    handle: Callable[[int, int, dict[str, Any]], None],
    what: str,
) -> Parsed:
    """A whole document's list ``items`` (Amp's ``messages``, Continue's ``history``): each
    object handed to ``handle(index, offset, item)`` under the guard, anything else counted
    as unknown; the document is one line and keeps no state (it is read whole each time)."""
    if not isinstance(items, list):
        run.unknown(f"document without {what}")
        items = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            guarded(run, chunk.base, 0, handle, i, chunk.base, item)
        else:
            run.unknown(type(item).__name__)
    parsed = run.finish(len(chunk.data), 1)
    parsed.state.clear()
    return parsed

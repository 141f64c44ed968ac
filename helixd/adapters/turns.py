"""A conversation being turned into events: what the adapters of row sources (SQLite
databases, directory trees) and markdown histories share.

``Turns`` holds one ``parse`` call's output and per-session chain (each event hangs off the
previous one of its session); ``tool_call`` / ``tool_result`` classify tools the way the
line adapters do (``toolkinds``): an edit, a test run, a failure, a rejection.  Pure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.fields import dump
from helixd.adapters.toolkinds import (
    describe_call,
    edited_path,
    is_test_command,
    result_signals,
    shell_command,
    shorten,
)
from helixd.core.records import Event, Parsed, Role
from helixd.core.values import record_type

BODY_LIMIT: Final = 64 * 1024
MAX_CHAINS: Final = 64  # sessions whose last event is remembered across reads
MAX_PENDING_TOOLS: Final = 256


class Turns:
    """One ``parse`` call's records.  ``state`` carries ``prev`` (session uid -> last event
    key) and ``pending`` (open tool call id -> tool name), both bounded."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.prev: dict[str, str] = dict(state.get("prev", {}))
        self.pending: dict[str, str] = dict(state.get("pending", {}))
        self.info: dict[str, Any] = {}
        self.out = Parsed(consumed=0, state={})

    def unknown(self, name: Any) -> None:
        key = name if isinstance(name, str) else repr(name)
        self.out.unknown_types[key] = self.out.unknown_types.get(key, 0) + 1

    def state(self, **more: Any) -> dict[str, Any]:
        while len(self.prev) > MAX_CHAINS:
            self.prev.pop(next(iter(self.prev)))
        while len(self.pending) > MAX_PENDING_TOOLS:
            self.pending.pop(next(iter(self.pending)))
        return {"prev": self.prev, "pending": self.pending, **more}

    def parsed(self, consumed: int, lines: int, **more: Any) -> Parsed:
        """This call's records as the adapter's result: ``consumed`` bytes in ``lines`` lines,
        the state with ``more`` (an adapter's own entries)."""
        out = self.out
        return Parsed(
            consumed=consumed,
            state=self.state(**more),
            sessions=out.sessions,
            events=out.events,
            usage=out.usage,
            bad=out.bad,
            unknown_types=out.unknown_types,
            lines=lines,
        )

    def emit(
        self,
        uid: str,
        key: str,
        kind: str,
        at: tuple[int | None, int],
        role: Role,
        text: str,
        **kw: Any,
    ) -> Event:
        """An event chained to the previous one of its session; ``at`` is ``(ts, offset)``.
        Thinking goes to the payload, other text to the body."""
        fields: dict[str, Any] = {"summary": shorten(text), "body": text[:BODY_LIMIT], **kw}
        if kind == "thinking":
            fields.update(body="", payload=text.encode("utf-8", "replace"))
        ev = Event(uid, key, kind, at[0], at[1], parent_key=self.prev.get(uid), role=role, **fields)
        self.out.events.append(ev)
        self.prev.pop(uid, None)
        self.prev[uid] = key  # (re)inserted last: the bound drops the oldest session
        return ev

    def derived(self, src: Event, suffix: str, kind: str, role: Role, text: str, **kw: Any) -> None:
        """An event derived from ``src``: it hangs off it and does not move the chain."""
        fields: dict[str, Any] = {
            "payload": None,
            "is_error": False,
            "tokens": 0,
            "status": None,
            "tests": None,
            "summary": shorten(text),
            "body": text[:BODY_LIMIT],
            **kw,
        }
        ev = src._replace(key=f"{src.key}:{suffix}", kind=kind, parent_key=src.key, role=role)
        self.out.events.append(ev._replace(**fields))

    def tool_call(
        self,
        uid: str,
        key: str,
        at: tuple[int | None, int],
        name: str,
        cid: str | None,
        args: Any,
        *,
        kind_of: str | None = None,
    ) -> None:
        """``kind_of``: the common tool name the call is classified as (a shell, an edit)
        when the agent has its own name for it (Kiro's ``execute_bash`` is ``bash``)."""
        if cid:
            self.pending[cid] = name
        command = shell_command(kind_of or name, args)
        src = self.emit(
            uid,
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
        path = edited_path(kind_of or name, args)
        if path is not None:
            self.derived(src, "edit", "edit", "assistant", path)
        if command is not None and is_test_command(command):
            self.derived(src, "test", "test_run", "assistant", command)

    def tool_result(
        self,
        uid: str,
        key: str,
        at: tuple[int | None, int],
        cid: str | None,
        text: str,
        failed: bool,
        *,
        name: str | None = None,
        rejected: bool | None = None,
    ) -> None:
        """``rejected``: the user refused the call (None: when a failed result's text says
        "rejected")."""
        tool = (self.pending.pop(cid, None) if cid else None) or name or None
        if rejected is None:
            rejected = failed and "rejected" in text.lower()
        done = self.emit(
            uid,
            key,
            "tool_result",
            at,
            "tool",
            text,
            body="",
            tool=tool,
            call_id=cid,
            is_error=failed,
            payload=text.encode("utf-8", "replace") if text else None,
            **result_signals(tool, text, failed=failed, rejected=rejected),
        )
        if rejected:
            self.derived(done, "human", "human_intervention", "user", text)
        elif failed:
            self.derived(done, "error", "error", "tool", text or "tool failed", is_error=True)


class SessionTables(Turns, ABC):
    """The turns of an agent database with a ``sessions`` and a ``messages`` table (Crush,
    legacy OpenCode, Goose), each row as the SQLite source hands it over: a line
    ``{"table", "row"}``.  Subclasses say what a row of each table makes."""

    def line(self, offset: int, raw: bytes) -> None:
        obj, _ = jsonl.decode(raw)
        table, row = obj.get("table"), obj.get("row")
        if table == "messages" and isinstance(row, dict):
            self.message(offset, row)
        elif table == "sessions" and isinstance(row, dict):
            self.session(offset, row)
        else:
            self.unknown(record_type(table if table is not None else obj.get("type"), "table"))

    @abstractmethod
    def session(self, offset: int, row: Mapping[str, Any]) -> None:
        """A ``sessions`` row: the session's facts and its usage totals."""

    @abstractmethod
    def message(self, offset: int, row: Mapping[str, Any]) -> None:
        """A ``messages`` row: its turns' events."""

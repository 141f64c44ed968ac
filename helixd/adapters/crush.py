"""Crush (``<project>/.crush/crush.db``) and the legacy Go OpenCode it grew from
(``<project>/.opencode/opencode.db``): one SQLite database per project, WAL mode.

Pure: row lines in, records out (``helixd/sources/sqlite.py`` reads the rows; a row line is
``{"table": …, "row": {…}}``).  Rules from ``../shared/notes/formats.md`` §8.1 and the real
databases in the corpus (schema versions 2–8 in ``goose_db_version``):

* **Tables read**: ``messages`` (watermark ``updated_at``: a message row is rewritten while
  it streams), then ``sessions`` (``updated_at``: its totals grow).  ``files`` (file
  snapshots), ``read_files`` and ``logs`` are not read.
* **Identity**: ``<agent>:<sessions.id>``; ``parent_session_id`` links a child (a legacy
  OpenCode subagent session's id is the tool-call id that spawned it); the cwd is the
  project directory holding ``.crush/`` (``.opencode/``).
* **Events**: ``messages.parts`` is a JSON list of ``{type, data}``: ``text`` →
  ``user_msg``/``assistant_msg``, ``reasoning`` → ``thinking``, ``tool_call`` (``input`` is
  a JSON string) → ``tool_call``, ``tool_result`` (``is_error``) → ``tool_result``,
  ``finish`` with reason ``error`` → ``error``, ``cancelled``/``canceled`` →
  ``human_intervention``; ``binary``/``image_url`` parts and other finish reasons add no
  event.  Keys are ``<message id>#<part index>``: a message row updated while it streams
  is read again (its ``updated_at`` moved) and its events take the new content (the
  pipeline stores database rows with ``replace_events``); an abandoned message that never
  got its ``finish`` part is kept as it was left.
* **Usage exists only per session**: ``prompt_tokens``/``completion_tokens`` of the
  ``sessions`` row, one fact per session keyed ``<agent>:<session id>``, ``replace=True``
  (the row's totals replace the earlier ones), credited to the session's last model.
  ``prompt_tokens`` is taken as input as recorded (Crush does not split cached input);
  the recorded USD ``cost`` is kept as the fact's recorded cost.
* **Times** are epoch seconds (Crush), milliseconds or ISO strings (OpenCode) — all go
  through ``timeparse.parse_ts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

import orjson

from helixd.adapters.base import Chunk
from helixd.adapters.fields import cost, count, get_dict, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import SessionTables
from helixd.core.records import Parsed, Role, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

ROLES: Final[dict[str, tuple[str, Role]]] = {
    "user": ("user_msg", "user"),
    "assistant": ("assistant_msg", "assistant"),
}
QUIET_PARTS: Final = frozenset({"binary", "image_url"})
MAX_MODELS: Final = 64


class _Run(SessionTables):
    def __init__(self, name: str, chunk: Chunk, state: Mapping[str, Any]) -> None:
        super().__init__(state)
        self.name = name
        self.cwd = _project_dir(chunk.ctx.path)
        self.models: dict[str, str] = dict(state.get("models", {}))

    def uid(self, native: str) -> str:
        return f"{self.name}:{native}"

    def session(self, offset: int, row: Mapping[str, Any]) -> None:
        native = get_str(row, "id")
        if not native:
            raise ValueError("a session row without id")
        uid = self.uid(native)
        prompt = count(row, "prompt_tokens", "sessions")
        completion = count(row, "completion_tokens", "sessions")
        updated = parse_ts(row.get("updated_at"))
        parent = get_str(row, "parent_session_id")
        self.out.sessions.append(
            SessionInfo(
                uid=uid,
                agent=self.name,
                native_id=native,
                parent_uid=self.uid(parent) if parent else None,
                cwd=self.cwd,
                title=get_str(row, "title") or None,
                first_ts=parse_ts(row.get("created_at")),
                last_ts=updated,
            )
        )
        if prompt or completion:
            self.out.usage.append(
                UsageFact(
                    dedup_key=uid,
                    session_uid=uid,
                    ts=updated,
                    model=self.models.get(native, ""),
                    input_tokens=prompt,
                    output_tokens=completion,
                    replace=True,
                    offset=offset,
                    recorded_cost_usd=cost(row, "cost", "sessions"),
                )
            )

    def message(self, offset: int, row: Mapping[str, Any]) -> None:
        mid, native = get_str(row, "id"), get_str(row, "session_id")
        if not mid or not native:
            raise ValueError("a message row without id or session_id")
        parts = row.get("parts")
        if isinstance(parts, str):
            parts = orjson.loads(parts)
        if not isinstance(parts, list):
            raise ValueError("messages.parts is not a list")
        role = get_str(row, "role")
        types = [p.get("type") if isinstance(p, dict) else None for p in parts]
        uid = self.uid(native)
        ts = parse_ts(row.get("created_at"))
        model = get_str(row, "model")
        if model:
            self.models.pop(native, None)
            self.models[native] = model
            while len(self.models) > MAX_MODELS:
                self.models.pop(next(iter(self.models)))
        self.out.sessions.append(
            SessionInfo(
                uid=uid,
                agent=self.name,
                native_id=native,
                cwd=self.cwd,
                model=model or None,
                first_ts=ts,
                last_ts=parse_ts(row.get("updated_at")) or ts,
            )
        )
        for i, part in enumerate(parts):
            data = get_dict(part, "data") if isinstance(part, dict) else {}
            self.part(uid, f"{mid}#{i}", (ts, offset), role, types[i], data)

    def part(
        self,
        uid: str,
        key: str,
        at: tuple[int | None, int],
        role: str,
        ptype: Any,
        data: Mapping[str, Any],
    ) -> None:
        if ptype == "text":
            kind, erole = ROLES.get(role, ("lifecycle", "system"))
            self.emit(uid, key, kind, at, erole, get_str(data, "text"))
        elif ptype == "reasoning":
            self.emit(uid, key, "thinking", at, "assistant", get_str(data, "thinking"))
        elif ptype == "tool_call":
            raw = data.get("input")
            args: Any = raw
            if isinstance(raw, str):
                try:
                    args = orjson.loads(raw) if raw else {}
                except orjson.JSONDecodeError:
                    args = raw
            name = get_str(data, "name") or "tool"
            self.tool_call(uid, key, at, name, get_str(data, "id") or None, args)
        elif ptype == "tool_result":
            cid = get_str(data, "tool_call_id") or None
            failed = data.get("is_error") is True
            text = get_str(data, "content")
            self.tool_result(uid, key, at, cid, text, failed, name=get_str(data, "name") or None)
        elif ptype == "finish":
            reason = get_str(data, "reason")
            at = (parse_ts(data.get("time")) or at[0], at[1])
            if reason == "error":
                text = " ".join(
                    x for x in (get_str(data, "message"), get_str(data, "details")) if x
                )
                self.emit(uid, key, "error", at, "system", text or "error", is_error=True)
            elif reason in ("canceled", "cancelled"):
                self.emit(uid, key, "human_intervention", at, "user", "cancelled")
        elif ptype not in QUIET_PARTS:
            self.unknown(f"part:{record_type(ptype)}")


def _project_dir(path: str) -> str | None:
    """The project directory: the one holding ``.crush/`` or ``.opencode/``."""
    p = PurePosixPath(path)
    return str(p.parent.parent) if len(p.parts) > 2 else None


def _parser(name: str) -> Any:
    def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
        run = _Run(name, chunk, state)
        return run.parsed(*each_line(chunk, run, run.line), models=run.models)

    return parse


PARSERS: Final = {"crush": _parser("crush"), "opencode_go": _parser("opencode_go")}

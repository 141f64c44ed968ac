"""OpenCode (current, sst/opencode → anomalyco/opencode): ``opencode.db`` (SQLite, WAL) under
``${XDG_DATA_HOME:-~/.local/share}/opencode/``, plus channel databases ``opencode-<name>.db``.

Pure: row lines in, records out (``helixd/sources/sqlite.py`` reads the rows).  Rules from
OpenCode's published source (``packages/opencode/src/session/session.sql.ts`` for the
tables, ``message-v2.ts`` for the JSON in ``data``) and ``../shared/notes/formats.md`` §7:

* **Tables read**, in this order, each with watermark ``time_updated`` (rows are rewritten
  while a reply streams): ``session`` (id, parent_id, directory, title, version,
  time_created/updated), ``message`` (id, session_id, ``data``: the message without its
  ids — ``role``, ``time``, ``modelID``/``providerID``, ``tokens``, ``cost``, ``error``),
  ``part`` (id, message_id, session_id, ``data``: the part without its ids — ``type`` …).
  Other tables (project, todo, permission, session_message) are not read.
* **Identity**: ``opencode:<session id>``; ``parent_id`` links a subagent's session.
* **Events**, one per part, key ``<part id>``: ``text`` → ``user_msg`` or
  ``assistant_msg`` by the role of its message (remembered in the state, bounded; a text
  part whose message is not known is the assistant's), ``reasoning`` → ``thinking``,
  ``tool`` → ``tool_call`` (``callID``, ``state.input``) and, once ``state.status`` is
  ``completed``/``error``, its ``tool_result`` (key ``<part id>:result``); an assistant
  message's ``error`` → ``error`` (``MessageAbortedError`` → ``human_intervention``), key
  ``<message id>:error``.  ``step-start``, ``step-finish``, ``snapshot``, ``patch``,
  ``file``, ``agent``, ``subtask``, ``compaction`` and ``retry`` parts add no event.
* **Usage**: per assistant message, ``tokens {input, output, reasoning, cache {read,
  write}}`` under ``modelID``, key ``opencode:<message id>``, ``replace=True`` (the row
  is rewritten as the reply completes).  ``step-finish`` parts repeat the same tokens per
  step and the session row keeps their totals: neither is counted.  The message's ``cost``
  is the fact's recorded cost (0: none recorded).
* **The older JSON tree** ``storage/{session,message,part}/…`` is read by
  ``opencode_tree.py`` through these rules and with these identities: OpenCode migrates
  the tree into ``opencode.db`` once (``storage/json-migration.ts``) and keeps it, and a
  session in both is one session, each message's tokens one usage row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.opencode import NAME
from helixd.adapters.fields import cost, count, get_dict, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.turns import Turns
from helixd.core.records import Parsed, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

QUIET_PARTS: Final = frozenset(
    {
        "step-start",
        "step-finish",
        "snapshot",
        "patch",
        "file",
        "agent",
        "subtask",
        "compaction",
        "retry",
    }
)
MAX_ROLES: Final = 1024  # messages whose role is remembered across reads


def _data(row: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = row.get("data")
    value = orjson.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise ValueError("a row whose data is not a JSON object")
    return value


class _Run(Turns):
    def __init__(self, state: Mapping[str, Any]) -> None:
        super().__init__(state)
        roles = state.get("roles", {})
        self.roles: dict[str, str] = dict(roles) if isinstance(roles, dict) else {}

    def uid(self, native: str) -> str:
        return f"{NAME}:{native}"

    def line(self, offset: int, raw: bytes) -> None:
        obj, _ = jsonl.decode(raw)
        table, row = obj.get("table"), obj.get("row")
        if not isinstance(row, dict):
            self.unknown(record_type(table if table is not None else obj.get("type"), "table"))
        elif table == "session":
            self.session(row)
        elif table == "message":
            self.message(offset, row)
        elif table == "part":
            self.part(offset, row)
        else:
            self.unknown(record_type(table, "table"))

    def session(self, row: Mapping[str, Any]) -> None:
        native = get_str(row, "id")
        if not native:
            raise ValueError("a session row without id")
        parent = get_str(row, "parent_id")
        self.out.sessions.append(
            SessionInfo(
                uid=self.uid(native),
                agent=NAME,
                native_id=native,
                parent_uid=self.uid(parent) if parent else None,
                cwd=get_str(row, "directory") or None,
                title=get_str(row, "title") or None,
                version=get_str(row, "version") or None,
                first_ts=parse_ts(row.get("time_created")),
                last_ts=parse_ts(row.get("time_updated")),
            )
        )

    def message(self, offset: int, row: Mapping[str, Any]) -> None:
        mid, native = get_str(row, "id"), get_str(row, "session_id")
        if not mid or not native:
            raise ValueError("a message row without id or session_id")
        data = _data(row)
        role = get_str(data, "role")
        self.roles.pop(mid, None)
        self.roles[mid] = role
        while len(self.roles) > MAX_ROLES:
            self.roles.pop(next(iter(self.roles)))
        uid = self.uid(native)
        times = get_dict(data, "time")
        ts = parse_ts(times.get("created")) or parse_ts(row.get("time_created"))
        model = get_str(data, "modelID") or get_str(get_dict(data, "model"), "modelID")
        cwd = get_str(get_dict(data, "path"), "cwd")
        self.out.sessions.append(
            SessionInfo(
                uid=uid,
                agent=NAME,
                native_id=native,
                cwd=cwd or None,
                model=model or None,
                first_ts=ts,
                last_ts=parse_ts(times.get("completed")) or ts,
            )
        )
        if role != "assistant":
            return
        self.usage(uid, mid, data, model, ts, offset)
        error = get_dict(data, "error")
        if error:
            name = get_str(error, "name")
            text = get_str(get_dict(error, "data"), "message") or name or "error"
            at = (parse_ts(times.get("completed")) or ts, offset)
            if name == "MessageAbortedError":
                self.emit(uid, f"{mid}:error", "human_intervention", at, "user", text)
            else:
                self.emit(uid, f"{mid}:error", "error", at, "system", text, is_error=True)

    def usage(
        self, uid: str, mid: str, data: Mapping[str, Any], model: str, ts: int | None, offset: int
    ) -> None:
        tokens = get_dict(data, "tokens")
        cache = get_dict(tokens, "cache")
        inp, out = count(tokens, "input", "tokens"), count(tokens, "output", "tokens")
        reasoning = count(tokens, "reasoning", "tokens")
        reads, writes = count(cache, "read", "tokens.cache"), count(cache, "write", "tokens.cache")
        if inp or out or reasoning or reads or writes:
            self.out.usage.append(
                UsageFact(
                    dedup_key=f"{NAME}:{mid}",
                    session_uid=uid,
                    ts=ts,
                    model=model or "unknown",
                    input_tokens=inp,
                    output_tokens=out,
                    cache_read_tokens=reads,
                    cache_write_5m_tokens=writes,
                    reasoning_tokens=reasoning,
                    recorded_cost_usd=cost(data, "cost", "message"),
                    replace=True,
                    offset=offset,
                )
            )

    def part(self, offset: int, row: Mapping[str, Any]) -> None:
        pid, mid, native = (
            get_str(row, "id"),
            get_str(row, "message_id"),
            get_str(row, "session_id"),
        )
        if not pid or not native:
            raise ValueError("a part row without id or session_id")
        data = _data(row)
        ptype = data.get("type")
        uid = self.uid(native)
        start = get_dict(data, "time").get("start")
        at = (parse_ts(start) or parse_ts(row.get("time_created")), offset)
        if ptype == "text":
            if data.get("ignored") is True:
                return
            if self.roles.get(mid) == "user":
                self.emit(uid, pid, "user_msg", at, "user", get_str(data, "text"))
            else:
                self.emit(uid, pid, "assistant_msg", at, "assistant", get_str(data, "text"))
        elif ptype == "reasoning":
            self.emit(uid, pid, "thinking", at, "assistant", get_str(data, "text"))
        elif ptype == "tool":
            self.tool(uid, pid, at, data)
        elif ptype not in QUIET_PARTS:
            self.unknown(f"part:{record_type(ptype)}")

    def tool(self, uid: str, pid: str, at: tuple[int | None, int], data: Mapping[str, Any]) -> None:
        name = get_str(data, "tool") or "tool"
        cid = get_str(data, "callID") or None
        state = get_dict(data, "state")
        self.tool_call(uid, pid, at, name, cid, state.get("input"))
        status = get_str(state, "status")
        if status in ("completed", "error"):
            done = parse_ts(get_dict(state, "time").get("end")) or at[0]
            failed = status == "error"
            text = get_str(state, "error" if failed else "output")
            self.tool_result(uid, f"{pid}:result", (done, at[1]), cid, text, failed, name=name)


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(state)
    return run.parsed(*each_line(chunk, run, run.line), roles=run.roles)


PARSERS: Final = {NAME: parse}

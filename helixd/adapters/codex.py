"""Codex CLI rollouts (``$CODEX_HOME/{sessions/YYYY/MM/DD,archived_sessions}/rollout-*.jsonl``).

Pure: bytes in, records out.  Rules from ``shared/notes/formats.md`` §4, §9.2 and §11.2; the
ones that shape numbers (``tests/test_codex.py`` pins each):

* **Identity.** ``codex:<id>`` with the id of the file's first ``session_meta`` (else the uuid
  in the file name), so an archived copy and a paginated continuation land on one session.
  Event keys are ``<line timestamp>|<crc32 and length of the line>`` (``#<line number>``
  stands in for the timestamp in the oldest, timestamp-less generation): the same line in
  two copies is one event.  ``parent_key`` is the previous event (Codex has no turn DAG).
* **Messages.** ``response_item`` messages are kept (every generation has them); the
  ``event_msg`` user/agent/reasoning echoes are dropped.  Injected context (``developer``
  role, ``<environment_context>``, AGENTS.md, …) is ``lifecycle``; a user message after the
  agent already worked in the open turn is a ``human_intervention``.
* **Usage**, one fact per ``token_count`` whose cumulative total advanced: the delta is
  ``last_token_usage`` (else the difference of totals); re-emits, ``info: null`` and all-zero
  deltas count nothing.  Cached input and reasoning are subsets: ``input = input - cached``,
  ``output`` as written, ``reasoning`` informational.  Key ``codex:<id>:<cumulative total>``:
  the same in every copy of the file, distinct for every response of the session.
  ``token_usage_record`` lines (0.151+) repeat the same responses; one is counted only for a
  compaction request (its ``response_id`` is a ``compacted`` line's
  ``compaction_response_id``: usage that never reaches ``token_count``), keyed
  ``codex:resp:<response_id>``.
* **Forks and subagents** (``forked_from_id``, ``source.subagent.thread_spawn``) start with a
  replay of the parent's rollout.  Its lines are skipped (their totals only set the baseline)
  until the first line of a turn begun after the child was created: a ``task_started`` or
  ``turn_context`` whose UUIDv7 ``turn_id`` is not older than the child's own id (an id that
  is no UUIDv7 opens the gate: fail open), or, without a turn id, a ``turn_context`` written
  after a pause of ``REPLAY_GAP_MS`` (the replay is one burst).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.codex_items import BODY_LIMIT, ECHO_EVENTS, ItemMapper, texts
from helixd.adapters.declared.codex import NAME
from helixd.adapters.fields import get_dict, get_str
from helixd.adapters.guard import each_line
from helixd.adapters.toolkinds import shorten
from helixd.core.records import Event, Parsed, Role, SessionInfo
from helixd.core.timeparse import parse_ts
from helixd.core.values import in_window, record_type

_make_event: Final = Event._make  # an event from its fields in order (``_FileParse.emit``)
_COMMIT_HASH: Final = re.compile(r"[0-9a-fA-F]{7,64}")
REPLAY_GAP_MS: Final = 1_000
IGNORED_TYPES: Final = frozenset({"", "world_state", "inter_agent_communication_metadata"})
BARE_ITEMS: Final = frozenset(
    {"message", "function_call", "function_call_output", "reasoning", "local_shell_call",
     "custom_tool_call", "custom_tool_call_output", "web_search_call"}
)  # fmt: skip
_ECHO_MARK: Final = b'","type":"event_msg","payload":{"type":"'
_ECHO_BYTES: Final = frozenset(t.encode() for t in ECHO_EVENTS)
_FROM_ISO = datetime.fromisoformat
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def uuid7_ms(value: Any) -> int | None:
    """The creation millisecond of a UUIDv7 (thread and turn ids), None for anything else."""
    if not isinstance(value, str):
        return None
    hexa = value.replace("-", "")
    if len(hexa) != 32 or hexa[12] != "7":
        return None
    try:
        int(hexa, 16)
    except ValueError:
        return None
    return int(hexa[:12], 16)


def _ms(value: Any) -> int | None:
    """``parse_ts`` with a fast path for the ``2026-02-23T12:19:42.561Z`` form Codex writes
    (inside the same window of sane times)."""
    if type(value) is str and len(value) == 24 and value[23] == "Z":
        try:
            ms = round(_FROM_ISO(value).timestamp() * 1000)
        except ValueError:
            return None
        return ms if in_window(ms) else None
    return parse_ts(value)


def _classify(obj: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """``(record type, payload)`` of a line of any generation; ``""`` for state markers.
    A ``type`` that is not a string rejects the line."""
    rtype, payload = record_type(obj.get("type")), obj.get("payload")
    if isinstance(payload, dict):
        return rtype or "session_meta", payload  # the middle generation's meta has no type
    if rtype is None and "id" in obj and "timestamp" in obj:
        return "session_meta", obj  # oldest generation: a bare header
    if rtype in BARE_ITEMS:
        return "response_item", obj  # oldest generation: bare items
    if rtype == "compacted":
        return rtype, obj
    if rtype is None and ("record_type" in obj or "payload" in obj):
        return "", {}
    return str(rtype), {}


class _FileParse(ItemMapper):
    """Mutable helper for one ``parse`` call; ``parse`` below drives it."""

    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        self.chunk = chunk
        self.st: dict[str, Any] = dict(state)
        self.pending: dict[str, str] = dict(state.get("pending", {}))
        for key in ("gate", "tur", "cids", "tot"):
            if isinstance(self.st.get(key), list | dict):
                self.st[key] = type(self.st[key])(self.st[key])
        if "first_ts" in self.st:  # a store written before timestamps were checked
            self.st["first_ts"] = parse_ts(self.st["first_ts"])
        self.out = Parsed(consumed=0, state={})
        self.info: dict[str, Any] = {}
        self.uid = f"{NAME}:{self.st['sid']}" if "sid" in self.st else ""
        self.raw = b""
        self.ts_raw: Any = None
        self.ts: int | None = None
        self.offset = 0
        self.base_key = ""
        self.lo: int | None = None
        self.hi: int | None = None
        self.n: int = self.st.get("n", 0)
        self.last: str | None = self.st.get("last")
        self.gate: list[Any] | None = self.st.get("gate")
        self.context = b""

    # -- plumbing --------------------------------------------------------------------------
    def emit(
        self,
        kind: str,
        suffix: str = "",
        role: Role | None = None,
        tool: str | None = None,
        call_id: str | None = None,
        summary: str = "",
        body: str = "",
        payload: bytes | None = None,
        is_error: bool = False,
        lines_added: int = 0,
        lines_removed: int = 0,
        status: str | None = None,
        tests: tuple[str, int, int, int] | None = None,
        tokens: int = 0,
    ) -> str:
        if not self.base_key:
            digest = f"{zlib.crc32(self.raw):08x}{len(self.raw):x}"
            stamp = self.ts_raw if isinstance(self.ts_raw, str) and self.ts_raw else None
            self.base_key = f"{stamp or '#' + str(self.n)}|{digest}"
        key = self.base_key + suffix
        # The event from its fields in order (``Event._make``): keywords through
        # ``Event(...)`` cost ~1 µs an event more (issue 12).
        self.out.events.append(
            _make_event(
                (
                    self.uid,
                    key,
                    kind,
                    self.ts,
                    self.offset,
                    self.last,  # parent_key
                    role,
                    tool,
                    call_id,
                    summary,
                    body,
                    payload,
                    tokens,
                    is_error,
                    False,  # is_sidechain
                    None,  # anchor: the key
                    0,  # payload_size: len(payload)
                    # Reasoning text is indexed for search only (the row keeps its size).
                    payload[:65536].decode("utf-8", "replace")
                    if kind == "thinking" and payload
                    else "",
                    lines_added,
                    lines_removed,
                    status,
                    tests,
                )
            )
        )
        self.last = key
        return key

    def identify(self, rtype: str, payload: Mapping[str, Any]) -> None:
        sid = ""
        if rtype == "session_meta":
            thread = get_dict(payload, "thread")
            for v in (payload.get("id"), payload.get("session_id"), thread.get("sessionId")):
                if isinstance(v, str) and 0 < len(v) <= 200:
                    sid = v
                    break
        if not sid:
            name = PurePosixPath(self.chunk.ctx.rel).name
            found = _UUID.search(name)
            sid = found.group(0) if found else name.removesuffix(".jsonl")
        self.st["sid"] = sid
        self.uid = f"{NAME}:{sid}"

    def note_ts(self, ts: int | None) -> None:
        if ts is not None:
            if self.lo is None or ts < self.lo:
                self.lo = ts
            if self.hi is None or ts > self.hi:
                self.hi = ts

    def first_ts(self) -> int | None:
        known = [t for t in (self.st.get("first_ts"), self.lo) if t is not None]
        return min(known) if known else None

    # -- one line --------------------------------------------------------------------------
    def line(self, offset: int, raw: bytes) -> None:
        """One line (run under ``guard.guarded``: a line that raises is a bad line)."""
        self.n += 1
        if self.uid and not self.gate and raw.startswith(b'{"timestamp":"') and self.skim(raw):
            return
        try:
            obj = orjson.loads(raw)
            if type(obj) is not dict:
                raise orjson.JSONDecodeError("not an object", "", 0)
        except orjson.JSONDecodeError:
            obj, _repaired = jsonl.decode(raw)  # repairs invalid UTF-8, refuses the rest
        rtype, payload = obj.get("type"), obj.get("payload")
        if type(rtype) is not str or type(payload) is not dict:
            rtype, payload = _classify(obj)
        handler = HANDLERS.get(rtype)
        if handler is None:
            if rtype not in IGNORED_TYPES:
                self.unknown(rtype)
            return
        self.raw, self.offset, self.base_key = raw, offset, ""
        self.ts_raw = obj.get("timestamp")
        self.ts = ts = _ms(self.ts_raw)
        if not self.uid:
            self.identify(rtype, payload)
        gate = self.gate
        if gate and self.replayed(rtype, payload, gate):
            gate[2] += 1
            if rtype == "event_msg" and payload.get("type") == "token_count":
                self.token_count(payload, replay=True)
            return
        if ts is not None:
            if self.lo is None or ts < self.lo:
                self.lo = ts
            if self.hi is None or ts > self.hi:
                self.hi = ts
        handler(self, payload)

    def skim(self, raw: bytes) -> bool:
        """Prefilter for lines that carry nothing new, dated but never decoded: an
        ``event_msg`` echoing a response_item, a ``turn_context`` equal to the previous one."""
        at = raw.find(b'","type":"', 14, 64)
        kind = raw[at + 10 : at + 19]
        if kind == b"event_msg":
            start = at + len(_ECHO_MARK)
            if raw[at:start] != _ECHO_MARK:
                return False
            if raw[start : raw.find(b'"', start, start + 48)] not in _ECHO_BYTES:
                return False
        elif kind != b"turn_cont":
            return False
        elif raw[at:] != self.context:
            self.context = raw[at:]
            return False
        if not raw.endswith(b"}"):
            return False
        self.note_ts(_ms(raw[14:at].decode("utf-8", "replace")))
        return True

    def replayed(self, rtype: str, payload: Mapping[str, Any], gate: list[Any]) -> bool:
        """Whether a line of an armed fork/subagent file is the parent's replayed history."""
        created, prev_ts, ts = gate[0], gate[1], self.ts
        gate[1] = ts if ts is not None else prev_ts
        is_turn = rtype == "turn_context" or (
            rtype == "event_msg" and payload.get("type") == "task_started"
        )
        if not is_turn:
            return True
        turn_id = payload.get("turn_id")
        if isinstance(turn_id, str) and turn_id:
            minted = uuid7_ms(turn_id)
            if minted is not None and minted < created:
                return True
        elif rtype != "turn_context" or ts is None or ts < created:
            return True  # replayed turns of parents that predate turn ids
        elif prev_ts is not None and ts - prev_ts < REPLAY_GAP_MS:
            return True  # still inside the replay burst
        self.gate = None
        if gate[2]:
            self.emit(
                "lifecycle",
                ":replay",
                role="system",
                summary=f"fork: skipped {gate[2]} replayed lines of the parent",
            )
        return False

    # -- record types ----------------------------------------------------------------------
    def session_meta(self, p: Mapping[str, Any]) -> None:
        if self.st.get("meta"):
            return  # a replayed parent's meta, or a second meta: the first one is the file's
        self.st["meta"] = True
        source = p.get("source")
        sub = source.get("subagent") if isinstance(source, dict) else None
        spawn = get_dict(sub, "thread_spawn") if isinstance(sub, dict) else {}
        forked = get_str(p, "forked_from_id")
        parent = forked or get_str(spawn, "parent_thread_id") or get_str(p, "parent_thread_id")
        if parent:
            self.st["parent"] = parent
        if sub is not None:
            self.st["sub"] = True
            role = get_str(spawn, "agent_role") or get_str(spawn, "agent_nickname")
            kind = sub if isinstance(sub, str) else next(iter(sub), "") if sub else ""
            self.st["agent_type"] = role or str(kind) or "subagent"
        started = parse_ts(p.get("timestamp"))
        self.note_ts(started)
        if forked or spawn:
            self.st["derived"] = True
            created = uuid7_ms(self.st["sid"]) or started or self.ts
            if created:
                self.gate = [created, self.ts, 0]
        elif parent or sub is not None:
            self.st["derived"] = True
        for src, dst in (("cli_version", "version"), ("cwd", "cwd"), ("model", "model")):
            if isinstance(p.get(src), str) and p[src]:
                self.info[dst] = p[src]
        git = get_dict(p, "git")
        branch = git.get("branch")
        if isinstance(branch, str) and branch:
            self.info["git_branch"] = branch
        commit = git.get("commit_hash")
        if isinstance(commit, str) and _COMMIT_HASH.fullmatch(commit):
            self.info["git_commit"] = commit.lower()
        if "model" in self.info:
            self.st["model"] = self.info["model"]
        what = " ".join(str(p.get(k)) for k in ("originator", "cli_version") if p.get(k))
        self.emit("lifecycle", role="system", summary=shorten(f"session start {what}".strip()))

    def turn_context(self, p: Mapping[str, Any]) -> None:
        model, cwd = p.get("model"), p.get("cwd")
        if isinstance(model, str) and model:
            self.st["model"] = self.info["model"] = model
        if isinstance(cwd, str) and cwd:
            self.info["cwd"] = cwd

    def session_end(self, p: Mapping[str, Any]) -> None:
        self.info["ended"] = True
        self.emit("lifecycle", role="system", summary="session end")

    def compacted(self, p: Mapping[str, Any]) -> None:
        text = texts(p.get("message"))
        self.emit("lifecycle", role="system", summary="compaction summary", body=text[:BODY_LIMIT])
        rid = p.get("compaction_response_id")
        if isinstance(rid, str) and rid:
            self.compaction(rid)

    def finish(self, consumed: int, lines: int) -> Parsed:
        if self.lo is not None:
            self.info["first_ts"], self.info["last_ts"] = self.lo, self.hi
            self.st["first_ts"] = self.first_ts()
        if self.uid and (self.out.events or self.out.usage or self.info):
            parent = self.st.get("parent")
            self.out.sessions.insert(
                0,
                SessionInfo(
                    uid=self.uid,
                    agent=NAME,
                    native_id=self.st["sid"],
                    parent_uid=f"{NAME}:{parent}" if parent else None,
                    agent_type=self.st.get("agent_type"),
                    **self.info,
                ),
            )
        self.st.update(n=self.n, last=self.last, gate=self.gate)
        state = {k: v for k, v in self.st.items() if v is not None}
        state["pending"] = self.pending
        return Parsed(
            consumed=consumed,
            state=state,
            sessions=self.out.sessions,
            events=self.out.events,
            usage=self.out.usage,
            bad=self.out.bad,
            unknown_types=self.out.unknown_types,
            lines=lines,
        )


HANDLERS: Final[dict[str, Callable[[_FileParse, Mapping[str, Any]], None]]] = {
    "session_meta": _FileParse.session_meta,
    "turn_context": _FileParse.turn_context,
    "response_item": _FileParse.response_item,
    "event_msg": _FileParse.event_msg,
    "compacted": _FileParse.compacted,
    "token_usage_record": _FileParse.token_usage_record,
    "session_end": _FileParse.session_end,
}


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse the complete lines of ``chunk`` (see the module docstring for the rules)."""
    run = _FileParse(chunk, state)
    consumed, lines = each_line(chunk, run, run.line)
    return run.finish(consumed, lines)


PARSERS: Final = {NAME: parse}

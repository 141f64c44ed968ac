"""OpenHands event streams (``~/.openhands/``): V0 events and trajectories, V1 events.

Pure: bytes in, records out.  From real OpenHands files in the corpus: three V0 trajectories
from OpenHands' own runtime tests and a slice of a V1 (software-agent-sdk) run.

* **Files** (every one a JSON document written once, read whole): V0
  ``sessions/<sid>/events/<n>.json`` (one event per file), V1
  ``conversations/<id>/events/<name>.json`` (one event per file), and V0 trajectories
  (``save_trajectory_path`` exports: a JSON array of the same events) under
  ``trajectories/<name>.json``.  ``openhands:<sid>`` / ``openhands:<id>`` /
  ``openhands:<trajectory file stem>``.  ``settings.json``, ``secrets.json`` and the
  other files of ``~/.openhands`` are never opened.
* **V0 events** ``{id, timestamp, source, message, action | observation, args | extras,
  cause, tool_call_metadata}``: a ``message`` action is ``user_msg`` or ``assistant_msg``
  by ``source``; ``run``/``run_ipython``/``edit``/``read``/``browse``… actions are
  ``tool_call`` (``edit`` with its ``path`` an ``edit``, a test command a ``test_run``) and
  the observations that answer them (``cause``, ``tool_call_id``) ``tool_result`` (a non-zero
  exit code an ``error``); ``think`` → ``thinking``; ``finish`` → ``completion``; ``error``
  observations → ``error``; agent-state changes → ``lifecycle``; ``null`` observations add
  nothing.  Keys are the event ids.
* **V1 events** (``kind``): ``MessageEvent`` → user/assistant message; ``ActionEvent`` →
  its ``thought`` text, ``reasoning_content`` (``thinking``) and the ``tool_call``;
  ``ObservationEvent`` → ``tool_result`` (``is_error``); ``AgentErrorEvent`` → ``error``;
  ``UserRejectObservation`` → ``human_intervention``; ``ConversationStateUpdateEvent`` →
  ``lifecycle`` for ``execution_status`` (``finished``: ``completion``), usage for
  ``stats``; ``SystemPromptEvent`` and ``PauseEvent`` add ``lifecycle``.
* **Usage** V0: each LLM response once (``tool_call_metadata.model_response``: parallel tool
  calls share it), key ``openhands:<response id>``; ``prompt_tokens`` includes the cache
  reads and writes (litellm), so non-cached input is the difference.  V1: the running
  totals ``stats.usage_to_metrics.<name>.accumulated_token_usage``, one fact per name and
  model, merged by maximum (totals only grow, whatever order the event files are read in).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun
from helixd.adapters.declared.openhands import NAME
from helixd.adapters.fields import count, first_str, get_dict, get_str
from helixd.adapters.guard import guarded
from helixd.adapters.toolkinds import is_test_command
from helixd.core.records import BadLine, Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

V0_TOOLS: Final = {
    "run": "execute_bash",
    "run_ipython": "execute_ipython_cell",
    "edit": "str_replace_editor",
    "read": "str_replace_editor",
    "write": "str_replace_editor",
    "browse": "browser",
    "browse_interactive": "browser",
    "call_tool_mcp": "mcp",
}
V0_LIFECYCLE: Final = frozenset(
    {"change_agent_state", "agent_state_changed", "recall", "condensation"}
)
_V1_COUNTS: Final = (
    "prompt_tokens",
    "completion_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
V1_LIFECYCLE: Final = frozenset({"SystemPromptEvent", "PauseEvent", "Condensation"})


def session_id(rel: str) -> str:
    parts = rel.split("/")
    if parts[-2] == "events":
        return parts[-3]
    return parts[-1][: -len(".json")]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(get_str(c, "text") for c in content if isinstance(c, dict))
    return ""


class _Run(ChainRun):
    def event(self, offset: int, ev: Mapping[str, Any]) -> None:
        at = (parse_ts(ev.get("timestamp")), offset)
        self.note_ts(at[0])
        if "kind" in ev:
            self.v1(at, ev)
        else:
            self.v0(at, ev)

    def said(self, key: str, user: bool, text: str, at: Any) -> None:
        if user:
            self.emit(key, "user_msg", at, "user", text)
        else:
            self.emit(key, "assistant_msg", at, "assistant", text)

    # -- V0 ------------------------------------------------------------------------------
    def v0(self, at: Any, ev: Mapping[str, Any]) -> None:
        key = f"e{ev.get('id')}"
        meta = get_dict(ev, "tool_call_metadata")
        self.v0_usage(get_dict(meta, "model_response"), at)
        cid = first_str(meta, "tool_call_id")
        action, observation = ev.get("action"), ev.get("observation")
        message = get_str(ev, "message")
        if action is not None:
            action = record_type(action, "action")
            args = get_dict(ev, "args")
            if action == "message":
                text = get_str(args, "content") or message
                self.said(key, ev.get("source") == "user", text, at)
            elif action == "finish":
                text = get_str(args, "final_thought") or message or "finish"
                self.emit(key, "completion", at, "assistant", text)
            elif action == "think":
                self.emit(key, "thinking", at, "assistant", get_str(args, "thought"))
            elif action in V0_TOOLS:
                self.v0_tool(key, action, cid, args, at)
            elif action in V0_LIFECYCLE:
                self.emit(key, "lifecycle", at, "system", message or action)
            else:
                self.unknown(f"action/{action}")
        elif observation is not None:
            self.v0_observation(key, record_type(observation, "observation") or "", cid, ev, at)
        else:
            self.unknown(ev.get("type"))

    def v0_tool(
        self, key: str, action: str, cid: str | None, args: Mapping[str, Any], at: Any
    ) -> None:
        thought = get_str(args, "thought")
        if thought.strip():
            self.emit(f"{key}:thought", "assistant_msg", at, "assistant", thought)
        name = V0_TOOLS[action]
        call = self.tool_call(key, name, cid or key, dict(args), at)
        if action in ("edit", "write") and get_str(args, "path"):
            self.derived(call, "edit", "edit", "assistant", get_str(args, "path"))
        command = get_str(args, "command")
        if action == "run" and command and is_test_command(command):
            self.derived(call, "test", "test_run", "assistant", command)

    def v0_observation(
        self, key: str, observation: str, cid: str | None, ev: Mapping[str, Any], at: Any
    ) -> None:
        extras = get_dict(ev, "extras")
        content = get_str(ev, "content")
        if observation == "null":
            return
        if observation in V0_LIFECYCLE:
            state = get_str(extras, "agent_state")
            self.emit(key, "lifecycle", at, "system", f"agent state {state}".strip())
        elif observation == "error":
            self.emit(key, "error", at, "system", content or get_str(ev, "message"), is_error=True)
        elif observation in V0_TOOLS or observation in ("run", "read", "edit", "browse"):
            cause = ev.get("cause")
            call_id = cid or (f"e{cause}" if isinstance(cause, int) else None)
            code = get_dict(extras, "metadata").get("exit_code", extras.get("exit_code"))
            failed = isinstance(code, int) and code > 0
            self.tool_result(key, call_id, content, at, failed=failed)
        elif observation == "user_rejected":
            self.emit(key, "human_intervention", at, "user", content or "rejected")
        else:
            self.unknown(f"observation/{observation}")

    def v0_usage(self, response: Mapping[str, Any], at: Any) -> None:
        usage = get_dict(response, "usage")
        rid = first_str(response, "id")
        if not usage or not rid:
            return
        prompt = count(usage, "prompt_tokens", "usage")
        out = count(usage, "completion_tokens", "usage")
        read = count(usage, "cache_read_input_tokens", "usage")
        read = read or count(get_dict(usage, "prompt_tokens_details"), "cached_tokens", "usage")
        write = count(usage, "cache_creation_input_tokens", "usage")
        model = first_str(response, "model") or NAME
        self.info["model"] = model
        self.out.usage.append(
            UsageFact(
                f"{NAME}:{rid}",
                self.uid,
                at[0],
                model,
                input_tokens=max(prompt - read - write, 0),
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_5m_tokens=write,
                rank=self.native,
                offset=at[1],
            )
        )

    # -- V1 ------------------------------------------------------------------------------
    def v1(self, at: Any, ev: Mapping[str, Any]) -> None:
        kind = record_type(ev.get("kind"), "kind")
        key = first_str(ev, "id") or f"k{self.crc}"
        if kind == "MessageEvent":
            msg = get_dict(ev, "llm_message")
            user = get_str(msg, "role") == "user" or ev.get("source") == "user"
            self.said(key, user, _text(msg.get("content")), at)
        elif kind == "ActionEvent":
            self.v1_action(key, ev, at)
        elif kind == "ObservationEvent":
            obs = get_dict(ev, "observation")
            failed = obs.get("is_error") is True
            name = first_str(ev, "tool_name")
            text = _text(obs.get("content"))
            self.tool_result(key, first_str(ev, "tool_call_id"), text, at, failed=failed, name=name)
        elif kind == "UserRejectObservation":
            text = get_str(ev, "rejection_reason") or "rejected"
            self.emit(key, "human_intervention", at, "user", text)
        elif kind == "AgentErrorEvent":
            self.emit(key, "error", at, "system", get_str(ev, "error") or "error", is_error=True)
        elif kind == "ConversationStateUpdateEvent":
            self.v1_state(key, ev, at)
        elif kind in V1_LIFECYCLE:
            self.emit(key, "lifecycle", at, "system", kind)
        else:
            self.unknown(kind)

    def v1_action(self, key: str, ev: Mapping[str, Any], at: Any) -> None:
        reasoning = get_str(ev, "reasoning_content")
        if reasoning.strip():
            self.emit(f"{key}:thinking", "thinking", at, "assistant", reasoning)
        thought = _text(ev.get("thought"))
        if "</think>" in thought:
            thought = thought.rsplit("</think>", 1)[1]
        if thought.strip():
            self.emit(f"{key}:thought", "assistant_msg", at, "assistant", thought.strip())
        action = get_dict(ev, "action")
        name = first_str(ev, "tool_name") or "tool"
        args = {k: v for k, v in action.items() if k != "kind"}
        call = self.tool_call(key, name, first_str(ev, "tool_call_id"), args, at)
        command = get_str(action, "command")
        if command and is_test_command(command) and name in ("terminal", "execute_bash"):
            self.derived(call, "test", "test_run", "assistant", command)
        path = get_str(action, "path")
        if path and get_str(action, "command") in ("create", "str_replace", "insert"):
            self.derived(call, "edit", "edit", "assistant", path)

    def v1_state(self, key: str, ev: Mapping[str, Any], at: Any) -> None:
        field, value = ev.get("key"), ev.get("value")
        if field == "execution_status" and isinstance(value, str):
            kind = "completion" if value == "finished" else "lifecycle"
            self.emit(key, kind, at, "system", f"execution {value}")
        elif field == "stats" and isinstance(value, dict):
            metrics = get_dict(value, "usage_to_metrics")
            for name, m in metrics.items():
                usage = get_dict(m, "accumulated_token_usage")
                prompt, out, read, write = (
                    count(usage, k, "usage")
                    for k in (
                        "prompt_tokens",
                        "completion_tokens",
                        "cache_read_tokens",
                        "cache_write_tokens",
                    )
                )
                if not (prompt or out):
                    continue
                model = first_str(usage, "model") or first_str(m, "model_name") or NAME
                self.info["model"] = model
                self.out.usage.append(
                    UsageFact(
                        f"{NAME}:{self.native}:stats:{name}:{model}",
                        self.uid,
                        at[0],
                        model,
                        input_tokens=max(prompt - read - write, 0),
                        output_tokens=out,
                        cache_read_tokens=read,
                        cache_write_5m_tokens=write,
                        reasoning_tokens=count(usage, "reasoning_tokens", "usage"),
                        rank=self.native,
                        offset=at[1],
                    )
                )
        elif field is not None and not isinstance(field, str):
            self.unknown(repr(field))


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one event file or one trajectory (see the module docstring)."""
    data = chunk.data
    stripped = data.strip()
    if not stripped or not chunk.at_eof:
        return Parsed(consumed=0, state={})
    run = _Run(NAME, session_id(chunk.ctx.rel), {})
    run.crc = f"{zlib.crc32(stripped):08x}"
    if stripped.startswith(b"["):
        try:
            items = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            if not stripped.endswith(b"]"):
                return Parsed(consumed=0, state={})  # mid-write
            bad = BadLine(chunk.base, len(data), f"unreadable trajectory: {exc}")
            return Parsed(consumed=len(data), state={}, bad=[bad], lines=1)
        for item in items:
            if isinstance(item, dict):
                guarded(run, chunk.base, 0, run.event, chunk.base, item)
            else:
                run.unknown(type(item).__name__)
    else:
        obj = jsonl.whole_document(chunk, "event file")
        if isinstance(obj, Parsed):
            return obj
        guarded(run, chunk.base, 0, run.event, chunk.base, obj)
    parsed = run.finish(len(data), 1)
    parsed.state.clear()
    return parsed


PARSERS: Final = {NAME: parse}

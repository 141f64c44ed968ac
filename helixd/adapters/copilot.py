"""GitHub Copilot CLI sessions (``${COPILOT_HOME:-~/.copilot}/session-state/``).

Pure: bytes in, records out.  From the real ``events.jsonl`` in the corpus (copilotVersion
1.0.10) and agent-sessions' scrubbed 1.0.77 fixture; usage shapes confirmed by ccusage's and
agentsview's parsers.

* **Files**: ``<session id>/events.jsonl`` (current) and the older flat ``<session id>.jsonl``;
  ``copilot:<session id>`` from the directory (file) name.  ``workspace.yaml`` beside
  ``events.jsonl`` is its sidecar (cwd, summary as title, branch); ``checkpoints/``,
  ``command-history-state.json`` and config files are never opened.
* **Records** ``{type, data, id, timestamp, parentId}``: ``user.message`` → ``user_msg``;
  ``assistant.message`` → ``thinking`` (``reasoningText``), ``assistant_msg`` (non-blank
  ``content``), one ``tool_call`` per ``toolRequests`` entry; ``assistant.reasoning`` →
  ``thinking``; ``tool.execution_complete`` → ``tool_result`` joined on ``toolCallId``
  (``success: false`` adds an ``error``); ``session.error`` → ``error``; ``abort`` →
  ``human_intervention``; ``session.task_complete`` → ``completion``; ``session.shutdown`` →
  ``completion`` and the session ends; other ``session.*``, ``subagent.*`` and
  ``system.*`` records → ``lifecycle``.  ``hook.*``, ``assistant.turn_*`` and
  ``tool.execution_start`` (the call is already known from ``toolRequests``) add no event.
  Event keys are ``<record id>:<crc32 of the line>``.
* **Usage**: every ``assistant.message`` carries its ``outputTokens`` (no input counts): one
  fact per message, key ``copilot:<sid>:<messageId>``, model from the record, else the last
  ``session.model_change``/``selectedModel``.  ``session.shutdown`` has the full counts per
  model (``modelMetrics.<model>.usage``: ``inputTokens`` including ``cacheReadTokens`` and
  ``cacheWriteTokens``; ``outputTokens``; ``reasoningTokens`` ⊂ output): one fact per model,
  key ``copilot:<sid>:shutdown:<model>``, ``replace=True`` (a resumed session's later
  shutdown states the running total), whose output is the shutdown's minus what the
  messages of that model already counted, so nothing counts twice.  A shutdown without
  per-model usage gives its ``tokenDetails`` (non-cached ``input``, ``output``,
  ``cache_read``, ``cache_write``) for the current model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_lines
from helixd.adapters.declared.copilot import NAME
from helixd.adapters.fields import count, first_str, get_dict, get_str, result_text
from helixd.core.records import Event, Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

QUIET: Final = frozenset(
    {"hook.start", "hook.end", "assistant.turn_start", "assistant.turn_end", "tool.execution_start"}
)
LIFECYCLE_PREFIXES: Final = ("session.", "subagent.", "system.")
_SHUTDOWN_KEYS: Final = (
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
)
_DETAILS: Final = ("input", "output", "cache_read", "cache_write")


def session_id(rel: str) -> str:
    parts = rel.split("/")
    return parts[-2] if parts[-1] == "events.jsonl" and len(parts) >= 2 else parts[-1][:-6]


def workspace_facts(data: bytes | None) -> dict[str, Any]:
    """cwd, title and branch from ``workspace.yaml`` (flat ``key: value`` lines; anything
    else in it is ignored)."""
    if not data:
        return {}
    values: dict[str, str] = {}
    for raw in data.decode("utf-8", "replace").splitlines():
        key, sep, value = raw.partition(":")
        if sep and key and not key[0].isspace() and value.strip():
            values[key.strip()] = value.strip().strip("'\"")
    facts = {"cwd": values.get("cwd"), "title": values.get("summary")}
    facts["git_branch"] = values.get("branch")
    return {k: v for k, v in facts.items() if v}


class _Run(ChainRun):
    def record(self, offset: int, obj: Mapping[str, Any]) -> None:
        rtype = record_type(obj.get("type"))
        data = get_dict(obj, "data")
        at = (parse_ts(obj.get("timestamp")), offset)
        self.note_ts(at[0])
        key = f"{get_str(obj, 'id') or 'r'}:{self.crc}"
        side = bool(first_str(data, "parentToolCallId"))
        if rtype == "user.message":
            self.emit(key, "user_msg", at, "user", get_str(data, "content"))
        elif rtype == "assistant.message":
            self.assistant(key, data, at, side)
        elif rtype == "assistant.reasoning":
            self.emit(key, "thinking", at, "assistant", get_str(data, "content"))
        elif rtype == "tool.execution_complete":
            self.result(key, data, at, side)
        elif rtype == "session.error":
            text = first_str(data, "message", "errorType") or "error"
            self.emit(key, "error", at, "system", text, is_error=True)
        elif rtype == "abort":
            self.emit(key, "human_intervention", at, "user", get_str(data, "reason") or "abort")
        elif rtype == "session.task_complete":
            self.emit(key, "completion", at, "system", get_str(data, "summary") or "task complete")
        elif rtype == "session.shutdown":
            self.shutdown(key, data, at)
        elif rtype in QUIET:
            return
        elif isinstance(rtype, str) and rtype.startswith(LIFECYCLE_PREFIXES):
            self.lifecycle(key, rtype, data, at)
        else:
            self.unknown(rtype)

    def lifecycle(self, key: str, rtype: str, data: Mapping[str, Any], at: Any) -> None:
        if rtype in ("session.start", "session.resume"):
            ctx = get_dict(data, "context")
            for field, value in (("cwd", ctx.get("cwd")), ("git_branch", ctx.get("branch"))):
                if isinstance(value, str) and value.strip():
                    self.info[field] = value.strip()
            if first_str(data, "copilotVersion"):
                self.info["version"] = first_str(data, "copilotVersion")
            self.set_model(first_str(data, "selectedModel"))
        elif rtype == "session.model_change":
            self.set_model(first_str(data, "newModel"))
        label = first_str(data, "message", "newModel", "newMode", "agentName", "infoType") or ""
        self.emit(key, "lifecycle", at, "system", f"{rtype} {label}".strip(), body="")

    def set_model(self, model: str | None) -> None:
        if model and model != "auto":
            self.extra["model"] = self.info["model"] = model

    def assistant(self, key: str, data: Mapping[str, Any], at: Any, side: bool) -> None:
        model = first_str(data, "model") or self.extra.get("model") or NAME
        mid = first_str(data, "messageId")
        out = count(data, "outputTokens", "assistant.message")
        thought = get_str(data, "reasoningText")
        if thought.strip():
            self.emit(f"{key}:thinking", "thinking", at, "assistant", thought, is_sidechain=side)
        text = get_str(data, "content")
        if text.strip():
            self.emit(key, "assistant_msg", at, "assistant", text, is_sidechain=side)
        requests = data.get("toolRequests")
        for i, call in enumerate(requests if isinstance(requests, list) else []):
            if not isinstance(call, dict):
                continue
            cid = first_str(call, "toolCallId")
            name = first_str(call, "name") or "tool"
            args = call.get("arguments")
            if isinstance(args, str):
                try:
                    args = orjson.loads(args)
                except orjson.JSONDecodeError:
                    pass
            ckey = f"{key}:call{i}"
            ev = self.tool_call(ckey, name, cid, args, at)
            if side:
                self.out.events[self.out.events.index(ev)] = _side(ev)
        if mid and out:
            sums = dict(self.extra.get("out", {}))
            sums[model] = sums.get(model, 0) + out
            self.extra["out"] = sums
            fact = UsageFact(f"{NAME}:{self.native}:{mid}", self.uid, at[0], model)
            self.out.usage.append(_with(fact, output_tokens=out, offset=at[1], rank=self.native))

    def result(self, key: str, data: Mapping[str, Any], at: Any, side: bool) -> None:
        cid = first_str(data, "toolCallId")
        res = data.get("result")
        text = result_text(res.get("content")) if isinstance(res, dict) else result_text(res)
        failed = data.get("success") is False
        if failed and not text:
            text = first_str(get_dict(data, "error"), "message") or ""
        ev = self.tool_result(key, cid, text, at, failed=failed)
        if side:
            self.out.events[self.out.events.index(ev)] = _side(ev)

    def shutdown(self, key: str, data: Mapping[str, Any], at: Any) -> None:
        metrics = {m: get_dict(v, "usage") for m, v in get_dict(data, "modelMetrics").items()}
        rows = [
            (m, [count(u, k, "modelMetrics.usage") for k in _SHUTDOWN_KEYS])
            for m, u in metrics.items()
            if u
        ]
        details = get_dict(data, "tokenDetails")
        if not rows and details:  # older shutdowns: session totals, non-cached input apart
            n = [count(get_dict(details, k), "tokenCount", f"tokenDetails.{k}") for k in _DETAILS]
            model = first_str(data, "currentModel") or self.extra.get("model") or NAME
            rows = [(model, [n[0] + n[2] + n[3], n[1], n[2], n[3], 0])]
        sums: Mapping[str, int] = self.extra.get("out", {})
        for model, (inp, out, cache_read, cache_write, reasoning) in rows:
            fact = UsageFact(f"{NAME}:{self.native}:shutdown:{model}", self.uid, at[0], model)
            self.out.usage.append(
                _with(
                    fact,
                    input_tokens=max(inp - cache_read - cache_write, 0),
                    output_tokens=max(out - sums.get(model, 0), 0),
                    cache_read_tokens=cache_read,
                    cache_write_5m_tokens=cache_write,
                    reasoning_tokens=reasoning,
                    replace=True,
                    offset=at[1],
                    rank=self.native,
                )
            )
        self.set_model(first_str(data, "currentModel"))
        reason = first_str(data, "shutdownType") or "shutdown"
        self.emit(key, "completion", at, "system", f"session shutdown: {reason}")
        self.info["ended"] = True


def _with(fact: UsageFact, **kw: Any) -> UsageFact:
    return fact._replace(**kw)


def _side(ev: Event) -> Event:
    return ev._replace(is_sidechain=True)


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one ``events.jsonl`` (see the module docstring)."""
    run = _Run(NAME, session_id(chunk.ctx.rel), state)
    return parse_lines(chunk, run, run.record, **workspace_facts(chunk.ctx.sidecar))


PARSERS: Final = {NAME: parse}

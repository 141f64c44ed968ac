"""Qwen Code chat recordings (``${QWEN_HOME:-~/.qwen}/projects/<encoded cwd>/chats/``).

Pure: bytes in, records out.  Only constructed/scrubbed files are public (agent-sessions'
fixtures); the rules follow Qwen Code's own ``ChatRecord`` type
(``packages/core/src/services/chatRecordingService.ts``): the transcript is
``<projectDir>/chats/<sessionId>.jsonl``, append-only, under the runtime base directory
(``QWEN_RUNTIME_DIR``, else ``QWEN_HOME``, else ``~/.qwen``).

* **Records** ``{uuid, parentUuid, sessionId, timestamp, type, subtype, cwd, version,
  gitBranch, model, message{role, parts[]}, usageMetadata, toolCallResult,
  systemPayload}``: ``user`` → ``user_msg`` (``systemPayload.displayText`` when present:
  the prompt without the hook context Qwen appends; ``subtype`` notification → ``lifecycle``);
  ``assistant`` parts → ``thinking`` (``thought: true``), ``assistant_msg``, ``tool_call``
  (``functionCall``); ``tool_result`` → ``tool_result`` per ``functionResponse``
  (``toolCallResult.status`` ``error``/``cancelled``); ``system`` → ``lifecycle`` by
  ``subtype`` (``custom_title`` sets the title); ``ui_telemetry`` adds nothing (its counts
  repeat ``usageMetadata``).  Keys ``<uuid>:<crc32 of the line>#<part>``.  ``qwen:<id>``
  from the file name (Qwen names it after the session id).
* **Usage**: ``usageMetadata`` of assistant records (Gemini's fields:
  ``promptTokenCount`` includes ``cachedContentTokenCount``; ``thoughtsTokenCount`` is
  billed as output), one fact per record, key ``qwen:<uuid>`` (``/branch`` copies a record's
  uuid into the fork, so it counts once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_lines
from helixd.adapters.declared.qwen import NAME
from helixd.adapters.fields import count, dump, first_str, get_dict, get_str
from helixd.core.records import Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

QUIET: Final = frozenset({"ui_telemetry", "file_history_snapshot", "attribution_snapshot"})


class _Run(ChainRun):
    def record(self, offset: int, obj: Mapping[str, Any]) -> None:
        rtype = record_type(obj.get("type"))
        at = (parse_ts(obj.get("timestamp")), offset)
        self.note_ts(at[0])
        for field, key in (("cwd", "cwd"), ("git_branch", "gitBranch"), ("version", "version")):
            if first_str(obj, key):
                self.info[field] = first_str(obj, key)
        key = f"{get_str(obj, 'uuid') or 'r'}:{self.crc}"
        parts = get_dict(obj, "message").get("parts")
        parts = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
        subtype = obj.get("subtype")
        payload = get_dict(obj, "systemPayload")
        if rtype == "user" and subtype is None:
            text = get_str(payload, "displayText") or "\n".join(get_str(p, "text") for p in parts)
            self.emit(key, "user_msg", at, "user", text)
        elif rtype == "assistant":
            self.assistant(key, obj, parts, at)
        elif rtype == "tool_result":
            self.results(key, obj, parts, at)
        elif rtype in ("system", "user"):
            if subtype in QUIET:
                return
            if subtype == "custom_title" and first_str(payload, "customTitle"):
                self.info["title"] = first_str(payload, "customTitle")
            label = first_str(payload, "displayText", "rawCommand", "customTitle") or ""
            name = subtype if isinstance(subtype, str) else "system"
            self.emit(key, "lifecycle", at, "system", f"{name} {label}".strip())
        else:
            self.unknown(rtype)

    def assistant(self, key: str, obj: Mapping[str, Any], parts: list[Any], at: Any) -> None:
        model = first_str(obj, "model")
        if model:
            self.info["model"] = model
        for i, part in enumerate(parts):
            call = get_dict(part, "functionCall")
            text = get_str(part, "text")
            if call:
                name = first_str(call, "name") or "tool"
                self.tool_call(f"{key}#{i}", name, first_str(call, "id"), call.get("args"), at)
            elif text.strip() and part.get("thought") is True:
                self.emit(f"{key}#{i}", "thinking", at, "assistant", text)
            elif text.strip():
                self.emit(f"{key}#{i}", "assistant_msg", at, "assistant", text)
        usage = get_dict(obj, "usageMetadata")
        if usage:
            self.usage(obj, usage, model, at)

    def results(self, key: str, obj: Mapping[str, Any], parts: list[Any], at: Any) -> None:
        status = get_str(get_dict(obj, "toolCallResult"), "status")
        for i, part in enumerate(parts):
            resp = get_dict(part, "functionResponse")
            if not resp:
                continue
            body = resp.get("response")
            text = first_str(body, "output", "error") or (dump(body).decode() if body else "")
            self.tool_result(
                f"{key}#{i}",
                first_str(resp, "id"),
                text,
                at,
                failed=status == "error",
                rejected=status == "cancelled",
                name=first_str(resp, "name"),
            )

    def usage(
        self, obj: Mapping[str, Any], usage: Mapping[str, Any], model: str | None, at: Any
    ) -> None:
        prompt = count(usage, "promptTokenCount", "usageMetadata")
        cached = count(usage, "cachedContentTokenCount", "usageMetadata")
        out = count(usage, "candidatesTokenCount", "usageMetadata")
        thoughts = count(usage, "thoughtsTokenCount", "usageMetadata")
        tool = count(usage, "toolUsePromptTokenCount", "usageMetadata")
        if not (prompt or out or thoughts):
            return
        self.out.usage.append(
            UsageFact(
                f"{NAME}:{get_str(obj, 'uuid') or self.crc}",
                self.uid,
                at[0],
                model or NAME,
                input_tokens=max(prompt - cached, 0) + tool,
                output_tokens=out + thoughts,
                cache_read_tokens=cached,
                reasoning_tokens=thoughts,
                rank=self.native,
                offset=at[1],
            )
        )


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one chat recording (see the module docstring)."""
    stem = chunk.ctx.rel.rsplit("/", 1)[-1][: -len(".jsonl")]
    run = _Run(NAME, stem, state)
    return parse_lines(chunk, run, run.record)


PARSERS: Final = {NAME: parse}

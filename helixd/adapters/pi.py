"""Pi coding-agent sessions (``${PI_CODING_AGENT_DIR:-~/.pi/agent}/sessions/``).

Pure: bytes in, records out.  From the real sessions in the corpus (pi-mono's own v1
``large-session.jsonl``, agent-history's v3 capture) and agentsview's v3 fixture.

* **Files**: ``--<cwd with / as ->--/<timestamp>_<uuid>.jsonl``, one session per file.
  ``pi:<id>`` from the ``session`` header's ``id`` (else the uuid of the file name); the
  header gives cwd and, in the v1 layout, the provider/model; ``branchedFrom`` (v3) names
  the file it was branched from (kept in no field: the parent's id is in no record).
* **Entries** ``{type, timestamp, …}`` (v3 adds ``id``/``parentId``, a tree; it is read
  in file order like the other chained agents): ``message`` with ``message.role``
  ``user`` → ``user_msg``; ``assistant`` → ``thinking`` / ``assistant_msg`` /
  ``tool_call`` per content block (``toolCall`` blocks, joined on ``id``), ``stopReason``
  ``aborted`` → ``human_intervention``, ``error`` → ``error``; ``toolResult`` →
  ``tool_result`` (``isError``); ``bashExecution`` (a ``!`` command of the user) →
  ``tool_call`` + ``tool_result``.  ``model_change``, ``compaction``, ``branch_summary``,
  ``session_info`` (its ``name`` is the title) and ``custom_message`` → ``lifecycle``;
  ``thinking_level_change``, ``label`` and ``custom`` add no event.
* **Usage**: every assistant message's ``usage`` ``{input, output, cacheRead, cacheWrite,
  cost}`` (``input`` is the non-cached input; pi-ai subtracts cached tokens), one fact per
  message with any count, keyed by ``responseId`` (else the message's timestamp) and the
  line's checksum (a branched file that copies its parent's entries counts them once),
  credited to the earliest session (rank: the header's timestamp).
  The recorded ``cost.total`` is kept as the fact's recorded cost (``--cost auto`` uses it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_lines
from helixd.adapters.declared.pi import NAME
from helixd.adapters.fields import cost, count, first_str, get_dict, get_str, result_text
from helixd.adapters.jsonl import iter_text_blocks
from helixd.core.records import Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

LIFECYCLE: Final = frozenset(
    {"model_change", "compaction", "branch_summary", "session_info", "custom_message"}
)
QUIET: Final = frozenset({"thinking_level_change", "label", "custom"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def file_session(rel: str) -> str:
    stem = rel.rsplit("/", 1)[-1][: -len(".jsonl")]
    found = _UUID.findall(stem)
    return found[-1] if found else stem


class _Run(ChainRun):
    def entry(self, offset: int, obj: Mapping[str, Any]) -> None:
        rtype = record_type(obj.get("type"))
        at = (parse_ts(obj.get("timestamp")), offset)
        self.note_ts(at[0])
        key = f"{get_str(obj, 'id') or 'e'}:{self.crc}"
        if rtype == "session":
            self.header(obj, at)
        elif rtype == "message":
            self.message(key, get_dict(obj, "message"), at)
        elif rtype in LIFECYCLE:
            self.lifecycle(key, rtype, obj, at)
        elif rtype not in QUIET:
            self.unknown(rtype)

    def header(self, obj: Mapping[str, Any], at: Any) -> None:
        native = first_str(obj, "id")
        if native and not self.extra.get("named"):
            self.rename(native)
        self.extra["named"] = True
        self.extra["rank"] = get_str(obj, "timestamp")
        if first_str(obj, "cwd"):
            self.info["cwd"] = first_str(obj, "cwd")
        self.set_model(first_str(obj, "modelId"))

    def set_model(self, model: str | None) -> None:
        if model:
            self.extra["model"] = self.info["model"] = model

    def lifecycle(self, key: str, rtype: str, obj: Mapping[str, Any], at: Any) -> None:
        if rtype == "model_change":
            self.set_model(first_str(obj, "modelId"))
        if rtype == "session_info" and first_str(obj, "name"):
            self.info["title"] = first_str(obj, "name")
        label = first_str(obj, "modelId", "name", "customType") or ""
        text = get_str(obj, "summary") or f"{rtype} {label}".strip()
        self.emit(key, "lifecycle", at, "system", text, summary=f"{rtype} {label}".strip())

    def message(self, key: str, msg: Mapping[str, Any], at: Any) -> None:
        role = record_type(msg.get("role"), "role")
        content = msg.get("content")
        if role == "user":
            self.emit(key, "user_msg", at, "user", "\n".join(iter_text_blocks(content)))
        elif role == "assistant":
            self.assistant(key, msg, at)
        elif role == "toolResult":
            cid = first_str(msg, "toolCallId")
            failed = msg.get("isError") is True
            name = first_str(msg, "toolName")
            self.tool_result(key, cid, result_text(content), at, failed=failed, name=name)
        elif role == "bashExecution":
            command = get_str(msg, "command")
            self.tool_call(f"{key}:call", "bash", None, {"command": command}, at)
            failed = isinstance(msg.get("exitCode"), int) and msg.get("exitCode") != 0
            self.tool_result(f"{key}:result", None, get_str(msg, "output"), at, failed=failed)
        else:
            self.unknown(f"message/{role}")

    def assistant(self, key: str, msg: Mapping[str, Any], at: Any) -> None:
        blocks = msg.get("content")
        for i, block in enumerate(blocks if isinstance(blocks, list) else []):
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "thinking" and get_str(block, "thinking").strip():
                self.emit(f"{key}#{i}", "thinking", at, "assistant", get_str(block, "thinking"))
            elif btype == "text" and get_str(block, "text").strip():
                self.emit(f"{key}#{i}", "assistant_msg", at, "assistant", get_str(block, "text"))
            elif btype == "toolCall":
                name = first_str(block, "name") or "tool"
                args = block.get("arguments")
                call = self.tool_call(f"{key}#{i}", name, first_str(block, "id"), args, at)
                path = first_str(args, "path", "file_path")
                if name == "write" and path:  # ("edit" is an edit tool for every agent)
                    self.derived(call, "edit", "edit", "assistant", path)
        stop = msg.get("stopReason")
        if stop == "aborted":
            self.emit(f"{key}:abort", "human_intervention", at, "user", "aborted")
        elif stop == "error":
            text = get_str(msg, "errorMessage") or "error"
            self.emit(f"{key}:error", "error", at, "system", text, is_error=True)
        self.usage(msg, at)

    def usage(self, msg: Mapping[str, Any], at: Any) -> None:
        usage = get_dict(msg, "usage")
        inp, out, read, write = (
            count(usage, k, "usage") for k in ("input", "output", "cacheRead", "cacheWrite")
        )
        model = first_str(msg, "model") or self.extra.get("model") or NAME
        self.set_model(first_str(msg, "model"))
        if not (inp or out or read or write):
            return
        rid = first_str(msg, "responseId") or str(msg.get("timestamp"))
        key = f"{NAME}:{rid}:{self.crc}"  # the same in a branched file's copy of the entry
        self.out.usage.append(
            UsageFact(
                key,
                self.uid,
                at[0],
                model,
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_5m_tokens=write,
                rank=f"{self.extra.get('rank', '')}|{self.native}",
                offset=at[1],
                recorded_cost_usd=cost(get_dict(usage, "cost"), "total", "usage.cost"),
            )
        )


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one session file (see the module docstring)."""
    run = _Run(NAME, file_session(chunk.ctx.rel), state)
    return parse_lines(chunk, run, run.entry)


PARSERS: Final = {NAME: parse}

"""Amp threads (``${XDG_DATA_HOME:-~/.local/share}/amp/threads/T-<id>.json``).

Pure: bytes in, records out.  Only hand-written simplified files are public in the corpus
(cli-continues); the field rules follow agentsview's parser of real Amp threads
(``internal/parser/amp.go``).

* **Files**: one JSON document per thread, rewritten whole (``whole_file``):
  ``{v, id, created (epoch ms), title, env, messages[]}``.  ``amp:<T-id>`` from the file name.
* **Messages** ``{role, messageId, content[], usage, state}``: ``text`` → ``user_msg`` /
  ``assistant_msg``; ``thinking`` → ``thinking``; ``tool_use`` → ``tool_call``;
  ``tool_result`` (``toolUseID`` or ``tool_use_id``, ``run{status, result, error}``) →
  ``tool_result`` (status ``error`` or ``result.success: false`` failed, ``cancelled``
  rejected).  Events keyed by message id (else position) and block index.
* **Usage** per assistant message ``usage{model, inputTokens, outputTokens,
  cacheCreationInputTokens, cacheReadInputTokens, timestamp}`` (the three input buckets are
  disjoint); for ``gpt-*`` models cache creation is uncached input (OpenAI bills no cache
  write).  One fact per message, ``replace=True`` (the thread is rewritten).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_items
from helixd.adapters.declared.amp import NAME
from helixd.adapters.fields import count, dump, first_str, get_dict, get_str, result_text
from helixd.adapters.guard import guarded
from helixd.core.records import Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type


def _result_text(result: Any) -> str:
    if isinstance(result, dict):
        for key in ("output", "content", "diff"):
            if key in result:
                value = result[key]
                return value if isinstance(value, str) else dump(value).decode()
    if isinstance(result, str):
        return result
    return "" if result is None else dump(result).decode()


class _Run(ChainRun):
    def document(self, obj: Mapping[str, Any]) -> None:
        created = obj.get("created")
        self.note_ts(parse_ts(created) if isinstance(created, int) else None)
        if first_str(obj, "title"):
            self.info["title"] = first_str(obj, "title")

    def message(self, index: int, offset: int, msg: Mapping[str, Any]) -> None:
        role = record_type(msg.get("role"), "role")
        mid = str(msg.get("messageId", f"@{index}"))
        usage = get_dict(msg, "usage")
        at = (parse_ts(usage.get("timestamp")) or self.info.get("first_ts"), offset)
        blocks = msg.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        for i, block in enumerate(blocks if isinstance(blocks, list) else []):
            if isinstance(block, dict):
                self.block(f"{mid}#{i}", role, block, at)
        if role == "assistant" and usage:
            self.usage(mid, usage, at)
        elif role not in ("user", "assistant"):
            self.unknown(f"role/{role}")

    def block(self, key: str, role: Any, block: Mapping[str, Any], at: Any) -> None:
        if self.message_block(key, role, block, at):
            return
        btype = block.get("type")
        if btype == "tool_result":
            run = get_dict(block, "run")
            status = get_str(run, "status")
            result = run.get("result", block.get("content"))
            text = _result_text(result) or result_text(block.get("content"))
            text = text or first_str(get_dict(run, "error"), "message") or ""
            failed = status == "error" or get_dict(run, "result").get("success") is False
            cid = first_str(block, "toolUseID", "tool_use_id")
            self.tool_result(key, cid, text, at, failed=failed, rejected=status == "cancelled")
        else:
            self.unknown(f"block/{btype}")

    def usage(self, mid: str, usage: Mapping[str, Any], at: Any) -> None:
        keys = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
        inp, out, write, read = (count(usage, k, "usage") for k in keys)
        if not (inp or out or write or read):
            return
        model = first_str(usage, "model") or NAME
        self.info["model"] = model
        if model.startswith("gpt-"):
            inp, write = inp + write, 0
        self.out.usage.append(
            UsageFact(
                f"{NAME}:{self.native}:{mid}",
                self.uid,
                at[0],
                model,
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_5m_tokens=write,
                rank=self.native,
                replace=True,
                offset=at[1],
            )
        )


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse one thread document (see the module docstring)."""
    obj = jsonl.whole_document(chunk, "thread document")
    if isinstance(obj, Parsed):
        return obj
    run = _Run(NAME, chunk.ctx.rel.rsplit("/", 1)[-1][: -len(".json")], {})
    guarded(run, chunk.base, 0, run.document, obj)
    return parse_items(chunk, run, obj.get("messages"), run.message, "messages")


PARSERS: Final = {NAME: parse}

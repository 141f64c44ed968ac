"""Cline's SDK/CLI session store (``${CLINE_DIR:-~/.cline}/data/sessions/<id>/``).

Pure: bytes in, records out.  From a real session of Cline's own developers in the corpus
(its manifest, its messages file, and the same file after Cline's "basic" compaction).
Named ``cline-cli`` apart from the VS Code extension's ``tasks/<id>/`` layout.

* **Files**: ``<id>/<id>.json`` (the manifest: cwd, provider/model, title, status, fork
  parent) and ``<id>/<id>.messages.json`` (``{version, sessionId, agent, messages[]}``).
  Both are JSON documents rewritten whole (``whole_file``).  ``cline-cli:<id>`` from the
  directory name.
* **Messages** ``{id, role, content[], ts, modelInfo, metrics, metadata}``: user ``text``
  blocks → ``user_msg`` (``file`` attachments are not prompts, a ``<SYSTEM_NOTICE>``
  block is ``lifecycle``); assistant ``text`` →
  ``assistant_msg``, ``thinking`` → ``thinking``, ``tool_use`` → ``tool_call``; user
  ``tool_result`` blocks → ``tool_result`` joined on ``tool_use_id`` (``is_error``);
  ``editor`` calls add an ``edit``, ``run_commands`` running a test suite a ``test_run``.
  Events are keyed by message id and block index: a rewrite (compaction appends a notice
  to a kept message) replaces their content, and messages the compaction removed stay in
  the store.  A message with ``metadata.kind == "compaction"`` adds a ``lifecycle`` event.
* **Usage**: each assistant message's ``metrics`` ``{inputTokens, outputTokens,
  cacheReadTokens, cacheWriteTokens, cost}``; ``inputTokens`` includes the cache reads (the
  real file: 35 912 input with 34 332 read), so the non-cached input is the difference;
  cache writes are taken to be inside it too.  One fact per message id, ``replace=True``,
  keyed without the session (a fork's copy of its parent's messages counts once, credited
  to the older session: ids start with their creation time in ms).
  ``usageBefore`` of a compaction is a total of the removed messages: not counted again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun
from helixd.adapters.declared.cline_cli import MESSAGES, NAME
from helixd.adapters.fields import cost, count, dump, first_str, get_dict, get_str, result_text
from helixd.adapters.guard import guarded
from helixd.adapters.toolkinds import is_test_command
from helixd.core.records import Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

NOTICE: Final = "<SYSTEM_NOTICE>"  # context Cline adds to a prompt (compaction summaries)
EDITORS: Final = frozenset({"editor", "write_file", "replace_in_file"})
RUNNERS: Final = frozenset({"run_commands"})


class _Run(ChainRun):
    def manifest(self, obj: Mapping[str, Any]) -> None:
        meta = get_dict(obj, "metadata")
        parent = first_str(get_dict(meta, "fork"), "forkedFromSessionId")
        for field, value in (
            ("cwd", first_str(obj, "cwd", "workspace_root")),
            ("model", first_str(obj, "model")),
            ("title", first_str(meta, "title")),
            ("version", str(obj["version"]) if isinstance(obj.get("version"), int) else None),
            ("parent_uid", f"{NAME}:{parent}" if parent else None),
        ):
            if value:
                self.info[field] = value
        self.note_ts(parse_ts(obj.get("started_at")))
        self.note_ts(parse_ts(obj.get("ended_at")))
        if first_str(obj, "status") in ("completed", "failed", "cancelled", "aborted"):
            self.info["ended"] = True

    def message(self, index: int, offset: int, msg: Mapping[str, Any]) -> None:
        mid = first_str(msg, "id") or f"@{index}"
        role = record_type(msg.get("role"), "role")
        at = (parse_ts(msg.get("ts")), offset)
        self.note_ts(at[0])
        meta = get_dict(msg, "metadata")
        if meta.get("kind") == "compaction":
            removed = meta.get("messagesRemoved")
            text = f"compaction ({get_str(meta, 'reason') or 'compaction'}): {removed} removed"
            self.emit(f"{mid}:compaction", "lifecycle", at, "system", text)
        blocks = msg.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        for i, block in enumerate(blocks if isinstance(blocks, list) else []):
            if isinstance(block, dict):
                self.block(f"{mid}#{i}", role, block, at)
        if role == "assistant":
            self.usage(mid, msg, at)
        elif role != "user":
            self.unknown(f"role/{role}")

    def block(self, key: str, role: Any, block: Mapping[str, Any], at: Any) -> None:
        btype = block.get("type")
        if btype == "text" and get_str(block, "text").strip():
            text = block["text"]
            if role != "assistant" and text.lstrip().startswith(NOTICE):
                self.emit(key, "lifecycle", at, "system", text, summary="context notice")
            else:
                kind = "assistant_msg" if role == "assistant" else "user_msg"
                self.emit(key, kind, at, "assistant" if role == "assistant" else "user", text)
        elif btype == "thinking" and get_str(block, "thinking").strip():
            self.emit(key, "thinking", at, "assistant", block["thinking"])
        elif btype == "tool_use":
            name = first_str(block, "name") or "tool"
            args = block.get("input")
            call = self.tool_call(key, name, first_str(block, "id"), args, at)
            path = first_str(args, "path") if name in EDITORS else None
            if path:
                self.derived(call, "edit", "edit", "assistant", path)
            commands = args.get("commands") if isinstance(args, dict) else None
            tests = [c for c in commands or [] if isinstance(c, str) and is_test_command(c)]
            if name in RUNNERS and tests:
                self.derived(call, "test", "test_run", "assistant", tests[0])
        elif btype == "tool_result":
            content = block.get("content")
            text = result_text(content) if not isinstance(content, list) else ""
            text = text or (jsonl_text(content) if content is not None else "")
            failed = block.get("is_error") is True
            cid = first_str(block, "tool_use_id")
            self.tool_result(key, cid, text, at, failed=failed, name=first_str(block, "name"))
        elif btype not in ("file", "image", "text", "thinking", "redacted_thinking"):
            self.unknown(f"block/{btype}")

    def usage(self, mid: str, msg: Mapping[str, Any], at: Any) -> None:
        metrics = get_dict(msg, "metrics")
        keys = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
        inp, out, read, write = (count(metrics, k, "metrics") for k in keys)
        if not (inp or out or read or write):
            return
        model = first_str(get_dict(msg, "modelInfo"), "id") or self.info.get("model") or NAME
        self.out.usage.append(
            UsageFact(
                f"{NAME}:{mid}",  # a fork copies its parent's messages, ids and all
                self.uid,
                at[0],
                model,
                input_tokens=max(inp - read - write, 0),
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_5m_tokens=write,
                rank=self.native,
                replace=True,
                offset=at[1],
                recorded_cost_usd=cost(metrics, "cost", "metrics"),
            )
        )


def jsonl_text(content: Any) -> str:
    """A tool result's structured content as compact text (Cline's ``[{query, result}]``)."""
    if isinstance(content, list):
        parts = [get_str(c, "result") or get_str(c, "text") for c in content if isinstance(c, dict)]
        if any(parts):
            return "\n".join(p for p in parts if p)
    return dump(content).decode("utf-8", "replace")


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse a manifest or a messages document (see the module docstring)."""
    obj = jsonl.whole_document(chunk, "session document")
    if isinstance(obj, Parsed):
        return obj
    run = _Run(NAME, chunk.ctx.rel.split("/")[-2], {})
    if chunk.ctx.rel.endswith(MESSAGES):
        messages = obj.get("messages")
        if not isinstance(messages, list):
            run.unknown("document without messages")
            messages = []
        for i, msg in enumerate(messages):
            if isinstance(msg, dict):
                guarded(run, chunk.base, 0, run.message, i, chunk.base, msg)
            else:
                run.unknown(type(msg).__name__)
    else:
        guarded(run, chunk.base, 0, run.manifest, obj)
    parsed = run.finish(len(chunk.data), 1)
    parsed.state.clear()
    return parsed


PARSERS: Final = {NAME: parse}

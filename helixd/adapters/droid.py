"""Factory Droid sessions (``~/.factory/sessions/``).

Pure: bytes in, records out.  Only constructed/scrubbed files are public (agent-sessions'
fixtures); the layout and the ``.settings.json`` usage follow what other readers of real
installations document (a session ``<uuid>.jsonl`` under ``sessions/`` or
``sessions/<project dir>/``, its ``<uuid>.settings.json`` beside it holding ``model`` and
the session's ``tokenUsage``).

* **Session file** lines: ``session_start`` ``{id, title, sessionTitle, cwd, owner,
  version}``; ``message`` ``{id, parentId, timestamp, message{role, content[]}}`` with
  Anthropic-style blocks: ``text`` → ``user_msg`` / ``assistant_msg``, ``thinking`` →
  ``thinking``, ``tool_use`` → ``tool_call`` (``Execute`` is the shell tool), user
  ``tool_result`` → ``tool_result`` (``is_error``).  ``droid:<id>`` from the file name.
  Keys ``<id>#<block>:<crc32 of the line>``.
* **Usage**: the session totals of ``<uuid>.settings.json`` (read whole, ``whole_file``):
  ``tokenUsage`` ``{inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens,
  thinkingTokens}``, one replacing fact per session (``droid:<id>``); input is taken to
  exclude the cache counts and thinking to come on top of output (so output includes it,
  as everywhere in Helix).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.chain import ChainRun, parse_lines
from helixd.adapters.declared.droid import NAME, SETTINGS
from helixd.adapters.fields import count, first_str, get_dict, get_str, result_text
from helixd.adapters.guard import guarded
from helixd.core.records import Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type


def session_of(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return name[: -len(SETTINGS)] if name.endswith(SETTINGS) else name[: -len(".jsonl")]


class _Run(ChainRun):
    def line(self, offset: int, obj: Mapping[str, Any]) -> None:
        rtype = record_type(obj.get("type"))
        at = (parse_ts(obj.get("timestamp")), offset)
        self.note_ts(at[0])
        if rtype == "session_start":
            for field, keys in (
                ("cwd", ("cwd",)),
                ("title", ("sessionTitle", "title")),
                ("version", ("version",)),
            ):
                if first_str(obj, *keys):
                    self.info[field] = first_str(obj, *keys)
        elif rtype == "message":
            msg = get_dict(obj, "message")
            role = record_type(msg.get("role"), "role")
            blocks = msg.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            key = f"{get_str(obj, 'id') or 'm'}"
            for i, block in enumerate(blocks if isinstance(blocks, list) else []):
                if isinstance(block, dict):
                    self.block(f"{key}#{i}:{self.crc}", role, block, at)
        else:
            self.unknown(rtype)

    def block(self, key: str, role: Any, block: Mapping[str, Any], at: Any) -> None:
        if self.message_block(key, role, block, at):
            return
        btype = block.get("type")
        if btype == "tool_result":
            failed = block.get("is_error") is True
            content = result_text(block.get("content"))
            self.tool_result(key, first_str(block, "tool_use_id"), content, at, failed=failed)
        else:
            self.unknown(f"block/{btype}")

    def settings(self, offset: int, obj: Mapping[str, Any]) -> None:
        model = first_str(obj, "model")
        if model:
            self.info["model"] = model
        usage = get_dict(obj, "tokenUsage")
        keys = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")
        inp, out, write, read = (count(usage, k, "tokenUsage") for k in keys)
        thinking = count(usage, "thinkingTokens", "tokenUsage")
        if not (inp or out or write or read or thinking):
            return
        ts = parse_ts(obj.get("providerLockTimestamp"))
        self.out.usage.append(
            UsageFact(
                f"{NAME}:{self.native}",
                self.uid,
                ts,
                model or NAME,
                input_tokens=inp,
                output_tokens=out + thinking,
                cache_read_tokens=read,
                cache_write_5m_tokens=write,
                reasoning_tokens=thinking,
                rank=self.native,
                replace=True,
                offset=offset,
            )
        )


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    """Parse a session file or its settings (see the module docstring)."""
    if chunk.ctx.rel.endswith(SETTINGS):
        obj = jsonl.whole_document(chunk, "settings document")
        if isinstance(obj, Parsed):
            return obj
        run = _Run(NAME, session_of(chunk.ctx.rel), {})
        guarded(run, chunk.base, 0, run.settings, chunk.base, obj)
        parsed = run.finish(len(chunk.data), 1)
        parsed.state.clear()
        return parsed
    run = _Run(NAME, session_of(chunk.ctx.rel), state)
    return parse_lines(chunk, run, run.line)


PARSERS: Final = {NAME: parse}

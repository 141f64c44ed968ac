"""The classic Cline VS Code layout, shared by Roo Code and Kilo Code: one directory per task,
``globalStorage/<extension id>/tasks/<task id>/``, holding JSON documents the extension
rewrites whole.

Pure: bytes in, records out.  A directory tree source: every file of the task is a document
(``whole_file``) and the task id comes from the directory, so the files of one task make one
session.  Rules from ``../shared/notes/formats.md`` §8.1 and the (constructed) samples in the
corpus:

* **Read**: ``ui_messages.json`` (an array of ``{ts, type: say|ask, say|ask: <kind>, text,
  partial}``): the task's own record of the conversation, with times and usage; and
  ``api_conversation_history.json`` (the turns as sent to the model: Anthropic
  ``MessageParam``s ``{role, content}``, no times, no usage).  Not read:
  ``task_metadata.json``, checkpoints.
* **Two files, one session, nothing twice**: ``ui_messages.json`` gives the timeline (every
  event below); the API history gives only what the UI file does not hold — the **results
  of tools other than commands** as the model received them (file contents, search and MCP
  results), as ``tool_result`` events keyed ``api:<message index>:<block index>``.  Its
  user and assistant text, its tool calls and the commands' results (the UI file's
  ``command``/``command_output``) are the UI file's turns again and add no event.  Both
  forms are read: native tool calling (a user ``tool_result`` block, joined by
  ``tool_use_id`` to the assistant's ``tool_use`` for its name, ``is_error``) and the
  classic XML form (a user text block ``[<tool> for '<arg>'] Result:`` followed by the
  result's text blocks, up to the next such header or ``<environment_details>``).
* **Identity**: ``<agent>:<task id>``; an entry's key is its ``ts`` (the extension rewrites a
  streaming ``partial`` message under the same ``ts``, and ``whole_file`` replaces the
  stored content).
* **Events**: the first ``say: text`` is the task (``user_msg``), later ones the assistant's;
  ``user_feedback`` → ``user_msg``; ``reasoning`` → ``thinking``; ``ask: command`` /
  ``say: command`` → a shell ``tool_call``, ``command_output`` → its ``tool_result``;
  ``ask|say: tool`` (JSON ``{tool, path, …}``) → ``tool_call``; ``error`` →
  ``error``; ``completion_result`` → ``completion``; ``api_req_started`` → usage; other kinds
  (checkpoints, follow-ups, resume prompts …) add no event; an unknown ``type`` is counted.
* **Usage**: per API request, the JSON text of ``say: api_req_started`` (``tokensIn``,
  ``tokensOut``, ``cacheWrites``, ``cacheReads``), key ``<agent>:<task>:<ts>``,
  ``replace=True`` (the entry is rewritten as the request completes).  No model is recorded
  there: ``unknown``.  Its ``cost`` is the fact's recorded cost (0: none recorded).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters.base import Chunk
from helixd.adapters.declared.cline_tasks import API_FILE
from helixd.adapters.fields import cost, count, get_str, result_text
from helixd.adapters.guard import guarded
from helixd.adapters.turns import Turns
from helixd.core.records import BadLine, Parsed, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import record_type

COMMAND_TOOLS: Final = frozenset({"execute_command"})  # their results are the UI file's
RESULT_HEADER: Final = re.compile(r"^\[(\w+)(?: for '(.*?)')?\] Result:", re.DOTALL)
ENVIRONMENT: Final = "<environment_details>"
QUIET: Final = frozenset(
    [
        "checkpoint_created",
        "followup",
        "resume_task",
        "resume_completed_task",
        "api_req_finished",
        "api_req_retried",
        "shell_integration_warning",
        "mistake_limit_reached",
        "auto_approval_max_req_reached",
        "browser_action_launch",
        "browser_action",
        "browser_action_result",
        "mcp_server_request_started",
        "mcp_server_response",
        "use_mcp_server",
        "diff_error",
        "clineignore_error",
        "condense_context",
        "new_task",
        "new_task_with_context",
        "plan_mode_respond",
        "act_mode_respond",
        "task_progress",
        "deleted_api_reqs",
        "user_feedback_diff",
        "subtask_result",
        "codebase_search_result",
        "completion_result_ask",
    ]
)


class _Run(Turns):
    def __init__(self, name: str, chunk: Chunk, state: Mapping[str, Any]) -> None:
        super().__init__(state)
        self.name = name
        parts = chunk.ctx.rel.split("/")
        self.native = parts[-2] if len(parts) >= 2 else parts[0]
        self.uid = f"{name}:{self.native}"
        self.told = False  # the task's first text seen
        self.command: str | None = None

    def entry(self, offset: int, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise ValueError(f"an entry that is not an object but {type(obj).__name__}")
        etype = record_type(obj.get("type"))
        ts = parse_ts(obj.get("ts"))
        kind = obj.get(etype) if etype in ("say", "ask") else None
        if etype not in ("say", "ask"):
            self.unknown(etype)
            return
        key = f"ts{obj.get('ts')}:{etype}"
        at = (ts, offset)
        text = get_str(obj, "text")
        self.out.sessions.append(
            SessionInfo(
                uid=self.uid, agent=self.name, native_id=self.native, first_ts=ts, last_ts=ts
            )
        )
        if kind == "text" and etype == "say":
            if not self.told:
                self.told = True
                self.out.sessions.append(
                    SessionInfo(
                        uid=self.uid,
                        agent=self.name,
                        native_id=self.native,
                        title=text[:200] or None,
                    )
                )
                self.emit(self.uid, key, "user_msg", at, "user", text)
            else:
                self.emit(self.uid, key, "assistant_msg", at, "assistant", text)
        elif kind == "user_feedback":
            self.emit(self.uid, key, "user_msg", at, "user", text)
        elif kind == "reasoning":
            self.emit(self.uid, key, "thinking", at, "assistant", text)
        elif kind == "command":
            self.command = key
            self.tool_call(self.uid, key, at, "bash", key, {"command": text})
        elif kind == "command_output":
            self.tool_result(self.uid, key, at, self.command, text, False)
        elif kind == "tool":
            args: Any = orjson.loads(text) if text.startswith("{") else {"text": text}
            name = get_str(args, "tool") if isinstance(args, dict) else ""
            self.tool_call(self.uid, key, at, name or "tool", None, args)
        elif kind == "error":
            self.emit(self.uid, key, "error", at, "system", text or "error", is_error=True)
        elif kind == "completion_result":
            self.emit(self.uid, key, "completion", at, "assistant", text)
        elif kind == "api_req_started":
            self.usage(obj, text, ts, offset)
        elif kind not in QUIET:
            self.unknown(f"{etype}:{record_type(kind, etype)}")

    def fact(self, **known: Any) -> None:
        info = SessionInfo(uid=self.uid, agent=self.name, native_id=self.native, **known)
        self.out.sessions.append(info)

    def usage(self, obj: Mapping[str, Any], text: str, ts: int | None, offset: int) -> None:
        info = orjson.loads(text) if text else {}
        if not isinstance(info, dict):
            return
        inp, out = count(info, "tokensIn", "api_req"), count(info, "tokensOut", "api_req")
        writes, reads = count(info, "cacheWrites", "api_req"), count(info, "cacheReads", "api_req")
        if inp or out or writes or reads:
            self.out.usage.append(
                UsageFact(
                    dedup_key=f"{self.uid}:{obj.get('ts')}",
                    session_uid=self.uid,
                    ts=ts,
                    model="unknown",
                    input_tokens=inp,
                    output_tokens=out,
                    cache_read_tokens=reads,
                    cache_write_5m_tokens=writes,
                    replace=True,
                    offset=offset,
                    recorded_cost_usd=cost(info, "cost", "api_req"),
                )
            )


class _ApiRun(_Run):
    """``api_conversation_history.json``: the results of non-command tools only."""

    def __init__(self, name: str, chunk: Chunk, state: Mapping[str, Any]) -> None:
        super().__init__(name, chunk, state)
        self.index = 0
        self.names: dict[str, str] = {}  # tool_use id -> tool name
        self.fact()  # the session is the task's, whichever of its files is read first

    def entry(self, offset: int, obj: Any) -> None:
        i, self.index = self.index, self.index + 1
        if not isinstance(obj, dict):
            raise ValueError(f"a message that is not an object but {type(obj).__name__}")
        role = record_type(obj.get("role"), "role")
        content = obj.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if role == "assistant":
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    self.names[get_str(block, "id")] = get_str(block, "name")
        elif role == "user":
            self.results(i, offset, [b for b in blocks if isinstance(b, dict)])
        else:
            self.unknown(f"role:{role}")

    def results(self, i: int, offset: int, blocks: list[dict[str, Any]]) -> None:
        at: tuple[int | None, int] = (None, offset)
        header: tuple[int, str, list[str]] | None = None  # XML form: (block, tool, text)
        for j, block in enumerate(blocks):
            btype = block.get("type")
            text = get_str(block, "text") if btype == "text" else ""
            found = RESULT_HEADER.match(text)
            if found or text.startswith(ENVIRONMENT):
                self.xml_result(i, at, header)
                header = None
            if found:
                rest = text[found.end() :].strip()
                header = (j, found.group(1), [rest] if rest else [])
            elif header is not None and btype == "text":
                header[2].append(text)
            if btype == "tool_result":
                cid = get_str(block, "tool_use_id")
                tool = self.names.get(cid, "")
                if tool not in COMMAND_TOOLS:
                    body = result_text(block.get("content"))
                    failed = block.get("is_error") is True
                    key = f"api:{i}:{j}"
                    self.tool_result(
                        self.uid, key, at, cid or None, body, failed, name=tool or None
                    )
        self.xml_result(i, at, header)

    def xml_result(
        self, i: int, at: tuple[int | None, int], header: tuple[int, str, list[str]] | None
    ) -> None:
        if header is None or header[1] in COMMAND_TOOLS:
            return
        j, tool, parts = header
        self.tool_result(self.uid, f"api:{i}:{j}", at, None, "\n".join(parts), False, name=tool)


def _parser(name: str) -> Any:
    def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
        doc = _document(chunk)
        if isinstance(doc, Parsed):
            return doc
        api = chunk.ctx.rel.rsplit("/", 1)[-1] == API_FILE
        run = _ApiRun(name, chunk, {}) if api else _Run(name, chunk, {})
        for entry in doc:
            guarded(run, chunk.base, len(chunk.data), run.entry, chunk.base, entry)
        out = run.out
        if out.bad:  # one document: its entries share its offset; one bad line at most
            out.bad[:] = [BadLine(chunk.base, len(chunk.data), out.bad[0].reason)]
        return Parsed(
            consumed=len(chunk.data),
            state={},
            sessions=out.sessions,
            events=out.events,
            usage=out.usage,
            bad=out.bad,
            unknown_types=out.unknown_types,
            lines=1,
        )

    return parse


def _document(chunk: Chunk) -> list[Any] | Parsed:
    """The array, or what to return at once (as ``jsonl.whole_document``, for an array)."""
    stripped = chunk.data.strip()
    if not stripped or not chunk.at_eof:
        return Parsed(consumed=0, state={})
    try:
        value = orjson.loads(stripped)
    except orjson.JSONDecodeError as exc:
        if not stripped.endswith(b"]"):
            return Parsed(consumed=0, state={})  # mid-rewrite: wait for the next version
        bad = BadLine(chunk.base, len(chunk.data), f"unreadable task document: {exc}")
        return Parsed(consumed=len(chunk.data), state={}, bad=[bad], lines=1)
    if isinstance(value, dict):  # a single record (the contract's unknown-type probe)
        value = [value]
    if not isinstance(value, list):
        bad = BadLine(chunk.base, len(chunk.data), "a task document that is not an array")
        return Parsed(consumed=len(chunk.data), state={}, bad=[bad], lines=1)
    return value


PARSERS: Final = {name: _parser(name) for name in ("cline_vscode", "roo", "kilo")}

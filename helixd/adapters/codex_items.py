"""Codex ``response_item`` and ``event_msg`` records mapped onto the spec's event kinds (pure).

``ItemMapper`` is the half of the Codex adapter's per-file parser that turns conversation
records into ``Event``s; ``codex._FileParse`` supplies the plumbing (``emit``, state, usage).
Tool calls join their outputs on ``call_id`` through ``pending`` (call id -> tool name); an
``apply_patch`` call is also an ``edit`` (with the patched paths), a shell call running a
test suite also a ``test_run``, and an output with a non-zero exit code also an ``error``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, Final

import orjson

from helixd.adapters.codex_usage import UsageMapper
from helixd.adapters.fields import dump, get_dict, get_str
from helixd.adapters.toolkinds import (
    describe_call,
    is_test_command,
    patch_line_counts,
    result_failed,
    result_signals,
    retry_of,
    shell_command,
    shorten,
)
from helixd.core.records import Role, SessionInfo
from helixd.core.values import record_type

BODY_LIMIT: Final = 64 * 1024
MAX_PENDING: Final = 256
# Tool-call items and the field holding their arguments.
CALL_ITEMS: Final = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "tool_search_call": "arguments",
    "web_search_call": "action",
    "image_generation_call": "revised_prompt",
}
CALL_TOOLS: Final = {
    "local_shell_call": "local_shell",
    "tool_search_call": "tool_search",
    "web_search_call": "web_search",
    "image_generation_call": "image_generation",
}
OUTPUT_ITEMS: Final = frozenset(
    {"function_call_output", "custom_tool_call_output", "tool_search_output",
     "local_shell_call_output", "mcp_tool_call_output"}
)  # fmt: skip
SILENT_ITEMS: Final = frozenset({"ghost_snapshot"})
# What Codex hands the model when the user declines an approval prompt (its human denials
# are normalized to exactly these): the call was rejected, not failed.
DENIALS: Final = frozenset({"exec command rejected by user", "patch rejected by user"})
INJECTED: Final = (
    "# AGENTS.md", "<environment_context>", "<INSTRUCTIONS>", "<user_instructions>",
    "<permissions instructions>", "<collaboration_mode>", "<turn_aborted>", "<skill>",
    "<subagent_notification>", "<goal_context>", "<codex_internal_context",
    "<recommended_plugins>", "<user_shell_command>",
)  # fmt: skip
EVENT_KINDS: Final = {
    "task_started": "lifecycle",
    "task_complete": "completion",
    "turn_aborted": "human_intervention",
    "error": "error",
    "stream_error": "retry",
    "warning": "lifecycle",
    "context_compacted": "lifecycle",
    "thread_name_updated": "lifecycle",
    "entered_review_mode": "lifecycle",
    "exited_review_mode": "lifecycle",
    "collab_agent_spawn_end": "lifecycle",
    "thread_rolled_back": "lifecycle",
    "undo_completed": "lifecycle",
}
# event_msg types that echo a response_item or only drive the UI: known, not events.
ECHO_EVENTS: Final = frozenset({
    "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
    "agent_reasoning_section_break", "exec_command_begin", "exec_command_end",
    "patch_apply_begin", "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end",
    "web_search_begin", "web_search_end", "item_started", "item_completed", "guardian_assessment",
    "collab_agent_spawn_begin", "collab_agent_interaction_begin", "collab_agent_interaction_end",
    "collab_waiting_begin", "collab_waiting_end", "collab_close_begin", "collab_close_end",
    "sub_agent_activity", "image_generation_begin", "image_generation_end",
    "view_image_tool_call", "dynamic_tool_call_request", "dynamic_tool_call_response",
    "thread_settings_applied", "thread_goal_updated", "undo_started", "turn_diff", "plan_update",
    "background_event", "session_configured", "shutdown_complete", "request_user_input",
    "exec_approval_request", "apply_patch_approval_request"
})  # fmt: skip


def texts(blocks: Any) -> str:
    if isinstance(blocks, str):
        return blocks
    parts: list[str] = []
    if isinstance(blocks, list):
        for b in blocks:
            if isinstance(b, dict):
                t = b.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif str(b.get("type", "")).endswith("image"):
                    parts.append("[image]")
            elif isinstance(b, str):
                parts.append(b)
    return "\n".join(parts)


def _exit_status(out: Any, item: Mapping[str, Any]) -> tuple[str, bool]:
    """``(text, failed)`` of a tool output: JSON ``{output, metadata: {exit_code}}``, the
    ``Exit code: N`` / ``Process exited with code N`` headers, ``success``/``isError`` flags."""
    failed = item.get("success") is False
    if isinstance(out, str) and out.startswith('{"output":"') and len(out) > 4096:
        at = out.rfind(',"metadata":', len(out) - 512)  # a big output: skip the second parse
        try:
            meta = orjson.loads(out[at + 12 : -1]) if at > 0 else None
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            piece = out[11 : 4107 if isinstance(code, int) and code != 0 else 1035]
            cut = piece.rfind("\\", len(piece) - 6)
            text = orjson.loads('"' + (piece[:cut] if cut >= 0 else piece) + '"')
        except orjson.JSONDecodeError:
            meta = None
        if isinstance(meta, dict) and isinstance(text, str):
            return text, failed or (isinstance(code, int) and code != 0)
    if isinstance(out, str) and out.startswith("{"):
        try:
            out = orjson.loads(out)
        except orjson.JSONDecodeError:
            pass
    if isinstance(out, dict):
        meta = get_dict(out, "metadata")
        code = meta.get("exit_code", out.get("exit_code"))
        failed = failed or (isinstance(code, int) and code != 0)
        failed = failed or out.get("success") is False or out.get("isError") is True
        text = out.get("output", out.get("content", out.get("text", "")))
        return texts(text) if not isinstance(text, str) else text, failed
    if not isinstance(out, str):
        return texts(out), failed
    head = out[:400]
    for marker in ("Exit code: ", "Process exited with code "):
        at = head.find(marker)
        if at == 0 or (at > 0 and head[at - 1] == "\n" and head.find("Output:") > at):
            digits = head[at + len(marker) :].split(None, 1)[:1]
            failed = failed or (
                bool(digits) and digits[0].lstrip("-").isdigit() and int(digits[0]) != 0
            )
            break
    return out, failed


def _patch_paths(text: str) -> list[str]:
    paths = []
    for line in text.splitlines():
        if line.startswith("*** ") and (": " in line):
            head, _, path = line[4:].partition(": ")
            if head in ("Add File", "Update File", "Delete File", "Move to"):
                paths.append(path.strip())
    return paths


class ItemMapper(UsageMapper):
    """Conversation records -> events.  The subclass provides the attributes and ``emit``."""

    pending: dict[str, str]
    info: dict[str, Any]

    @abstractmethod
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
    ) -> str: ...

    def unknown(self, name: str) -> None:
        self.out.unknown_types[name] = self.out.unknown_types.get(name, 0) + 1

    def worked(self) -> None:
        if self.st.get("turn") == 1:
            self.st["turn"] = 2

    # -- response_item -------------------------------------------------------------------
    def response_item(self, p: Mapping[str, Any]) -> None:
        itype = record_type(p.get("type"), "payload.type")
        if itype == "message":
            self.message(p)
        elif itype == "reasoning":
            text = "\n".join(t for t in (texts(p.get("summary")), texts(p.get("content"))) if t)
            self.worked()
            self.emit(
                "thinking",
                role="assistant",
                summary=shorten(text) or "[reasoning]",
                payload=text.encode("utf-8", "replace") or None,
            )
        elif itype in CALL_ITEMS:
            self.call(str(itype), p)
        elif itype in OUTPUT_ITEMS:
            self.result(p)
        elif itype in ("compaction", "compaction_summary"):
            self.emit("lifecycle", role="system", summary="compaction")
        elif itype == "agent_message":
            text = texts(p.get("content"))
            who = f"{get_str(p, 'author') or '?'} -> {get_str(p, 'recipient') or '?'}"
            self.emit(
                "lifecycle",
                role="system",
                summary=shorten(f"agent message {who}"),
                body=text[:BODY_LIMIT],
            )
        elif itype not in SILENT_ITEMS:
            self.unknown(f"response_item:{itype}")
            self.emit(
                "unknown", role="system", summary=shorten(f"response_item {itype}"), payload=dump(p)
            )

    def message(self, p: Mapping[str, Any]) -> None:
        role, text = p.get("role"), texts(p.get("content"))
        if role == "assistant":
            self.worked()
            self.emit(
                "assistant_msg", role="assistant", summary=shorten(text), body=text[:BODY_LIMIT]
            )
            return
        kind = "lifecycle"
        if role == "user" and not text[:64].lstrip().startswith(INJECTED):
            kind = "human_intervention" if self.st.get("turn") == 2 else "user_msg"
        elif role != "user" and self.st.get("turn") == 2:
            self.st["turn"] = 1  # injected instructions (a resume): the agent starts over
        summary = shorten(text) if kind != "lifecycle" else shorten(f"[{role}] {text}", 120)
        self.emit(
            kind,
            role="user" if role == "user" else "system",
            summary=summary,
            body=text[:BODY_LIMIT],
        )

    def call(self, itype: str, p: Mapping[str, Any]) -> None:
        self.worked()
        tool = get_str(p, "name") or CALL_TOOLS.get(itype, itype)
        args = raw = p.get(CALL_ITEMS[itype])
        if isinstance(args, str) and itype == "function_call" and args[:1] in ("{", "["):
            try:
                args = orjson.loads(args)
            except orjson.JSONDecodeError:
                pass
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
        if call_id:
            self.pending[call_id] = tool
            while len(self.pending) > MAX_PENDING:
                self.pending.pop(next(iter(self.pending)))
        command = shell_command(tool, args)
        patch: str | None = None
        if tool == "apply_patch":
            patch = args if isinstance(args, str) else ""
            if isinstance(args, dict):
                patch = get_str(args, "input") or get_str(args, "patch")
        elif command and "*** Begin Patch" in command:
            patch = command
        paths = _patch_paths(patch) if patch else []
        summary = (
            shorten(f"apply_patch: {', '.join(paths)}") if paths else describe_call(tool, args)
        )
        self.emit(
            "tool_call",
            role="assistant",
            tool=tool,
            call_id=call_id,
            summary=summary,
            body=(command or "")[:BODY_LIMIT],
            payload=dump(raw) if raw is not None else None,
        )
        if retry_of(self.st, call_id, tool, summary):
            self.emit(
                "retry",
                ":retry",
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(f"retry of {summary}"),
            )
        if patch is not None:
            added, removed = patch_line_counts(patch)
            self.emit(
                "edit",
                ":edit",
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(", ".join(paths) or tool),
                body="\n".join(paths),
                lines_added=added,
                lines_removed=removed,
            )
        elif command and is_test_command(command):
            self.emit(
                "test_run",
                ":test",
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(command),
                body=command[:BODY_LIMIT],
            )

    def result(self, p: Mapping[str, Any]) -> None:
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
        tool = self.pending.pop(call_id, None) if call_id else None
        out = p.get("output", p.get("tools"))
        text, failed = _exit_status(out, p)
        rejected = text.strip() in DENIALS
        result_failed(self.st, call_id, failed)
        self.emit(
            "tool_result",
            role="tool",
            tool=tool,
            call_id=call_id,
            summary=shorten(text),
            is_error=failed,
            payload=dump(out) if out is not None else None,
            **result_signals(tool, text, failed=failed, rejected=rejected),
        )
        if rejected:  # the user said no: an intervention, not an error
            self.emit(
                "human_intervention",
                ":human",
                role="user",
                tool=tool,
                call_id=call_id,
                summary=shorten(text),
                body=text,
            )
        elif failed:
            self.emit(
                "error",
                ":error",
                role="tool",
                tool=tool,
                call_id=call_id,
                summary=shorten(text) or f"{tool or 'tool'} failed",
                body=text[:4096],
                is_error=True,
            )

    # -- event_msg -----------------------------------------------------------------------
    def event_msg(self, p: Mapping[str, Any]) -> None:
        etype = record_type(p.get("type"), "payload.type")
        if etype == "token_count":
            self.token_count(p)
        elif isinstance(etype, str) and etype in EVENT_KINDS:
            self.lifecycle(etype, p)
        elif not (isinstance(etype, str) and etype in ECHO_EVENTS):
            self.unknown(f"event_msg:{etype}")

    def lifecycle(self, etype: str, p: Mapping[str, Any]) -> None:
        kind, summary = EVENT_KINDS[etype], etype.replace("_", " ")
        body = get_str(p, "message")
        if etype == "task_started":
            self.st["turn"] = 1
        elif etype in ("task_complete", "turn_aborted"):
            self.st["turn"] = 0
            body = get_str(p, "last_agent_message")
            if etype == "turn_aborted":
                summary = f"turn aborted: {get_str(p, 'reason') or 'interrupted'}"
        elif etype == "thread_name_updated":
            body = get_str(p, "thread_name")
            if body:
                self.info["title"] = body
        elif etype == "collab_agent_spawn_end":
            child = get_str(p, "new_thread_id")
            if child:
                self.out.sessions.append(
                    SessionInfo(
                        uid=f"codex:{child}", agent="codex", native_id=child, parent_uid=self.uid
                    )
                )
            summary = f"spawned agent {get_str(p, 'new_agent_nickname') or child}"
        # the output tokens of the turn's responses (token_count lines) go on the event that
        # ends it: the format reports usage per response, after the items it produced
        ends = etype in ("task_complete", "turn_aborted")
        tokens = int(self.st.pop("turn_out", 0) or 0) if ends else 0
        self.emit(
            kind,
            role="system",
            summary=shorten(summary, 150),
            body=body[:BODY_LIMIT],
            is_error=kind == "error",
            tokens=tokens,
        )
        error = p.get("error") if etype == "task_complete" else None
        if error:
            text = get_str(error, "message") if isinstance(error, dict) else str(error)
            self.emit(
                "error",
                ":error",
                role="system",
                summary=shorten(text or "turn failed"),
                body=text[:4096],
                is_error=True,
            )

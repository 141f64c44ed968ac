"""Claude Code tool blocks: ``tool_use`` in assistant records, ``tool_result`` in user
records, and a subagent's calls copied into the parent's ``agent_progress`` records.

A mixin of ``claude._FileParse`` (the per-call parse state): it reads the line being
handled (``obj``) and emits through ``emit``, keeping open calls in ``pending`` (the file's
state carries them across reads, at most ``MAX_PENDING_TOOLS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from helixd.adapters.fields import dump, get_dict, get_str, result_text
from helixd.adapters.toolkinds import (
    describe_call,
    edit_line_counts,
    edited_path,
    is_test_command,
    result_failed,
    result_signals,
    retry_of,
    shell_command,
    shorten,
)
from helixd.core.records import Role

MAX_PENDING_TOOLS: Final = 256
BODY_LIMIT: Final = 64 * 1024
INTERRUPT_MARKERS: Final = ("[Request interrupted by user", "[Request cancelled by user")
REJECTION_MARKERS: Final = (
    "The user doesn't want to proceed",
    "The user doesn't want to take this action",
    "User rejected",
)


class _Line(Protocol):
    """What the tool blocks need from the parse state (``claude._FileParse``)."""

    pending: dict[str, str]
    retries: dict[str, Any]
    obj: Mapping[str, Any]
    sidechain: bool
    share: int
    payloads: bool

    def emit(  # ``claude._FileParse.emit``
        self,
        name: str,
        kind: str,
        parent: str | None,
        *,
        role: Role | None = None,
        tool: str | None = None,
        call_id: str | None = None,
        summary: str = "",
        body: str = "",
        payload: bytes | None = None,
        tokens: int = 0,
        is_error: bool = False,
        payload_size: int = 0,
        search_text: str = "",
        lines_added: int = 0,
        lines_removed: int = 0,
        status: str | None = None,
        tests: tuple[str, int, int, int] | None = None,
    ) -> None: ...

    def tool_use(self: _Line, block: Mapping[str, Any], bkey: str, parent: str | None) -> None: ...

    def tool_result(
        self: _Line, block: Mapping[str, Any], bkey: str, parent: str | None
    ) -> None: ...


class ToolBlocks:
    """Tool calls and results of the line being handled (a mixin: ``self`` is the parse
    state, see ``_Line``)."""

    def delegated_tools(self: _Line, data: Mapping[str, Any], key: str) -> None:
        """The tool calls and results of a subagent, copied into this file by
        ``agent_progress`` records, become side-chain events of this session: a test run or
        a failing command the subagent ran then shows in this session's signals (the
        subagent's own file, when there is one, holds them again as its own session's).
        Their usage is never counted (rule C5)."""
        if data.get("type") != "agent_progress":
            return
        content = get_dict(get_dict(data, "message"), "message").get("content")
        if not isinstance(content, list):
            return
        own, self.sidechain = self.sidechain, True
        for i, block in enumerate(content):
            if isinstance(block, dict):
                if block.get("type") == "tool_use":
                    self.tool_use(block, f"{key}#p{i}", f"{key}#0")
                elif block.get("type") == "tool_result":
                    self.tool_result(block, f"{key}#p{i}", f"{key}#0")
        self.sidechain = own

    def tool_use(self: _Line, block: Mapping[str, Any], bkey: str, parent: str | None) -> None:
        tool = str(block.get("name") or "tool")
        args = block.get("input")
        call_id = get_str(block, "id") or None
        if call_id:
            self.pending[call_id] = tool
            while len(self.pending) > MAX_PENDING_TOOLS:
                self.pending.pop(next(iter(self.pending)))
        command = shell_command(tool, args)
        summary = describe_call(tool, args)
        self.emit(
            bkey,
            "tool_call",
            parent,
            role="assistant",
            tool=tool,
            call_id=call_id,
            summary=summary,
            body=(command or "")[:BODY_LIMIT],
            payload_size=self.share if args is not None else 0,
            payload=dump(args) if self.payloads and args is not None else None,
        )
        if retry_of(self.retries, call_id, tool, summary):
            self.emit(
                f"{bkey}:retry",
                "retry",
                bkey,
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(f"retry of {summary}"),
            )
        path = edited_path(tool, args)
        if path is not None:
            added, removed = edit_line_counts(tool, args)
            self.emit(
                f"{bkey}:edit",
                "edit",
                bkey,
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(path),
                body=path,
                lines_added=added,
                lines_removed=removed,
            )
        if command is not None and is_test_command(command):
            self.emit(
                f"{bkey}:test",
                "test_run",
                bkey,
                role="assistant",
                tool=tool,
                call_id=call_id,
                summary=shorten(command),
                body=command,
            )

    def tool_result(self: _Line, block: Mapping[str, Any], bkey: str, parent: str | None) -> None:
        call_id = get_str(block, "tool_use_id") or None
        tool = self.pending.pop(call_id, None) if call_id else None
        content = block.get("content")
        text = result_text(content)
        is_error = bool(block.get("is_error"))
        rejected = bool(self.obj.get("toolDenialKind")) or text.lstrip().startswith(
            REJECTION_MARKERS
        )
        typed = self.obj.get("toolUseResult")
        interrupted = text.startswith(INTERRUPT_MARKERS) or (
            isinstance(typed, dict) and typed.get("interrupted") is True
        )
        result_failed(self.retries, call_id, is_error and not rejected and not interrupted)
        self.emit(
            bkey,
            "tool_result",
            parent,
            role="tool",
            tool=tool,
            call_id=call_id,
            summary=shorten(text),
            is_error=is_error,
            payload_size=self.share if content else 0,
            payload=text.encode("utf-8", "replace") if self.payloads and content else None,
            **result_signals(
                tool, text, failed=is_error, rejected=rejected, interrupted=interrupted
            ),
        )
        if rejected or text.startswith(INTERRUPT_MARKERS):
            self.emit(
                f"{bkey}:human",
                "human_intervention",
                bkey,
                role="user",
                tool=tool,
                call_id=call_id,
                summary=shorten(text),
                body=text[:BODY_LIMIT],
            )
        elif is_error:
            self.emit(
                f"{bkey}:error",
                "error",
                bkey,
                role="tool",
                tool=tool,
                call_id=call_id,
                summary=shorten(text),
                body=text[:4096],
                is_error=True,
            )

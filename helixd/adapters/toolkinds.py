"""Pure classification of tool calls shared by the adapters: edits, test runs, summaries."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from ahocorasick_rs import AhoCorasick

from helixd.core.testcommands import test_runner
from helixd.core.toolnames import EDIT_TOOLS, SHELL_TOOLS
from helixd.core.toolnames import INFRA_TOOLS as INFRA_TOOLS  # re-exported (moved to core)
from helixd.core.toolnames import MCP_PREFIX as MCP_PREFIX
from helixd.core.toolnames import is_infra_tool as is_infra_tool
from helixd.core.values import bounded

if TYPE_CHECKING:
    from helixd.core.testruns import TestCounts

_TEST_COMMAND = re.compile(
    r"(?:^|[\s;&|(/])(?:"
    r"pytest|py\.test|python3? -m (?:pytest|unittest)|tox|nox"
    r"|jest|vitest|mocha|ava|playwright test|cypress run"
    r"|go test|cargo (?:test|nextest)|dotnet test|mvn (?:-\S+ )*test|gradlew? test"
    r"|(?:npm|pnpm|yarn|bun)(?: run)? test|bun test|deno test"
    r"|rspec|phpunit|ctest|make (?:test|check)|swift test|mix test"
    r")(?:$|[\s;&|)])"
)

SUMMARY_CHARS: Final = 200


def shorten(text: str, limit: int = SUMMARY_CHARS) -> str:
    """``text`` with whitespace collapsed, at most ``limit`` characters (only the head of a
    long text, ``2 * limit`` characters, is looked at).

    A long text is first collapsed over a shorter head (``limit * 5 // 4`` characters): the
    collapsed form of a text's head is always the start of the text's own collapsed form
    (its last word may be cut, which is still a start), so when it is already longer than
    ``limit`` it gives the same answer, splitting a third fewer characters (issue 12: a
    third of the 50 000 summaries per 200 MB of transcripts are long tool outputs)."""
    if len(text) > limit:
        part = " ".join(text[: limit + limit // 4].split())
        if len(part) > limit:
            return part[: limit - 1] + "…"
    text = " ".join(text[: limit * 2].split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_test_command(command: str) -> bool:
    """True when a shell command runs a test suite (pytest, jest, go test, …): a cheap
    pattern first, then ``testruns.test_runner`` reads the command's words (so that
    ``grep -r jest .`` or ``pip install pytest`` are not test runs)."""
    return bool(_TEST_COMMAND.search(command)) and test_runner(command) is not None


def shell_command(tool: str, args: Any) -> str | None:
    """The command line of a shell tool call, or None for other tools."""
    if tool not in SHELL_TOOLS or not isinstance(args, dict):
        return None
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list):
        # ["bash", "-lc", "cargo test"]: the script is the command (its words stay together)
        if len(cmd) == 3 and str(cmd[1]) in ("-c", "-lc", "-ic") and isinstance(cmd[2], str):
            return cmd[2]
        cmd = " ".join(str(c) for c in cmd)
    return cmd if isinstance(cmd, str) else None


def edited_path(tool: str, args: Any) -> str | None:
    """The file an edit tool writes, or None when the call is not an edit."""
    if tool not in EDIT_TOOLS or not isinstance(args, dict):
        return None
    for key in ("file_path", "notebook_path", "path", "filePath", "absolute_path"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    return ""


def describe_call(tool: str, args: Any) -> str:
    """A short human-readable summary of a tool call: the command, path or pattern."""
    if isinstance(args, dict):
        for key in (
            "command",
            "cmd",
            "file_path",
            "notebook_path",
            "path",
            "pattern",
            "query",
            "url",
            "description",
            "prompt",
        ):
            value = args.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value:
                return shorten(f"{tool}: {value}")
    elif isinstance(args, str) and args:
        return shorten(f"{tool}: {args}")
    return tool


def _lines(text: Any) -> int:
    if not isinstance(text, str) or not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def edit_line_counts(tool: str, args: Any) -> tuple[int, int]:
    """``(added, removed)`` lines of an edit tool call, from its own input: a replacement
    counts its old and new text, a write counts the whole new content as added."""
    if not isinstance(args, dict):
        return 0, 0
    if isinstance(args.get("edits"), list):  # MultiEdit
        pairs = [e for e in args["edits"] if isinstance(e, dict)]
        return (
            sum(_lines(e.get("new_string")) for e in pairs),
            sum(_lines(e.get("old_string")) for e in pairs),
        )
    if "old_string" in args or "new_string" in args:
        return _lines(args.get("new_string")), _lines(args.get("old_string"))
    for key in ("content", "new_source", "contents"):
        if key in args:
            return _lines(args.get(key)), 0
    return 0, 0


def patch_line_counts(patch: str) -> tuple[int, int]:
    """``(added, removed)`` lines of a unified or ``*** Begin Patch`` diff."""
    added = removed = 0
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


# Ingest reads a tool output for test counts only when its last ``SUMMARY_TAIL`` characters
# hold one of these pieces of a summary line (most outputs hold none: one cheap scan).
SUMMARY_TAIL: Final = 1024
SUMMARY_MARKERS: Final = (
    " passed",
    " failed",
    " passing",
    " errors in",
    " error in",
    " skipped in",
    "no tests ran",
    "Ran ",
    "Tests:",
    "Tests ",
    "--- PASS",
    "--- FAIL",
    "ok  ",
    "FAIL\t",
    "test result:",
    "tests run:",
    "Tests run:",
    " example",
    "OK (",
    "ok | ",
    "FAILED | ",
    " pass\n",
    " fail\n",
    "Failed:",
    "Test summary",
)
_SUMMARY_SEARCH: Final = AhoCorasick(list(SUMMARY_MARKERS))  # one pass for every marker
# Tools whose result is another agent's report or a background command's output: a test
# summary quoted there ("1 failed, 22 passed in 0.72s") is a delegated test run.
DELEGATING_TOOLS: Final = frozenset({"Task", "Agent", "TaskOutput", "BashOutput"})


def result_signals(
    tool: str | None, text: str, *, failed: bool, rejected: bool = False, interrupted: bool = False
) -> dict[str, Any]:
    """The ``status`` of a tool result (rejected by the user before it ran, interrupted
    while it ran, error, success) and, for a shell call (or a call of unknown tool), the
    test counts its output reports: ``{"status": …, "tests": (framework, passed, failed,
    skipped) | None}``, ready to pass to an ``Event``.  Subagent reports and background
    command output (``DELEGATING_TOOLS``) are read for test summaries too."""
    status = (
        "rejected"
        if rejected
        else "interrupted"
        if interrupted
        else "error"
        if failed
        else "success"
    )
    tests = None
    if text and not rejected and (tool is None or tool in SHELL_TOOLS or tool in DELEGATING_TOOLS):
        tail = text[-SUMMARY_TAIL:]
        found = _counts(text) if _SUMMARY_SEARCH.find_matches_as_indexes(tail) else None
        if found is not None:
            tests = (found.runner, found.passed, found.failed, found.skipped)
    return {"status": status, "tests": tests}


def _counts(text: str) -> TestCounts | None:
    """A test summary's counts, when they are counts (an absurd number in an output is
    not a summary: ``parse_counts`` would raise on 5,000 digits, SQLite on 20).  The
    output parsers (28 patterns) load with the first test command's result: ``show`` of a
    session's tail without one never compiles them."""
    from helixd.core.testruns import parse_counts

    try:
        found = parse_counts(text)
    except ValueError:
        return None
    if found is None or not bounded(found.passed, found.failed, found.skipped):
        return None
    return found


RETRY_CALLS: Final = 64  # calls awaiting their result kept in an adapter's state


def retry_of(state: dict[str, Any], call_id: str | None, tool: str, summary: str) -> bool:
    """Whether a tool call repeats the call whose result just failed (same tool, same
    summary: the command or path), as ``helixd.core.signals`` finds retries; notes the
    call so its result can be told.  ``state`` is the adapter's per-file state (a dict of
    JSON values: ``retry_failed``, ``retry_calls``)."""
    failed = state.pop("retry_failed", None)
    if call_id:
        calls: dict[str, list[str]] = state.setdefault("retry_calls", {})
        calls[call_id] = [tool, summary]
        while len(calls) > RETRY_CALLS:
            calls.pop(next(iter(calls)))
    state["retry_last"] = [tool, summary]
    return bool(failed == [tool, summary])


def result_failed(state: dict[str, Any], call_id: str | None, failed: bool) -> None:
    """A tool result: when it failed, the next call repeating its call is a retry."""
    calls: dict[str, list[str]] = state.get("retry_calls", {})
    call = calls.pop(call_id, None) if call_id else None
    if failed:
        state["retry_failed"] = call or state.get("retry_last")


# Hook payloads that report a tool call that ran (Claude Code ``PostToolUse``, Gemini CLI
# ``AfterTool``): the daemon keeps their shell commands and edited paths (Hegel's hook
# activity, ``helixctl tokens --phases``).
TOOL_RAN_HOOKS: Final = frozenset({"PostToolUse", "AfterTool"})


HOOK_TEXT_CHARS: Final = 1 << 16


def hook_activity(payload: Any) -> tuple[str, str | None, str, str] | None:
    """``(tool, call id, "bash" | "edit", command or path)`` of a hook payload reporting a
    shell command or a file edit that ran; None for anything else."""
    if not isinstance(payload, dict):
        return None
    event = payload.get("hook_event_name") or payload.get("hookEventName")
    tool = payload.get("tool_name") or payload.get("toolName")
    if not isinstance(event, str) or event not in TOOL_RAN_HOOKS:
        return None  # a payload is untrusted: a list here must not raise (unhashable)
    if not isinstance(tool, str) or not tool:
        return None
    args = payload.get("tool_input", payload.get("toolInput"))
    call_id = payload.get("tool_use_id") or payload.get("toolUseId")
    call = call_id if isinstance(call_id, str) and call_id else None
    # Whole (up to HOOK_TEXT_CHARS): the caller masks secrets first, then cuts to a summary.
    command = shell_command(tool, args)
    if command:
        return tool, call, "bash", command[:HOOK_TEXT_CHARS]
    path = edited_path(tool, args)
    if path:
        return tool, call, "edit", path[:HOOK_TEXT_CHARS]
    return None

"""Pure classification of tool calls shared by the adapters: edits, test runs, summaries."""

from __future__ import annotations

import re
from typing import Any, Final

EDIT_TOOLS: Final = frozenset(
    {"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "write_file", "replace", "edit"}
)
SHELL_TOOLS: Final = frozenset(
    {
        "Bash",
        "shell",
        "exec_command",
        "local_shell",
        "run_shell_command",
        "bash",
        "run_terminal_cmd",
        # Codex: the current shell tool, the containerised one and the unified exec
        "shell_command",
        "container.exec",
        "unified_exec",
    }
)

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
    long text is looked at)."""
    text = " ".join(text[: limit * 2].split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_test_command(command: str) -> bool:
    """True when a shell command runs a test suite (pytest, jest, go test, …)."""
    return bool(_TEST_COMMAND.search(command))


def shell_command(tool: str, args: Any) -> str | None:
    """The command line of a shell tool call, or None for other tools."""
    if tool not in SHELL_TOOLS or not isinstance(args, dict):
        return None
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list):
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

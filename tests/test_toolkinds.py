"""Tool classification shared by the adapters: every agent's shell tool is recognised."""

from __future__ import annotations

import pytest

from helixd.adapters import toolkinds


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Bash", {"command": "pytest -q"}),  # Claude Code
        ("shell", {"command": ["bash", "-lc", "pytest -q"]}),  # Codex, older
        ("shell_command", {"command": "pytest -q"}),  # Codex, current
        ("exec_command", {"cmd": "pytest -q"}),  # Codex unified exec
        ("unified_exec", {"cmd": "pytest -q"}),
        ("container.exec", {"cmd": ["pytest", "-q"]}),
        ("local_shell", {"command": ["pytest", "-q"]}),
        ("run_shell_command", {"command": "pytest -q"}),  # Gemini CLI
        ("run_terminal_cmd", {"command": "pytest -q"}),  # Grok
    ],
)
def test_every_shell_tool_yields_its_command(tool: str, args: dict[str, object]) -> None:
    command = toolkinds.shell_command(tool, args)
    assert command is not None and command.endswith("pytest -q")
    assert toolkinds.is_test_command(command)


def test_other_tools_are_not_shells() -> None:
    assert toolkinds.shell_command("Read", {"command": "pytest"}) is None
    assert toolkinds.shell_command("shell_command", "pytest") is None  # arguments not an object


def test_edit_line_counts_read_the_tools_own_input() -> None:
    from helixd.adapters.toolkinds import edit_line_counts, patch_line_counts

    assert edit_line_counts("Edit", {"old_string": "a\nb", "new_string": "a\nb\nc\n"}) == (3, 2)
    assert edit_line_counts(
        "MultiEdit",
        {
            "edits": [
                {"old_string": "x", "new_string": "y\nz"},
                {"old_string": "p\nq", "new_string": ""},
            ]
        },
    ) == (2, 3)
    assert edit_line_counts("Write", {"file_path": "f", "content": "1\n2\n3\n"}) == (3, 0)
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-old\n+new\n+more\n*** End Patch\n"
    assert patch_line_counts(patch) == (2, 1)
    assert patch_line_counts("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n") == (1, 1)


def test_hook_activity_reads_only_well_formed_tool_hooks() -> None:
    from helixd.adapters.toolkinds import hook_activity

    ran = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t1"}
    assert hook_activity({**ran, "tool_input": {"command": "make"}}) == (
        "Bash",
        "t1",
        "bash",
        "make",
    )
    edit = {"hook_event_name": "AfterTool", "tool_name": "write_file"}
    assert hook_activity({**edit, "tool_input": {"file_path": "/a.py"}}) == (
        "write_file",
        None,
        "edit",
        "/a.py",
    )
    assert hook_activity({**ran, "hook_event_name": "PreToolUse"}) is None
    for odd in (
        {**ran, "hook_event_name": ["PostToolUse"]},
        {**ran, "tool_name": {"x": 1}},
        {**ran, "tool_input": ["make"]},
        [],
        "x",
    ):
        assert hook_activity(odd) is None

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

"""Tool names by kind, shared by the adapters (classification at ingest) and the read side
(which tools count as shell commands or as the agent's own plumbing): plain data, no
imports, so a read command that needs a name set does not load the adapters."""

from __future__ import annotations

from typing import Final

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
        # Copilot CLI on Windows; Factory Droid
        "powershell",
        "Execute",
        # Goose's developer extension
        "developer__shell",
    }
)

# The infra bucket of spec §11.1 (``HELIX_INFRA_OVERHEAD_SHARE``): calls that serve the agent's
# own plumbing rather than the task — MCP tools (``mcp__*``), and the agents' bookkeeping
# tools: plans and to-do lists, tool and MCP-resource discovery, background-shell handling,
# memory.
MCP_PREFIX: Final = "mcp__"
INFRA_TOOLS: Final = frozenset(
    {
        # Claude Code
        "TodoWrite",
        "TodoRead",
        "ToolSearch",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
        "ExitPlanMode",
        "EnterPlanMode",
        "BashOutput",
        "TaskOutput",
        "KillShell",
        "KillBash",
        # Codex
        "update_plan",
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
        # Gemini CLI
        "write_todos",
        "save_memory",
    }
)


def is_infra_tool(name: str) -> bool:
    return name.startswith(MCP_PREFIX) or name in INFRA_TOOLS

"""Where each agent reads its hooks and what ``helixctl hooks install`` puts there.

Plain data, like the registry: the caller passes the home directory, the environment and the
absolute path of ``helixctl``; nothing here reads a file.  The generic editors in
``helixd/hooks/`` apply these targets without naming an agent (see docs/operations.md and
ecosystem.md §1.7).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

Kind = Literal["json", "owned", "toml-argv", "json-entry", "toml-entry", "script"]


@dataclass(frozen=True)
class HookTarget:
    """One file to edit for one agent.

    ``json``: merge ``groups`` (event name -> one matcher group) into a settings file of the
    shape ``{"hooks": {event: [group, ...]}}``.  ``owned``: a file Helix owns entirely
    (install writes it, uninstall deletes it).  ``toml-argv``: a top-level argv array ``key``
    in a TOML file, set to ``argv``; an existing program is chained after ``chain_flag``.
    ``json-entry`` / ``toml-entry``: one object (a table) ``value`` at the key path ``keys``
    (an MCP server, the status line); Helix's is recognised by its command running
    ``helixctl <marker>``, anything else there is left alone and refused.  An ``owned`` file
    with a ``value`` is that whole document (an agent whose hook files have their own shape).
    ``script``: an executable file Helix owns (``text``, mode ``mode``), named by the agent's
    event; it is Helix's when its second line is :data:`SCRIPT_MARK`, anything else at that
    path is refused (install) or left alone (uninstall).
    """

    agent: str
    kind: Kind
    path: Path
    root: Path  # the agent's config directory: absent means the agent is not installed
    groups: tuple[tuple[str, dict[str, Any]], ...] = ()
    argv: tuple[str, ...] = ()
    key: str = ""
    chain_flag: str = "--then"
    only_if_exists: bool = False
    comments: bool = False  # the agent's own parser accepts comments (JSONC)
    note: str = ""  # told to the user after an install that changed the file
    keys: tuple[str, ...] = ()
    value: dict[str, Any] | None = None
    marker: str = ""
    text: str = ""
    mode: int = 0o600  # of a file install creates


def _dir(value: str, home: Path) -> Path:
    value = value.strip()
    if value == "~" or value.startswith("~/"):
        return home / value[2:]
    return Path(value)


def _cmd(exe: str, *args: str) -> str:
    return " ".join(shlex.quote(a) for a in (exe, *args))


def _group(command: str, matcher: str | None = None, **handler: Any) -> dict[str, Any]:
    group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
    group["hooks"] = [{"type": "command", "command": command, **handler}]
    return group


def claude(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """``$CLAUDE_CONFIG_DIR`` (its first directory) or ``~/.claude``: ``settings.json``."""
    dirs = [d for d in env.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    root = _dir(dirs[0], home) if dirs else home / ".claude"
    cmd = _cmd(exe, "hook", "claude")
    groups = (
        ("SessionStart", _group(cmd, timeout=5)),
        ("Stop", {"hooks": [{"type": "command", "command": cmd, "async": True, "timeout": 10}]}),
        ("SessionEnd", _group(cmd, timeout=5)),
    )
    return (HookTarget("claude", "json", root / "settings.json", root, groups=groups),)


def codex(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """``notify`` in ``$CODEX_HOME/config.toml`` (chained), and ``hooks.json`` where present
    (Codex >= 0.145 fires SessionStart, Stop and SessionEnd there)."""
    homes = [d for d in env.get("CODEX_HOME", "").split(",") if d.strip()]
    root = _dir(homes[0], home) if homes else home / ".codex"
    cmd = _cmd(exe, "hook", "codex")
    groups = (
        ("SessionStart", _group(cmd, matcher="startup|resume|clear", timeout=5)),
        ("Stop", _group(cmd, timeout=5)),
        ("SessionEnd", _group(cmd, timeout=3)),
    )
    return (
        HookTarget(
            "codex",
            "toml-argv",
            root / "config.toml",
            root,
            argv=(exe, "hook", "codex-notify"),
            key="notify",
        ),
        HookTarget(
            "codex",
            "json",
            root / "hooks.json",
            root,
            groups=groups,
            only_if_exists=True,
            note="Codex runs new hooks only once trusted: open /hooks in Codex and trust them",
        ),
    )


def grok(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """Grok Build merges every ``$GROK_HOME/hooks/*.json``: Helix owns ``helix.json``."""
    base = env.get("GROK_HOME", "").strip()
    root = _dir(base, home) if base else home / ".grok"
    cmd = _cmd(exe, "hook", "grok")
    groups = tuple(
        (event, _group(cmd, timeout=5)) for event in ("SessionStart", "Stop", "SessionEnd")
    )
    return (HookTarget("grok", "owned", root / "hooks" / "helix.json", root, groups=groups),)


def gemini(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """``$GEMINI_CLI_HOME/.gemini/settings.json`` (else ``~/.gemini``); named ``helix-*``
    handlers, timeouts in milliseconds.  The CLI accepts comments in this file."""
    base = env.get("GEMINI_CLI_HOME", "").strip()
    root = (_dir(base, home) if base else home) / ".gemini"
    cmd = _cmd(exe, "hook", "gemini")
    groups = tuple(
        (event, {"hooks": [{"name": name, "type": "command", "command": cmd, "timeout": 3000}]})
        for event, name in (
            ("SessionStart", "helix-session-start"),
            ("AfterAgent", "helix-after-agent"),
            ("SessionEnd", "helix-session-end"),
        )
    )
    return (
        HookTarget("gemini", "json", root / "settings.json", root, groups=groups, comments=True),
    )


def droid(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """Factory Droid: Claude Code's hook shape (events, matcher groups, timeouts in seconds)
    under ``hooks`` in ``~/.factory/settings.json`` (docs.factory.ai, hooks reference)."""
    root = home / ".factory"
    cmd = _cmd(exe, "hook", "droid")
    groups = tuple(
        (event, _group(cmd, timeout=5)) for event in ("SessionStart", "Stop", "SessionEnd")
    )
    return (
        HookTarget(
            "droid",
            "json",
            root / "settings.json",
            root,
            groups=groups,
            note="Droid reads the hooks in settings.json only while ~/.factory/hooks.json is"
            " absent",
        ),
    )


def qwen(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """Qwen Code: ``hooks`` in ``$QWEN_HOME/settings.json`` (else ``~/.qwen``), Claude Code's
    event names with named handlers and timeouts in milliseconds (qwen-code docs, hooks)."""
    base = env.get("QWEN_HOME", "").strip()
    root = _dir(base, home) if base else home / ".qwen"
    cmd = _cmd(exe, "hook", "qwen")
    groups = tuple(
        (event, {"hooks": [{"type": "command", "command": cmd, "name": name, "timeout": 5000}]})
        for event, name in (
            ("SessionStart", "helix-session-start"),
            ("Stop", "helix-stop"),
            ("SessionEnd", "helix-session-end"),
        )
    )
    return (HookTarget("qwen", "json", root / "settings.json", root, groups=groups),)


def copilot(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """GitHub Copilot CLI loads every ``$COPILOT_HOME/hooks/*.json`` (else ``~/.copilot``):
    Helix owns ``helix.json``, ``{"version": 1, "hooks": {event: [handler]}}`` with
    ``bash`` commands and ``timeoutSec``.  The PascalCase event names select the payload with
    ``hook_event_name``, ``session_id`` and ``transcript_path`` (github/docs, Copilot CLI
    hooks reference and configuration directory reference)."""
    base = env.get("COPILOT_HOME", "").strip()
    root = _dir(base, home) if base else home / ".copilot"
    cmd = _cmd(exe, "hook", "copilot")
    handler = {"type": "command", "bash": cmd, "timeoutSec": 5}
    doc = {"version": 1, "hooks": {e: [handler] for e in ("SessionStart", "Stop", "SessionEnd")}}
    return (HookTarget("copilot", "owned", root / "hooks" / "helix.json", root, value=doc),)


SCRIPT_MARK: Final = "# helix: installed by `helixctl hooks install`; removed by `hooks uninstall`"


def _script(exe: str, agent: str) -> str:
    return f"#!/bin/sh\n{SCRIPT_MARK}\nexec {_cmd(exe, 'hook', agent)}\n"


def cline_cli(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """The Cline SDK (CLI 3.x) runs every file named after an event, any of a few script
    extensions, in ``$CLINE_DIR/hooks`` (else ``~/.cline/hooks``), with the event's JSON on
    stdin (cline/cline ``sdk/packages/core/src/hooks/hook-file-config.ts``,
    ``hook-file-hooks.ts``, ``sdk/packages/shared/src/storage/paths.ts``).  Helix owns one
    ``.sh`` script per event: ``TaskStart``, ``TaskComplete`` and ``SessionShutdown``."""
    base = env.get("CLINE_DIR", "").strip()
    root = _dir(base, home) if base else home / ".cline"
    text = _script(exe, "cline-cli")
    return tuple(
        HookTarget(
            "cline-cli", "script", root / "hooks" / f"{event}.sh", root, text=text, mode=0o700
        )
        for event in ("TaskStart", "TaskComplete", "SessionShutdown")
    )


def kiro(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """Kiro (CLI v3 harness, IDE 1.x) runs the hook files in ``~/.kiro/hooks/`` in every
    workspace: ``{"version": "v1", "hooks": [{name, trigger, action{type, command},
    timeout, enabled}]}`` (kiro.dev/docs/cli/v3/hooks, changelog CLI 2.13 "Global Hooks").
    Helix owns ``helix.json`` with a ``SessionStart`` and a ``Stop`` command."""
    root = home / ".kiro"
    cmd = _cmd(exe, "hook", "kiro")
    hooks = [
        {
            "name": name,
            "trigger": trigger,
            "action": {"type": "command", "command": cmd},
            "timeout": 5,
            "enabled": True,
        }
        for name, trigger in (("helix-session-start", "SessionStart"), ("helix-stop", "Stop"))
    ]
    doc = {"version": "v1", "hooks": hooks}
    return (HookTarget("kiro", "owned", root / "hooks" / "helix.json", root, value=doc),)


def _claude_root(home: Path, env: Mapping[str, str]) -> Path:
    dirs = [d for d in env.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    return _dir(dirs[0], home) if dirs else home / ".claude"


def statusline_target(home: Path, env: Mapping[str, str], exe: str) -> HookTarget:
    """Claude Code's ``statusLine`` in its user settings: ``exe`` is the ``helix-statusline``
    executable (the line ``helixctl statusline`` prints, without loading the whole CLI)."""
    root = _claude_root(home, env)
    value = {"type": "command", "command": _cmd(exe), "padding": 0}
    return HookTarget(
        "claude",
        "json-entry",
        root / "settings.json",
        root,
        keys=("statusLine",),
        value=value,
        marker="statusline",
    )


def claude_mcp(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """A user-scope MCP server: ``mcpServers.helix`` in ``.claude.json`` (in the home
    directory, or in ``$CLAUDE_CONFIG_DIR``), where ``claude mcp add --scope user`` puts it."""
    dirs = [d for d in env.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    path = _dir(dirs[0], home) / ".claude.json" if dirs else home / ".claude.json"
    value = {"type": "stdio", "command": exe, "args": ["mcp"]}
    return (
        HookTarget(
            "claude",
            "json-entry",
            path,
            _claude_root(home, env),
            keys=("mcpServers", "helix"),
            value=value,
            marker="mcp",
        ),
    )


def codex_mcp(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """``[mcp_servers.helix]`` in ``$CODEX_HOME/config.toml``."""
    homes = [d for d in env.get("CODEX_HOME", "").split(",") if d.strip()]
    root = _dir(homes[0], home) if homes else home / ".codex"
    value = {"command": exe, "args": ["mcp"]}
    return (
        HookTarget(
            "codex",
            "toml-entry",
            root / "config.toml",
            root,
            keys=("mcp_servers", "helix"),
            value=value,
            marker="mcp",
        ),
    )


def gemini_mcp(home: Path, env: Mapping[str, str], exe: str) -> tuple[HookTarget, ...]:
    """``mcpServers.helix`` in Gemini's user ``settings.json``."""
    base = env.get("GEMINI_CLI_HOME", "").strip()
    root = (_dir(base, home) if base else home) / ".gemini"
    value = {"command": exe, "args": ["mcp"]}
    return (
        HookTarget(
            "gemini",
            "json-entry",
            root / "settings.json",
            root,
            keys=("mcpServers", "helix"),
            value=value,
            marker="mcp",
            comments=True,
        ),
    )


TargetsFor = Callable[[Path, Mapping[str, str], str], tuple[HookTarget, ...]]

MCP_TARGETS: dict[str, TargetsFor] = {
    "claude": claude_mcp,
    "codex": codex_mcp,
    "gemini": gemini_mcp,
}

TARGETS: dict[str, TargetsFor] = {
    "claude": claude,
    "codex": codex,
    "grok": grok,
    "gemini": gemini,
    "droid": droid,
    "qwen": qwen,
    "copilot": copilot,
    "cline-cli": cline_cli,
    "kiro": kiro,
}


def hook_agent(named: str | None, payload: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """Which agent a hook message really comes from.  Grok Build also runs the hooks in
    Claude Code's settings, so a message sent by the Claude entry inside a Grok session is
    relabelled: Grok sets ``GROK_*`` variables and writes camelCase payloads
    (ecosystem.md §1.3)."""
    if any(k.startswith("GROK_") for k in env) or (
        "hookEventName" in payload and "sessionId" in payload
    ):
        return "grok"
    return named

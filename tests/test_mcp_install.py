"""Issue 14: ``helixctl mcp install|uninstall|status`` and ``hooks install --statusline`` edit
the agents' settings like ``hooks install``: strict parse, backup, atomic replace,
``--dry-run`` diff, exact removal (the real CLI, in process, in a temporary HOME)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from helixd.cli.main import main
from tests.cli_runner import CliRunner, Result

EXE = "/opt/helix/bin/helixctl"
AGENT_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GROK_HOME", "GEMINI_CLI_HOME", "XDG_STATE_HOME")
CLAUDE_JSON = {
    "numStartups": 41,
    "projects": {"/work/app": {"allowedTools": [], "history": []}},
    "mcpServers": {"github": {"type": "http", "url": "https://example.invalid/mcp"}},
}
CODEX_TOML = """\
# my codex settings
model = "gpt-5-codex"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # keep this comment

[profiles.fast]
model = "gpt-5-mini"
"""
GEMINI = {"theme": "Dracula", "hooks": {}}

Run = Callable[..., Result]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    for d in (".claude", ".codex", ".gemini"):
        (h / d).mkdir(parents=True)
    (h / ".claude.json").write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    (h / ".codex" / "config.toml").write_text(CODEX_TOML)
    (h / ".gemini" / "settings.json").write_text(json.dumps(GEMINI, indent=2))
    return h


@pytest.fixture
def helixctl(home: Path, tmp_path: Path) -> Run:
    env: dict[str, str | None] = {k: None for k in AGENT_ENV}
    env |= {"HOME": str(home), "HELIX_STATE_DIR": str(tmp_path / "state")}

    def run(*args: str, extra: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(main, [*args, "--helixctl", EXE], env={**env, **(extra or {})})

    return run


def files(home: Path) -> dict[str, bytes]:
    return {p.relative_to(home).as_posix(): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def test_mcp_install_registers_the_server_with_each_agent_and_uninstall_undoes_it(
    home: Path, helixctl: Run
) -> None:
    before = files(home)
    done = helixctl("mcp", "install")
    assert done.exit_code == 0, done.output
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["mcpServers"]["helix"] == {"type": "stdio", "command": EXE, "args": ["mcp"]}
    assert claude["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    assert claude["projects"] == CLAUDE_JSON["projects"]
    codex_text = (home / ".codex" / "config.toml").read_text()
    codex = tomllib.loads(codex_text)
    assert codex["mcp_servers"]["helix"] == {"command": EXE, "args": ["mcp"]}
    assert codex["mcp_servers"]["docs"]["command"] == "npx"
    assert "# keep this comment" in codex_text and "# my codex settings" in codex_text
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini["mcpServers"] == {"helix": {"command": EXE, "args": ["mcp"]}}
    status = helixctl("mcp", "status")
    assert status.output.count("installed") == 3, status.output

    again = helixctl("mcp", "install")
    assert again.output.count("already installed") == 3
    undone = helixctl("mcp", "uninstall")
    assert undone.exit_code == 0, undone.output
    assert files(home) == before  # byte for byte, the emptied mcpServers of Gemini included
    assert helixctl("mcp", "status").output.count("absent") == 3


def test_mcp_install_dry_run_writes_nothing(home: Path, helixctl: Run) -> None:
    before = files(home)
    dry = helixctl("mcp", "install", "codex", "--dry-run")
    assert dry.exit_code == 0
    assert "+[mcp_servers.helix]" in dry.output and f'+command = "{EXE}"' in dry.output
    assert files(home) == before


def test_a_users_own_helix_entry_is_refused_and_nothing_is_written(
    home: Path, helixctl: Run
) -> None:
    doc = dict(CLAUDE_JSON, mcpServers={"helix": {"command": "/usr/bin/helix-other"}})
    (home / ".claude.json").write_text(json.dumps(doc))
    before = files(home)
    refused = helixctl("mcp", "install")
    assert refused.exit_code == 2
    assert "already set to something else" in refused.output and "nothing was written" in (
        refused.output
    )
    assert files(home) == before
    (home / ".claude.json").write_text("{not json")
    assert helixctl("mcp", "install", "claude").exit_code == 2


def test_statusline_is_set_up_and_removed_exactly(home: Path, helixctl: Run) -> None:
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"model":"opus"}')
    before = files(home)
    done = helixctl("hooks", "install", "claude", "--statusline")
    assert done.exit_code == 0, done.output
    doc = json.loads(settings.read_text())
    line = EXE.replace("helixctl", "helix-statusline")
    assert doc["statusLine"] == {"type": "command", "command": line, "padding": 0}
    assert doc["hooks"]["Stop"] and doc["model"] == "opus"
    assert "statusLine" in helixctl("hooks", "status", "claude").output
    assert helixctl("hooks", "uninstall", "claude").exit_code == 0
    assert files(home) == before


def test_a_users_own_statusline_is_kept(home: Path, helixctl: Run) -> None:
    settings = home / ".claude" / "settings.json"
    mine = {"statusLine": {"type": "command", "command": "~/.claude/my-line.sh"}}
    settings.write_text(json.dumps(mine, indent=2) + "\n")
    refused = helixctl("hooks", "install", "claude", "--statusline")
    assert refused.exit_code == 2 and "statusLine" in refused.output
    assert json.loads(settings.read_text()) == mine
    # without the flag, hooks install and uninstall leave it alone
    assert helixctl("hooks", "install", "claude").exit_code == 0
    assert helixctl("hooks", "uninstall", "claude").exit_code == 0
    assert json.loads(settings.read_text()) == mine

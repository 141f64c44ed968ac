"""The example config documents every registered agent, with the defaults the code uses."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from helixd import config
from helixd.adapters import Adapter
from helixd.adapters.registry import REGISTRY
from tests.conftest import REPO

EXAMPLE = REPO / "helixd" / "data" / "helix.example.toml"


def test_every_registered_agent_has_a_table() -> None:
    tables = tomllib.loads(EXAMPLE.read_text())["agents"]
    assert sorted(tables) == sorted(a.name for a in REGISTRY)
    for name, table in tables.items():
        assert table == {"enabled": True, "roots": []}, name


@pytest.mark.parametrize("adapter", REGISTRY, ids=lambda a: a.name)
def test_example_roots_are_the_adapters_defaults(
    adapter: Adapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HELIX_STORE_DB", raising=False)
    settings = config.load(EXAMPLE)
    pairs = config.agent_roots(settings, [adapter], {}, tmp_path)
    assert [root for _, root in pairs] == adapter.default_roots({}, tmp_path)


@pytest.mark.parametrize(
    ("name", "documented"),
    [
        ("claude", [".claude/projects", ".config/claude/projects"]),
        ("codex", [".codex/sessions", ".codex/archived_sessions"]),
        ("gemini", [".gemini/tmp"]),
        ("grok", [".grok/sessions"]),
        # issue 16 part B
        ("copilot", [".copilot/session-state"]),
        ("pi", [".pi/agent/sessions"]),
        ("cline-cli", [".cline/data/sessions"]),
        ("continue", [".continue/sessions"]),
        ("openhands", [".openhands"]),
        ("qwen", [".qwen/projects"]),
        ("droid", [".factory/sessions"]),
        ("amp", [".local/share/amp/threads"]),
    ],
)
def test_the_comments_name_the_real_default_roots(
    name: str, documented: list[str], tmp_path: Path
) -> None:
    adapter = next(a for a in REGISTRY if a.name == name)
    assert adapter.default_roots({}, tmp_path) == [tmp_path / d for d in documented]
    text = EXAMPLE.read_text()
    for d in documented:
        assert f"~/{d}" in text

"""Issue 14: shell completion — the scripts, and session ids, agents and repos completed from
a real store through the real ``helixctl`` (click's completion protocol)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helixd.adapters.registry import REGISTRY
from tests.conftest import FIXTURES, RunCli

HELIXCTL = str(Path(sys.executable).parent / "helixctl")
SESSION = "claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a"


@pytest.fixture
def store(home: Path, helixctl: RunCli) -> RunCli:
    helixctl("ingest", "--agent", "claude", "--root", str(FIXTURES / "claude"), "--json")
    return helixctl


def complete(run: RunCli, words: str, shell: str = "bash") -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {
        **run.env,  # type: ignore[attr-defined]
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
        "_HELIXCTL_COMPLETE": f"{shell}_complete",
    }
    done = subprocess.run([HELIXCTL], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    if shell == "bash":
        return [line.split(",", 1)[1] for line in done.stdout.splitlines() if line]
    return done.stdout.splitlines()


def test_session_ids_are_completed_from_the_store(store: RunCli) -> None:
    assert complete(store, "helixctl lookup 1af7") == [SESSION]
    assert complete(store, "helixctl show claude:1af7") == [SESSION]
    assert SESSION in complete(store, "helixctl analyze --all claude:1")
    zsh = complete(store, "helixctl env 1af7", shell="zsh")
    assert zsh[:2] == ["plain", SESSION]  # zsh: type, value, help (the session's title)


def test_agents_repos_and_commands(store: RunCli) -> None:
    named_c = [a.name for a in REGISTRY if a.name.startswith("c")]  # in registry order
    assert complete(store, "helixctl sessions --agent c") == named_c
    assert {"claude", "codex"} <= set(named_c)
    repos = complete(store, "helixctl report daily --repo /Users/schrockn")
    assert repos and all(r.startswith("/Users/schrockn") for r in repos)
    assert {"mcp", "statusline", "completion", "show"} <= set(complete(store, "helixctl "))


def test_without_a_store_nothing_is_completed_and_nothing_fails(helixctl: RunCli) -> None:
    assert complete(helixctl, "helixctl lookup 1af7") == []
    named_g = [a.name for a in REGISTRY if a.name.startswith("g")]
    assert complete(helixctl, "helixctl search x --agent g") == named_g


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_scripts(helixctl: RunCli, shell: str) -> None:
    script = helixctl("completion", shell).stdout
    assert "_HELIXCTL_COMPLETE" in script and f"{shell}_complete" in script

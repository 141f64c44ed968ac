"""Issue 14 (kept through issue 12's move to argparse): shell completion — the scripts, and
session ids, agents and repos completed from a real store through the real ``helixctl``
console script, asked the way the shell asks (argcomplete's protocol: ``_ARGCOMPLETE``,
``COMP_LINE`` and ``COMP_POINT`` in the environment; the answer in a file)."""

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


def complete(run: RunCli, line: str, tmp: Path, shell: str = "bash") -> list[str]:
    answer = tmp / "completions.txt"
    env = {
        **run.env,  # type: ignore[attr-defined]
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_SHELL": shell,
        "_ARGCOMPLETE_IFS": "\n",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
    }
    done = subprocess.run([HELIXCTL], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [word.rstrip() for word in answer.read_text().split("\n") if word]


def test_session_ids_are_completed_from_the_store(store: RunCli, tmp_path: Path) -> None:
    assert complete(store, "helixctl lookup 1af7", tmp_path) == [SESSION]  # the bare id
    assert complete(store, "helixctl show claude:1af7", tmp_path) == [SESSION]
    assert SESSION in complete(store, "helixctl analyze --all claude:1", tmp_path)
    zsh = complete(store, "helixctl env 1af7", tmp_path, shell="zsh")
    assert [z.split(":")[0] for z in zsh] == ["claude\\"]  # zsh: value (colons escaped):help
    assert zsh[0].startswith(SESSION.replace(":", "\\:"))


def test_agents_repos_and_commands(store: RunCli, tmp_path: Path) -> None:
    named_c = [a.name for a in REGISTRY if a.name.startswith("c")]  # in registry order
    assert complete(store, "helixctl sessions --agent c", tmp_path) == named_c
    assert {"claude", "codex"} <= set(named_c)
    repos = complete(store, "helixctl report daily --repo /Users/schrockn", tmp_path)
    assert repos and all(r.startswith("/Users/schrockn") for r in repos)
    commands = set(complete(store, "helixctl ", tmp_path))
    assert {"mcp", "statusline", "completion", "show"} <= commands
    assert complete(store, "helixctl show --form", tmp_path) == ["--format"]


def test_without_a_store_nothing_is_completed_and_nothing_fails(
    helixctl: RunCli, tmp_path: Path
) -> None:
    assert complete(helixctl, "helixctl lookup 1af7", tmp_path) == []
    named_g = [a.name for a in REGISTRY if a.name.startswith("g")]
    assert complete(helixctl, "helixctl search x --agent g", tmp_path) == named_g


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_scripts(helixctl: RunCli, shell: str) -> None:
    script = helixctl("completion", shell).stdout
    assert "_ARGCOMPLETE_SHELL" in script and "helixctl" in script and shell in script

"""Issue 16: ``helixctl hooks install|uninstall`` for the new agents that have a hook file
Helix can edit strictly and reversibly — Factory Droid (``~/.factory/settings.json``, Claude
Code's shape) and Qwen Code (``~/.qwen/settings.json``, named handlers, milliseconds) — and
the installed command, run as the agent would run it, reaching a real daemon's socket."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helixd.cli.main import main
from tests.cli_runner import CliRunner, Result
from tests.conftest import FIXTURES
from tests.daemon_helpers import Helixd, stored_digest, wait_for

EXE = "/opt/helix/bin/helixctl"
DROID = (
    '{\n  "model": "claude-sonnet-4-5",\n  "autonomyLevel": "auto-medium",\n  "hooks": {\n'
    '    "PostToolUse": [\n      {\n        "matcher": "Edit|Create",\n        "hooks": [\n'
    '          {\n            "type": "command",\n            "command": "prettier -w ."\n'
    "          }\n        ]\n      }\n    ]\n  }\n}\n"
)
QWEN = '{"model":{"name":"qwen3-coder-plus"},"tools":{"sandbox":false}}'
Run = Callable[..., Result]


@pytest.fixture
def cli(tmp_path: Path) -> Run:
    home = tmp_path / "home"
    env: dict[str, str | None] = {"HOME": str(home), "HELIX_STATE_DIR": str(tmp_path / "st")}
    env["QWEN_HOME"] = None

    def run(*args: str, exe: str = EXE) -> Result:
        return CliRunner().invoke(main, [*args, "--helixctl", exe], env=env)

    return run


def seed(home: Path) -> dict[str, bytes]:
    (home / ".factory").mkdir(parents=True)
    (home / ".qwen").mkdir()
    (home / ".factory" / "settings.json").write_text(DROID)
    (home / ".qwen" / "settings.json").write_text(QWEN)
    return files(home)


def files(home: Path) -> dict[str, bytes]:
    return {p.relative_to(home).as_posix(): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def test_droid_and_qwen_round_trip_byte_for_byte(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = seed(home)
    result = cli("hooks", "install", "droid", "qwen")
    assert result.exit_code == 0, result.output
    droid = json.loads((home / ".factory" / "settings.json").read_text())
    assert droid["hooks"]["PostToolUse"] == json.loads(DROID)["hooks"]["PostToolUse"]
    assert list(droid) == ["model", "autonomyLevel", "hooks"]  # key order kept
    for event in ("SessionStart", "Stop", "SessionEnd"):
        assert droid["hooks"][event][-1]["hooks"] == [
            {"type": "command", "command": f"{EXE} hook droid", "timeout": 5}
        ]
    assert "~/.factory/hooks.json is absent" in result.output
    raw = (home / ".qwen" / "settings.json").read_text()
    assert len(raw.strip().splitlines()) == 1  # a compact file stays compact
    qwen = json.loads(raw)
    assert qwen["model"] == {"name": "qwen3-coder-plus"}
    assert qwen["hooks"]["SessionEnd"][0]["hooks"][0] == {
        "type": "command",
        "command": f"{EXE} hook qwen",
        "name": "helix-session-end",
        "timeout": 5000,
    }
    again = cli("hooks", "install", "droid", "qwen")
    assert again.exit_code == 0 and again.output.count("already installed") == 2
    assert cli("hooks", "uninstall", "droid", "qwen").exit_code == 0
    assert files(home) == before


def test_a_malformed_droid_or_qwen_file_is_refused_and_left_alone(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    for path in (home / ".factory" / "settings.json", home / ".qwen" / "settings.json"):
        path.write_text('{"hooks": {"Stop": [')
    before = files(home)
    for agent in ("droid", "qwen"):
        result = cli("hooks", "install", agent)
        assert result.exit_code != 0
        assert "settings.json" in result.output
    assert files(home) == before


def test_installed_hook_commands_reach_the_daemon(daemon: Helixd, home: Path) -> None:
    """The command the install wrote, run by a shell with the payload on stdin as Droid and
    Qwen run it, makes the daemon read the named transcript at once."""
    (home / ".factory").mkdir()
    (home / ".qwen").mkdir()
    exe = str(Path(sys.executable).with_name("helixctl"))
    env = {**daemon.env, "HELIX_STATE_DIR": str(home / "state")}
    env.pop("QWEN_HOME", None)
    installed = subprocess.run(
        [exe, "hooks", "install", "droid", "qwen", "--helixctl", exe],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    droid_file = home / ".factory" / "sessions" / "-tmp-p" / "droid_s1.jsonl"
    droid_file.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "droid" / "droid_s1.jsonl", droid_file)
    qwen_src = next((FIXTURES / "qwen" / "fixture-project" / "chats").glob("*.jsonl"))
    qwen_file = home / ".qwen" / "projects" / "p" / "chats" / qwen_src.name
    qwen_file.parent.mkdir(parents=True)
    shutil.copy(qwen_src, qwen_file)
    daemon.start()
    for agent, path, sid in (
        ("droid", droid_file, "droid_s1"),
        ("qwen", qwen_file, "019f0000-0000-7000-8000-000000000001"),
    ):
        config = home / (".factory" if agent == "droid" else ".qwen") / "settings.json"
        command = json.loads(config.read_text())["hooks"]["SessionEnd"][-1]["hooks"][0]["command"]
        assert shlex.split(command) == [exe, "hook", agent]
        # SessionEnd: only the hook closes the session at once (the watcher would read the
        # file too, but leaves the session open until it idles)
        payload = {"session_id": sid, "transcript_path": str(path), "hook_event_name": "SessionEnd"}
        ran = subprocess.run(
            command, shell=True, input=json.dumps(payload).encode(), env=daemon.env, timeout=30
        )
        assert ran.returncode == 0

        def closed(uid: str = f"{agent}:{sid}") -> bool:
            d = stored_digest(daemon.db, uid)
            return d is not None and d["closed_by"] == "session end"

        wait_for(closed, 15, f"the {agent} session closed by its hook")

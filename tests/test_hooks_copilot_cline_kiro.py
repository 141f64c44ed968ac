"""``helixctl hooks install|uninstall`` for GitHub Copilot CLI (a Helix-owned
``~/.copilot/hooks/helix.json``), the Cline SDK/CLI (Helix-owned executable scripts in
``~/.cline/hooks/``) and Kiro (a Helix-owned ``~/.kiro/hooks/helix.json``), and the installed
commands, run as each agent runs them, reaching a real daemon over its real socket."""

from __future__ import annotations

import json
import shutil
import stat
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
AGENTS = ("copilot", "cline-cli", "kiro")
USER_COPILOT_HOOK = (
    '{\n  "version": 1,\n  "hooks": {\n    "agentStop": [\n'
    '      {"type": "command", "bash": "notify-send done", "timeoutSec": 5}\n    ]\n  }\n}\n'
)
USER_CLINE_HOOK = "#!/usr/bin/env bash\ncat >/dev/null\necho '{}'\n"
Run = Callable[..., Result]


@pytest.fixture
def cli(tmp_path: Path) -> Run:
    home = tmp_path / "home"
    env: dict[str, str | None] = {"HOME": str(home), "HELIX_STATE_DIR": str(tmp_path / "st")}
    env.update(COPILOT_HOME=None, CLINE_DIR=None)

    def run(*args: str, exe: str = EXE) -> Result:
        return CliRunner().invoke(main, [*args, "--helixctl", exe], env=env)

    return run


def seed(home: Path) -> dict[str, tuple[bytes, int]]:
    """Each agent's config directory with a hook file of the user's own beside Helix's."""
    (home / ".copilot" / "hooks").mkdir(parents=True)
    (home / ".copilot" / "hooks" / "mine.json").write_text(USER_COPILOT_HOOK)
    (home / ".cline" / "hooks").mkdir(parents=True)
    (home / ".cline" / "hooks" / "PreToolUse").write_text(USER_CLINE_HOOK)
    (home / ".cline" / "hooks" / "PreToolUse").chmod(0o755)
    (home / ".kiro").mkdir()
    return files(home)


def files(home: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(home).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in home.rglob("*")
        if p.is_file()
    }


def test_install_writes_each_agents_own_shape(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    result = cli("hooks", "install", *AGENTS)
    assert result.exit_code == 0, result.output
    copilot = json.loads((home / ".copilot" / "hooks" / "helix.json").read_text())
    assert copilot["version"] == 1
    assert set(copilot["hooks"]) == {"SessionStart", "Stop", "SessionEnd"}
    assert copilot["hooks"]["SessionEnd"] == [
        {"type": "command", "bash": f"{EXE} hook copilot", "timeoutSec": 5}
    ]
    kiro = json.loads((home / ".kiro" / "hooks" / "helix.json").read_text())
    assert kiro["version"] == "v1"
    assert [(h["trigger"], h["action"]) for h in kiro["hooks"]] == [
        ("SessionStart", {"type": "command", "command": f"{EXE} hook kiro"}),
        ("Stop", {"type": "command", "command": f"{EXE} hook kiro"}),
    ]
    for event in ("TaskStart", "TaskComplete", "SessionShutdown"):
        script = home / ".cline" / "hooks" / f"{event}.sh"
        assert script.read_text().splitlines()[-1] == f"exec {EXE} hook cline-cli"
        assert stat.S_IMODE(script.stat().st_mode) == 0o700
    for owned in (
        home / ".copilot" / "hooks" / "helix.json",
        home / ".kiro" / "hooks" / "helix.json",
    ):
        assert stat.S_IMODE(owned.stat().st_mode) == 0o600


def test_round_trip_is_byte_exact_and_install_idempotent(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = seed(home)
    assert cli("hooks", "install", *AGENTS).exit_code == 0
    installed = files(home)
    again = cli("hooks", "install", *AGENTS)
    assert again.exit_code == 0 and again.output.count("already installed") == 5, again.output
    assert files(home) == installed  # nothing rewritten, no mode changed
    status = cli("hooks", "status")
    assert status.exit_code == 0
    out = cli("hooks", "uninstall", *AGENTS)
    assert out.exit_code == 0, out.output
    assert files(home) == before
    assert not (home / ".kiro" / "hooks").exists()  # the directory install created is gone
    assert (home / ".copilot" / "hooks").is_dir()  # the user's was kept


def test_a_stale_helix_entry_is_replaced(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    assert cli("hooks", "install", *AGENTS, exe="/old/helixctl").exit_code == 0
    result = cli("hooks", "install", *AGENTS)
    assert result.exit_code == 0 and "already installed" not in result.output
    assert f"exec {EXE} hook cline-cli" in (home / ".cline/hooks/TaskStart.sh").read_text()
    assert "/old/" not in (home / ".copilot/hooks/helix.json").read_text()


def test_a_helix_file_left_with_a_loose_mode_gets_its_own_mode_again(
    cli: Run, tmp_path: Path
) -> None:
    """Files Helix owns are written with Helix's mode even when a left-over copy (an older
    install, a restore) had another: 0600 for a hooks document, 0700 for a script."""
    home = tmp_path / "home"
    seed(home)
    assert cli("hooks", "install", *AGENTS, exe="/old/helixctl").exit_code == 0
    owned = {
        home / ".copilot/hooks/helix.json": 0o600,
        home / ".kiro/hooks/helix.json": 0o600,
        home / ".cline/hooks/TaskStart.sh": 0o700,
    }
    for path in owned:
        path.chmod(0o755 if path.suffix == ".sh" else 0o644)
    assert cli("hooks", "install", *AGENTS).exit_code == 0
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in owned} == owned


def test_malformed_owned_file_is_refused_and_nothing_is_written(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    for agent, path in (
        ("copilot", home / ".copilot" / "hooks" / "helix.json"),
        ("kiro", home / ".kiro" / "hooks" / "helix.json"),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"version": 1, "hooks": {')
        before = files(home)
        result = cli("hooks", "install", *AGENTS)
        assert result.exit_code == 2, result.output
        assert str(path) in result.output and agent in result.output
        assert "nothing was written" in result.output
        assert files(home) == before
        path.unlink()


def test_a_cline_script_of_the_users_own_is_refused_then_kept(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    theirs = home / ".cline" / "hooks" / "TaskComplete.sh"
    theirs.write_text(USER_CLINE_HOOK)
    before = files(home)
    result = cli("hooks", "install", "cline-cli")
    assert result.exit_code == 2
    assert "TaskComplete.sh is a hook of your own" in result.output
    assert files(home) == before
    assert cli("hooks", "uninstall", "cline-cli").exit_code == 0
    assert files(home) == before  # uninstall never deletes a script that is not Helix's


def test_installed_commands_reach_the_daemon(daemon: Helixd, home: Path) -> None:
    """Each installed command, run the way its agent runs it with the agent's payload on
    stdin, is answered over the socket (nothing spooled) and makes the daemon act: Copilot's
    ``SessionEnd`` and Cline's ``session_shutdown`` close the named session at once; Kiro's
    ``Stop`` (no session id in its payload) has the daemon read what changed."""
    for d in (".copilot", ".cline", ".kiro"):
        (home / d).mkdir()
    exe = str(Path(sys.executable).with_name("helixctl"))
    env = {**daemon.env}
    for var in ("COPILOT_HOME", "CLINE_DIR"):
        env.pop(var, None)
    installed = subprocess.run(
        [exe, "hooks", "install", *AGENTS, "--helixctl", exe],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    copilot_sid = "07c40cd0-ff51-4d6e-bdcd-ac2f90877203"
    shutil.copytree(
        FIXTURES / "copilot" / copilot_sid, home / ".copilot" / "session-state" / copilot_sid
    )
    cline_sid = "1784094124598_rruoq"
    shutil.copytree(
        FIXTURES / "cline-cli" / cline_sid, home / ".cline" / "data" / "sessions" / cline_sid
    )
    daemon.start()
    spool = Path(daemon.env["HELIX_STATE_DIR"]) / "hook-spool.ndjson"

    copilot_doc = json.loads((home / ".copilot" / "hooks" / "helix.json").read_text())
    command = copilot_doc["hooks"]["SessionEnd"][0]["bash"]
    payload = {"hook_event_name": "SessionEnd", "session_id": copilot_sid, "reason": "user_exit"}
    ran = subprocess.run(
        ["bash", "-c", command], input=json.dumps(payload).encode(), env=daemon.env, timeout=30
    )
    assert ran.returncode == 0
    script = home / ".cline" / "hooks" / "SessionShutdown.sh"
    cline_payload: dict[str, object] = {
        "hookName": "session_shutdown",
        "taskId": "conv-1",
        "sessionContext": {"rootSessionId": cline_sid},
        "workspaceRoots": [str(home)],
    }
    ran = subprocess.run(
        [str(script)], input=json.dumps(cline_payload).encode(), env=daemon.env, timeout=30
    )
    assert ran.returncode == 0
    for uid in (f"copilot:{copilot_sid}", f"cline-cli:{cline_sid}"):

        def closed(uid: str = uid) -> bool:
            d = stored_digest(daemon.db, uid)
            return d is not None and d["closed_by"] == "session end"

        wait_for(closed, 20, f"{uid} closed by its hook")

    kiro_doc = json.loads((home / ".kiro" / "hooks" / "helix.json").read_text())
    stop = next(h for h in kiro_doc["hooks"] if h["trigger"] == "Stop")
    session = home / ".config/Kiro/User/globalStorage/kiro.kiroagent/workspace-sessions/w"
    session.mkdir(parents=True)
    shutil.copy(FIXTURES / "kiro" / "test-workspace" / "test-session-1.json", session)
    payload = {"hook_event_name": "Stop", "cwd": str(home)}
    ran = subprocess.run(
        ["bash", "-c", stop["action"]["command"]],
        input=json.dumps(payload).encode(),
        env=daemon.env,
        timeout=30,
    )
    assert ran.returncode == 0
    wait_for(lambda: stored_digest(daemon.db, "kiro:test-session-1") is not None, 20, "kiro read")
    assert not spool.exists()  # every message was answered over the socket

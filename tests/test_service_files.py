"""Issue 5, item 4: the systemd units and the launchd plist, rendered for a user, and
``helixctl service install|uninstall|status`` in a temporary HOME."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helixd.cli.main import main
from helixd.ops import service
from tests.cli_runner import CliRunner

REPO = Path(__file__).parent.parent
HELIXD = str(Path(sys.executable).parent / "helixd")  # real and executable: verify checks it


def units(tmp_path: Path, helixd: str = HELIXD) -> dict[str, str]:
    return {f.path.name: f.text for f in service.render("systemd", helixd, tmp_path, {})}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_rendered_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    files = service.render("systemd", HELIXD, tmp_path / "home", {})
    for f in files:
        f.path.parent.mkdir(parents=True, exist_ok=True)
        f.path.write_text(f.text)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    done = subprocess.run(
        ["systemd-analyze", "--user", "verify", *(str(f.path) for f in files)],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path / "home")},
        timeout=30,
    )
    # verify exits 0 on unknown keys and bad values: its warnings on stderr are failures too
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_the_units_carry_the_required_settings(tmp_path: Path) -> None:
    u = units(tmp_path)
    svc = u["helixd.service"].splitlines()
    for line in (
        "Type=notify",
        f"ExecStart={HELIXD}",
        "Restart=on-failure",
        "WatchdogSec=60s",
        "NoNewPrivileges=yes",
        "Requires=helixd.socket",
        "WantedBy=default.target",
    ):
        assert line in svc
    # namespace options break user units where unprivileged user namespaces are blocked
    assert not any(
        line.startswith(("ProtectSystem=", "ProtectHome=", "PrivateTmp=")) for line in svc
    )
    sock = u["helixd.socket"].splitlines()
    for line in ("ListenStream=%t/helix/helixd.sock", "SocketMode=0600", "DirectoryMode=0700"):
        assert line in sock


def test_execstart_quotes_and_escapes_odd_paths() -> None:
    assert service.systemd_exec("/home/a b/bin/helixd") == '"/home/a b/bin/helixd"'
    assert service.systemd_exec("/opt/50%/helixd") == "/opt/50%%/helixd"
    with pytest.raises(ValueError, match="absolute"):
        service.render("systemd", "bin/helixd", Path("/h"), {})


def test_the_plist_loads_and_has_the_required_keys(tmp_path: Path) -> None:
    (f,) = service.render("launchd", "/Users/a&b/venv/bin/helixd", tmp_path, {})
    assert f.path == tmp_path / "Library/LaunchAgents/dev.helix.helixd.plist"
    doc = plistlib.loads(f.text.encode())
    assert doc["Label"] == "dev.helix.helixd"
    assert doc["ProgramArguments"] == ["/Users/a&b/venv/bin/helixd"]
    assert doc["RunAtLoad"] is True
    assert doc["KeepAlive"] == {"SuccessfulExit": False}
    assert doc["ProcessType"] == "Background"
    assert isinstance(doc["ThrottleInterval"], int)
    log = str(tmp_path / "Library/Logs/helix/helixd.log")
    assert doc["StandardOutPath"] == doc["StandardErrorPath"] == log
    template = plistlib.loads((REPO / "helixd/data/launchd/dev.helix.helixd.plist").read_bytes())
    assert template["ProgramArguments"] == ["@HELIXD@"]


def invoke(home: Path, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(
        main, ["service", *args], env={"HOME": str(home), "XDG_CONFIG_HOME": None}
    )
    return r.exit_code, r.output


@pytest.mark.parametrize(
    ("manager", "paths", "commands"),
    [
        (
            "systemd",
            [".config/systemd/user/helixd.socket", ".config/systemd/user/helixd.service"],
            [
                "systemctl --user daemon-reload",
                "systemctl --user enable --now helixd.socket helixd.service",
            ],
        ),
        (
            "launchd",
            ["Library/LaunchAgents/dev.helix.helixd.plist"],
            [f"launchctl bootstrap gui/{os.getuid()} {{home}}/Library/LaunchAgents/"],
        ),
    ],
)
def test_service_install_dry_run_names_the_paths_and_writes_nothing(
    tmp_path: Path, manager: str, paths: list[str], commands: list[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code, out = invoke(home, "install", "--dry-run", "--manager", manager, "--helixd", HELIXD)
    assert code == 0, out
    for p in paths:
        assert f"would write {home / p}" in out
    for c in commands:
        assert "would run: " + c.format(home=home) in out
    assert HELIXD in out
    assert list(home.iterdir()) == []
    code, out = invoke(home, "uninstall", "--dry-run", "--manager", manager)
    assert code == 0 and all(f"absent {home / p}" in out for p in paths)


def test_service_install_without_systemctl_fails_clearly(tmp_path: Path) -> None:
    home, empty = tmp_path / "home", tmp_path / "empty-path"
    home.mkdir()
    empty.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": str(empty)}
    cmd = [sys.executable, "-m", "helixd.cli.main", "service", "install", "--manager", "systemd"]
    done = subprocess.run(
        [*cmd, "--helixd", HELIXD], capture_output=True, text=True, env=env, timeout=30
    )
    assert done.returncode == 2
    assert "systemctl not found" in done.stderr and "Traceback" not in done.stderr
    assert list(home.iterdir()) == []


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="no systemctl here")
def test_service_install_without_a_user_bus_fails_clearly(tmp_path: Path) -> None:
    probe = subprocess.run(
        ["systemctl", "--user", "show-environment"], capture_output=True, timeout=30
    )
    if probe.returncode == 0:
        pytest.skip("a systemd user manager is running: installing would enable a real service")
    home = tmp_path / "home"
    home.mkdir()
    code, out = invoke(home, "install", "--manager", "systemd", "--helixd", HELIXD)
    assert code == 2 and "no systemd user manager" in out
    assert list(home.iterdir()) == []
    code, out = invoke(home, "status", "--manager", "systemd")
    assert code == 0 and f"absent   {home}/.config/systemd/user/helixd.service" in out

"""`helixctl doctor` over a temp HOME: every check runs, failures say how to fix them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helixd.ops import checks as doctor
from tests.conftest import REPO, cli_env
from tests.daemon_helpers import Helixd


def run_doctor(env: dict[str, str]) -> tuple[int, dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "doctor", "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_doctor_with_the_daemon_down_fails_and_says_how_to_fix(home: Path, tmp_path: Path) -> None:
    claude = home / ".claude"
    (claude / "settings.json").write_text('{"cleanupPeriodDays": 7}')
    code, doc = run_doctor(cli_env(home, tmp_path / "s.db"))
    assert code == 1 and doc["ok"] is False
    checks = {c["name"]: c for c in doc["checks"]}  # type: ignore[union-attr]
    assert checks["daemon"]["level"] == "fail" and "service install" in checks["daemon"]["fix"]
    assert checks["socket"]["level"] == "fail"
    assert checks["store"]["level"] == "ok"
    retention = next(c for n, c in checks.items() if n.startswith("retention:"))
    assert retention["level"] == "warn" and "7 days" in retention["message"]
    hooks = [c for n, c in checks.items() if n.startswith("hooks:")]
    assert hooks and all(c["level"] == "warn" and "hooks install" in c["fix"] for c in hooks)


def test_doctor_with_the_daemon_up_passes_those_checks(daemon: Helixd) -> None:
    daemon.start()
    code, doc = run_doctor(daemon.env)
    checks = {c["name"]: c for c in doc["checks"]}  # type: ignore[union-attr]
    assert checks["daemon"]["level"] == "ok" and checks["socket"]["level"] == "ok"
    assert checks["inotify"]["level"] == "ok"
    assert daemon.stop() == 0


def test_inotify_check_compares_directories_with_the_limit(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / "root" / f"d{i}").mkdir(parents=True)
    limit = tmp_path / "limit"
    limit.write_text("6\n")
    check = doctor.inotify([tmp_path / "root"], limit)
    assert check.level == "fail" and "sysctl" in check.fix
    limit.write_text("100\n")
    assert doctor.inotify([tmp_path / "root"], limit).level == "ok"

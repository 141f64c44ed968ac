"""The files a wheel install needs are package data (issue 14: ``service install`` failed
after a non-editable install).  The wheel itself is built, installed into a fresh venv and
run from another directory by ``.ci/wheel`` in CI; this checks the declaration and that the
commands read those files from the package, not from a checkout."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from tests.conftest import REPO, RunCli

DATA = REPO / "helixd" / "data"


def test_every_file_under_helixd_data_is_declared_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["helixd"]
    files = [p.relative_to(REPO / "helixd").as_posix() for p in DATA.rglob("*") if p.is_file()]
    assert len(files) >= 5
    missing = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert missing == []


def test_the_example_config_and_the_hook_script_are_printed_from_the_package(
    helixctl: RunCli,
) -> None:
    assert helixctl("config", "example").stdout == (DATA / "helix.example.toml").read_text()
    assert helixctl("hooks", "script").stdout == (DATA / "helix-hook.sh").read_text()


def test_the_rendered_unit_names_helixd_once_and_keeps_its_comment(
    helixctl: RunCli, tmp_path: Path
) -> None:
    helixd = "/opt/helix tools/bin/helixd"
    out = helixctl(
        "service", "install", "--dry-run", "--manager", "systemd", "--helixd", helixd
    ).stdout
    added = [line[1:] for line in out.splitlines() if line.startswith("+") and "+++" not in line]
    assert '+ExecStart="/opt/helix tools/bin/helixd"' in out
    assert sum(helixd in line for line in added) == 1
    assert "@HELIXD@" not in out and "@LOGDIR@" not in out
    assert any(
        line.startswith("# Helix daemon, systemd user unit, written by `helixctl service install`")
        for line in added
    )

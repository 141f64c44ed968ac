"""Per-project files (Aider, Crush, legacy OpenCode) are found where known sessions ran:
the ``cwd`` of every session in the store, a few ``stat`` calls each, never a crawl."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from helixd.adapters import adapter_named
from helixd.adapters.registry import REGISTRY
from helixd.sources.discover import Discovery, agent_roots, root_pairs
from helixd.sources.gate import Gate
from tests.conftest import REPO, cli_env
from tests.contract_helpers import FIXTURES


class _Conf:
    enabled = True
    roots: list[Path] = []


class _Settings:
    def agent(self, name: str) -> _Conf:
        return _Conf()


def claude_session(home: Path, cwd: Path) -> None:
    project = home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    line = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "11111111-1111-4111-8111-111111111111",
        "cwd": str(cwd),
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hello"},
    }
    (project / "11111111-1111-4111-8111-111111111111.jsonl").write_bytes(orjson.dumps(line) + b"\n")


def ingest(home: Path, db: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest"],
        env=cli_env(home, db),
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()


def test_files_in_a_directory_another_agent_ran_in_are_ingested(tmp_path: Path) -> None:
    home, proj = tmp_path / "home", tmp_path / "work" / "proj"
    proj.mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "aider" / "Aquaticat__Monochromatic" / ".aider.chat.history.md",
        proj / ".aider.chat.history.md",
    )
    (proj / ".crush").mkdir()
    shutil.copyfile(
        FIXTURES / "crush" / "Starmel__OpenSuperWhisper" / ".crush" / "crush.db",
        proj / ".crush" / "crush.db",
    )
    claude_session(home, proj)
    db = tmp_path / "helix.db"
    ingest(home, db)  # learns the cwd
    ingest(home, db)  # looks there
    con = sqlite3.connect(db)
    agents = {a for (a,) in con.execute("SELECT DISTINCT agent FROM sessions")}
    con.close()
    assert {"claude", "aider", "crush"} <= agents


def test_a_project_directory_is_looked_at_not_walked(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    deep = proj / "sub" / "deeper"
    deep.mkdir(parents=True)
    (deep / ".aider.chat.history.md").write_text("# aider chat started at 2026-01-01 00:00:00\n")
    (proj / ".aider.chat.history.md").write_text("# aider chat started at 2026-01-02 00:00:00\n")
    pairs = agent_roots(_Settings(), [adapter_named("aider")], {}, tmp_path, [proj])
    found = [s.path for s in Discovery(pairs)]
    assert found == [str(proj / ".aider.chat.history.md")]  # the nested one is not found


def test_project_directories_are_watched_without_recursion(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    pairs = agent_roots(_Settings(), REGISTRY, {}, tmp_path / "home", [proj])
    watches = dict(Gate(pairs).watches())
    assert watches[str(proj)] is False
    assert watches[str(proj / ".crush")] is False and watches[str(proj / ".opencode")] is False
    opencode = str(tmp_path / "home" / ".local" / "share" / "opencode")
    assert watches[opencode] is False  # its databases lie at its top (max_depth 0)
    assert all(
        recursive
        for path, recursive in watches.items()
        if not path.startswith(str(proj)) and path != opencode
    )


def test_a_root_whose_files_lie_at_its_top_is_not_walked_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenCode's data directory holds its databases at the top and snapshot repositories,
    a legacy JSON tree and logs below: the walk lists the top only, and a new directory
    below is not scanned by the daemon either."""
    import os

    from helixd.sources import discover as discover_mod

    root = tmp_path / "opencode"
    (root / "snapshot" / "objects" / "ab").mkdir(parents=True)
    (root / "storage" / "part" / "msg_1").mkdir(parents=True)
    (root / "storage" / "part" / "msg_1" / "prt_1.json").write_text("{}")
    (root / "opencode.db").write_bytes(b"")
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(discover_mod.os, "scandir", scandir)
    pairs = [(adapter_named("opencode"), root)]
    found = [s.path for s in Discovery(pairs)]
    assert found == [str(root / "opencode.db")]
    assert listed == [str(root)]
    gate = Gate(pairs)
    assert gate.may_hold(str(root)) and not gate.may_hold(str(root / "snapshot"))
    assert dict(gate.watches()) == {str(root): False}


def test_root_pairs_are_agent_roots_with_the_projects_as_text(tmp_path: Path) -> None:
    """The re-scan's roots (``root_pairs``) make no ``Path`` per project: the same roots in
    the same order as ``agent_roots``, a project written as its Path would be, each once."""
    home = tmp_path / "home"
    projects = [
        str(tmp_path / "w" / "a"),
        str(tmp_path / "w" / "b") + "/",
        str(tmp_path / "w") + "//./a",  # the first one again, as a Path writes it
        tmp_path / "w" / "c",
    ]
    pairs = root_pairs(_Settings(), REGISTRY, {}, home, projects)
    as_paths = agent_roots(_Settings(), REGISTRY, {}, home, projects)
    assert [(a.name, os.fspath(r)) for a, r in pairs] == [
        (a.name, os.fspath(r)) for a, r in as_paths
    ]
    aider = [r for a, r in pairs if a.name == "aider"]
    assert aider[-3:] == [str(tmp_path / "w" / n) for n in "abc"]
    assert all(type(r) is str for r in aider[-3:])

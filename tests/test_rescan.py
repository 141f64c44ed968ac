"""``helixctl ingest`` with nothing new answers without the full CLI (helixd/cli_rescan.py),
says exactly what the full ingest says, and steps aside whenever there is work to do."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from helixd.cli.rescan import quick_rescan

from tests.conftest import FIXTURES, REPO, cli_env

HELIXCTL = Path(sys.executable).parent / "helixctl"
SESSION = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


@pytest.fixture
def world(home: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = home / ".claude" / "projects" / "p"
    project.mkdir(parents=True)
    for f in (FIXTURES / "claude" / "d-kimuson__claude-code-viewer").glob("*.jsonl"):
        shutil.copy(f, project)
    env = cli_env(home, tmp_path / "store" / "helix.db")
    run(env, "ingest")
    return project, env


def run(env: dict[str, str], *args: str, console: bool = False) -> str:
    cmd = [str(HELIXCTL)] if console else [sys.executable, "-m", "helixd.cli.main"]
    proc = subprocess.run(
        [*cmd, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    return proc.stdout


def quick(env: dict[str, str]) -> dict[str, object] | None:
    return quick_rescan(env, Path(env["HOME"]))


def without_clock(doc: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in doc.items() if k != "seconds"}


def test_nothing_new_is_answered_quickly_and_alike(world: tuple[Path, dict[str, str]]) -> None:
    _, env = world
    assert quick(env) is not None
    fast = orjson.loads(run(env, "ingest", "--json", console=True))
    full = orjson.loads(run(env, "ingest", "--json"))
    assert without_clock(fast) == without_clock(full)
    assert fast["files"] == 4 and fast["bytes"] == 0 and fast["digests_built"] == 0
    text = run(env, "ingest", console=True)
    assert text.startswith("files 4 (read 0, gone 0), bytes 0,")


def test_any_work_goes_to_the_full_ingest(world: tuple[Path, dict[str, str]]) -> None:
    project, env = world
    with (project / SESSION).open("ab") as f:  # a new line
        f.write(b'{"type":"user","message":{"role":"user","content":"hi"},"uuid":"q1"}\n')
    assert quick(env) is None
    doc = orjson.loads(run(env, "ingest", "--json", console=True))
    assert doc["files_read"] == 1 and doc["bytes"] > 0
    assert quick(env) is not None

    (project / SESSION).unlink()  # a vanished file must be recorded
    assert quick(env) is None
    assert orjson.loads(run(env, "ingest", "--json", console=True))["files_gone"] == 1
    assert quick(env) is not None

    new = project / "agent-new.jsonl"  # a new file
    shutil.copy(FIXTURES / "claude" / "d-kimuson__claude-code-viewer" / SESSION, new)
    assert quick(env) is None
    run(env, "ingest")
    assert quick(env) is not None

    con = sqlite3.connect(env["HELIX_STORE_DB"])  # a session waiting for its digest
    con.execute("UPDATE sessions SET analyzed_at = NULL WHERE id = (SELECT min(id) FROM sessions)")
    con.commit()
    con.close()
    assert quick(env) is None
    assert orjson.loads(run(env, "ingest", "--json", console=True))["digests_built"] == 1
    assert quick(env) is not None


def test_settings_that_change_ingest_go_to_the_full_ingest(
    world: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, env = world
    monkeypatch.setenv("XDG_CONFIG_HOME", env["XDG_CONFIG_HOME"])  # where the config is looked for
    assert quick({**env, "HELIX_INGEST__CHUNK_BYTES": "1MiB"}) is None
    config = Path(env["XDG_CONFIG_HOME"]) / "helix" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[agents.claude]\nenabled = false\n")
    assert quick(env) is None
    config.unlink()
    assert quick({**env, "HELIX_STORE_DB": env["HELIX_STORE_DB"] + ".missing"}) is None
    assert quick(env) is not None

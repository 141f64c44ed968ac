"""``helixctl ingest`` first asks whether there is anything to do (``helixd.ingest.plan``):
with nothing new it answers exactly what the full ingest answers, without starting it, and
any work — a new line, a new or vanished file, a digest due — goes to the full ingest."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from helixd import config
from helixd.adapters.registry import REGISTRY
from helixd.cli.ingest import _ingest
from helixd.ingest.plan import Plan, idle_summary, plan, store_facts
from helixd.readconfig import read_config
from helixd.sources import listings
from helixd.sources.discover import agent_roots
from helixd.store.projects import known_projects
from tests.conftest import FIXTURES, REPO, cli_env

HELIXCTL = Path(sys.executable).parent / "helixctl"
SESSION = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
VERSIONS = {a.name: a.version for a in REGISTRY}


KEEP = "HELIX_RETENTION__RAW_MAX_AGE_DAYS"  # cli_env keeps the old fixtures from the backstop


@pytest.fixture
def world(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, dict[str, str]]:
    project = home / ".claude" / "projects" / "p"
    project.mkdir(parents=True)
    for f in (FIXTURES / "claude" / "d-kimuson__claude-code-viewer").glob("*.jsonl"):
        shutil.copy(f, project)
    env = cli_env(home, tmp_path / "store" / "helix.db")
    for k in [k for k in os.environ if k.startswith(("HELIX_", "CLAUDE_", "CODEX_"))]:
        monkeypatch.delenv(k)
    for k in ("HOME", "HELIX_STORE_DB", "XDG_CONFIG_HOME", "XDG_DATA_HOME", KEEP):
        monkeypatch.setenv(k, env[k])
    run(env, "ingest")
    return project, env


def run(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [str(HELIXCTL), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def first_step(env: dict[str, str]) -> Plan:
    rc = read_config()
    return plan(rc.store_db, agent_roots(rc, REGISTRY, env, Path(env["HOME"])), VERSIONS)


def without_clock(doc: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in doc.items() if k != "seconds"}


def test_nothing_new_is_answered_without_the_full_ingest_and_alike(
    world: tuple[Path, dict[str, str]],
) -> None:
    _, env = world
    step = first_step(env)
    assert step.idle and step.files_seen == 4
    rc = read_config()
    pairs = agent_roots(rc, REGISTRY, env, Path(env["HOME"]))
    settings = config.load()
    # an idle sweep skips the retention pass (nothing was added): so does this full one
    full = asyncio.run(_ingest(settings, pairs, config.price_table(settings), evict=False))
    quick = idle_summary(step, rc.store_db, pairs, 0.0)
    assert without_clock(quick) == without_clock(full)
    assert orjson.loads(run(env, "ingest", "--json"))["bytes"] == 0
    assert run(env, "ingest").startswith("files 4 (read 0, gone 0), bytes 0,")


def test_any_work_goes_to_the_full_ingest(world: tuple[Path, dict[str, str]]) -> None:
    project, env = world
    with (project / SESSION).open("ab") as f:  # a new line
        f.write(b'{"type":"user","message":{"role":"user","content":"hi"},"uuid":"q1"}\n')
    assert first_step(env).reason.endswith("changed")
    doc = orjson.loads(run(env, "ingest", "--json"))
    assert doc["files_read"] == 1 and doc["bytes"] > 0
    assert first_step(env).idle

    (project / SESSION).unlink()  # a vanished file must be recorded
    assert first_step(env).reason.endswith("vanished")
    assert orjson.loads(run(env, "ingest", "--json"))["files_gone"] == 1
    assert first_step(env).idle

    new = project / "agent-new.jsonl"  # a new file
    shutil.copy(FIXTURES / "claude" / "d-kimuson__claude-code-viewer" / SESSION, new)
    assert first_step(env).reason.startswith("new file")
    run(env, "ingest")
    assert first_step(env).idle

    con = sqlite3.connect(env["HELIX_STORE_DB"])  # a session waiting for its digest
    con.execute("UPDATE sessions SET analyzed_at = NULL WHERE id = (SELECT min(id) FROM sessions)")
    con.commit()
    con.close()
    assert first_step(env).reason == "digests are due"
    assert orjson.loads(run(env, "ingest", "--json"))["digests_built"] == 1
    assert first_step(env).idle

    con = sqlite3.connect(env["HELIX_STORE_DB"])  # a migration not applied yet
    con.execute("DELETE FROM migrations WHERE name = (SELECT max(name) FROM migrations)")
    con.commit()
    con.close()
    assert first_step(env).reason == "the store needs a migration"


def test_kept_listings_change_no_answer_of_the_first_step(
    world: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk's kept listings (``helixd.sources.listings``) spare the directories, never
    a file's stat: a line appended and a new file are found as without them."""
    monkeypatch.setattr(listings, "RACY_NS", 0)  # the fixture's directories were just made
    project, env = world
    rc = read_config()
    pairs = agent_roots(rc, REGISTRY, env, Path(env["HOME"]))
    cache = tmp_path / "cache" / "listings.json"

    def step() -> Plan:
        return plan(rc.store_db, pairs, VERSIONS, cache)

    assert step().idle and cache.exists()
    again = step()  # from the kept listings
    assert again.idle and again.files_seen == 4
    time.sleep(0.05)  # past a coarse clock tick: the changes below show in the times
    with (project / SESSION).open("ab") as f:
        f.write(b'{"type":"user","message":{"role":"user","content":"hi"},"uuid":"q1"}\n')
    assert step().reason.endswith("changed")
    run(env, "ingest")
    assert step().idle
    shutil.copy(project / SESSION, project / "agent-new.jsonl")
    assert step().reason.startswith("new file")


def test_the_first_step_follows_the_configured_roots(world: tuple[Path, dict[str, str]]) -> None:
    project, env = world
    cfg = Path(env["XDG_CONFIG_HOME"]) / "helix" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[agents.claude]\nenabled = false\n")
    with (project / SESSION).open("ab") as f:
        f.write(b'{"type":"user","message":{"role":"user","content":"hi"},"uuid":"q2"}\n')
    step = first_step(env)
    assert step.idle and step.files_seen == 0  # claude is off: its new line is not work
    assert orjson.loads(run(env, "ingest", "--json"))["files_read"] == 0
    cfg.write_text(f"[agents.claude]\nroots = [{str(project.parent)!r}]\n")
    assert not first_step(env).idle


COUNT_CONNECTS = (
    "import sys\n"
    "opened = []\n"
    "sys.addaudithook(lambda e, a: opened.append(a[0]) if e == 'sqlite3.connect' else None)\n"
    "from helixd.cli.main import main\n"
    "main(['ingest', '--json'])\n"
    "print(len([p for p in opened if 'helix.db' in str(p)]), file=sys.stderr)\n"
)


def test_a_rescan_with_nothing_new_opens_the_store_once(world: tuple[Path, dict[str, str]]) -> None:
    """The cursors, the store's state and the project directories are read on one read-only
    connection (each open parses the store's schema again)."""
    _, env = world
    done = subprocess.run(
        [sys.executable, "-c", COUNT_CONNECTS],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["files_read"] == 0
    assert done.stderr.split()[-1] == "1", done.stderr[-2000:]
    rc = read_config()
    facts = store_facts(rc.store_db, VERSIONS)
    assert not isinstance(facts, Plan)
    assert facts["projects"] == known_projects(rc.store_db) != []

"""Issue 12: ``status``'s survey of the roots is kept between runs and used only while
nothing it depended on changed (``helixd.sources.surveycache``): real files in a temp HOME,
the real adapters' rules, compared with a fresh walk every time."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters.registry import REGISTRY
from helixd.readconfig import AgentRoots, ReadConfig
from helixd.sources.discover import agent_roots, survey
from helixd.sources.surveycache import cached_survey
from tests.conftest import copy_claude_fixtures


def _rc(home: Path) -> ReadConfig:
    return ReadConfig(path=home / "config.toml", store_db=home / "helix.db")


def _walk(rc: ReadConfig, home: Path, env: dict[str, str]) -> dict[str, Any]:
    return survey(agent_roots(rc, REGISTRY, env, home))


def _cached(rc: ReadConfig, home: Path, env: dict[str, str], cache: Path) -> dict[str, Any]:
    return cached_survey(rc, env, home, [], cache)


def _mark(cache: Path) -> None:
    """Make the kept answer recognisable: a hit returns 999 files, a walk the real count."""
    doc = orjson.loads(cache.read_bytes())
    doc["survey"]["files"] = 999
    cache.write_bytes(orjson.dumps(doc))


def _settle() -> None:
    """Past the racy window: a change now gets a later ctime than the one recorded."""
    time.sleep(0.05)


@pytest.fixture
def corpus(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_claude_fixtures(home)
    monkeypatch.setattr("helixd.sources.surveycache.RACY_NS", 0)
    return home


def test_a_kept_survey_is_used_until_a_file_appears_or_goes(corpus: Path, tmp_path: Path) -> None:
    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    rc = _rc(home)
    first = _cached(rc, home, env, cache)
    assert first == _walk(rc, home, env) and first["files"] > 0
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    _mark(cache)
    assert _cached(rc, home, env, cache)["files"] == 999  # nothing changed: no walk
    _settle()
    project = next(p for p in (home / ".claude" / "projects").iterdir() if p.is_dir())
    new = project / "00000000-0000-4000-8000-000000000001.jsonl"
    new.write_text('{"type":"user"}\n')
    grown = _cached(rc, home, env, cache)
    assert grown == _walk(rc, home, env) and grown["files"] == first["files"] + 1
    _mark(cache)
    _settle()
    new.unlink()
    assert _cached(rc, home, env, cache) == first


def test_a_changed_root_directory_or_variable_walks_again(corpus: Path, tmp_path: Path) -> None:
    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    rc = _rc(home)
    first = _cached(rc, home, env, cache)
    _mark(cache)
    _settle()
    (home / ".codex" / "sessions").mkdir(parents=True)  # an agent's root appears
    assert _cached(rc, home, env, cache) == first
    _mark(cache)
    moved = {**env, "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")}  # read by the adapter
    assert _cached(rc, home, moved, cache) == _walk(rc, home, moved) != first
    _mark(cache)
    configured = ReadConfig(
        path=rc.path, store_db=rc.store_db, agents={"claude": AgentRoots(enabled=False)}
    )
    assert _cached(configured, home, env, cache) == _walk(configured, home, env)


def test_a_chmod_of_a_directory_walks_again(corpus: Path, tmp_path: Path) -> None:
    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    rc = _rc(home)
    first = _cached(rc, home, env, cache)
    _mark(cache)
    _settle()
    project = next(p for p in (home / ".claude" / "projects").iterdir() if p.is_dir())
    project.chmod(0o700)  # the ctime moves, the mtime does not
    assert _cached(rc, home, env, cache) == first


def test_a_root_reached_through_a_new_link_walks_again(corpus: Path, tmp_path: Path) -> None:
    """An ancestor of the roots replaced by a link to the same tree: every directory keeps
    its ctime, only the roots' real paths tell (checked one ``lstat`` per shared prefix)."""
    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    rc = _rc(home)
    first = _cached(rc, home, env, cache)
    _mark(cache)
    assert _cached(rc, home, env, cache)["files"] == 999
    (home / ".claude").rename(home / ".claude-real")
    (home / ".claude").symlink_to(home / ".claude-real")
    assert _cached(rc, home, env, cache) == first  # walked: not the marked answer


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_file_made_unreadable_walks_again(corpus: Path, tmp_path: Path) -> None:
    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    rc = _rc(home)
    _cached(rc, home, env, cache)
    _mark(cache)
    victim = next((home / ".claude" / "projects").rglob("*.jsonl"))
    victim.chmod(0)
    try:
        now = _cached(rc, home, env, cache)
        assert now == _walk(rc, home, env) and now["unreadable"]["files"] == 1
    finally:
        victim.chmod(0o600)


def test_nothing_is_kept_when_it_could_not_be_checked(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory changed in the last two seconds (its next change may keep the same
    ctime), or a link under a root (its target can change unseen): walked every time."""
    copy_claude_fixtures(home)
    cache, env = tmp_path / "cache" / "survey.json", {"HOME": str(home)}
    rc = _rc(home)
    assert _cached(rc, home, env, cache) == _walk(rc, home, env)
    assert not cache.exists()  # the fixtures were copied just now
    monkeypatch.setattr("helixd.sources.surveycache.RACY_NS", 0)
    (home / ".claude" / "projects" / "link").symlink_to(tmp_path)
    assert _cached(rc, home, env, cache) == _walk(rc, home, env)
    assert not cache.exists()


def test_a_damaged_cache_is_walked_over(corpus: Path, tmp_path: Path) -> None:
    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    rc = _rc(home)
    first = _cached(rc, home, env, cache)
    for junk in (b"{", b"[]", b'{"key": 1}', cache.read_bytes()[:100]):
        cache.write_bytes(junk)
        assert _cached(rc, home, env, cache) == first


def test_a_project_file_appearing_walks_again_other_files_there_do_not(
    corpus: Path, tmp_path: Path
) -> None:
    """A project directory is looked into for the agents' files only (Aider's history,
    Crush's database): another file there (a busy ``/tmp``) keeps the survey."""
    from helixd.adapters.declared.aider import FILE

    home, cache, env = corpus, tmp_path / "cache" / "survey.json", {"HOME": str(corpus)}
    project = tmp_path / "project"
    project.mkdir()
    rc = _rc(home)

    def walk() -> dict[str, Any]:
        return survey(agent_roots(rc, REGISTRY, env, home, [str(project)]))

    first = cached_survey(rc, env, home, [str(project)], cache)
    assert first == walk()
    _mark(cache)
    _settle()
    (project / "notes.txt").write_text("not an agent's file")
    assert cached_survey(rc, env, home, [str(project)], cache)["files"] == 999
    (project / FILE).write_text("# aider chat started at 2025-01-01 10:00:00\n")
    grown = cached_survey(rc, env, home, [str(project)], cache)
    assert grown == walk() and grown["files"] == first["files"] + 1

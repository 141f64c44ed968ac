"""The real ``helixctl`` over a HOME holding all four agents in their default places (issue 3,
item 5; issue 2, items 5 and 6).

One temporary HOME gets real fixture files where each agent writes them:

* Claude Code: ``~/.claude/projects/<mangled cwd>/<session>.jsonl``;
* Codex CLI: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` **and** the same rollout in
  ``~/.codex/archived_sessions/`` (it must count once);
* Gemini CLI: ``~/.gemini/tmp/<project hash>/chats/session-*.json``;
* Grok: ``~/.grok/sessions/<url-encoded cwd>/<session uuid>/{updates,events}.jsonl, …``.

``helixctl ingest --json`` runs once as a subprocess (no ``--root``: the adapters' default
roots under ``HOME``), then ``lookup`` by ``agent:<id>``, bare id and unique prefix,
``sessions --agent``, and a second ``ingest`` that must read nothing.  Expected token totals
are the golden numbers of each adapter's own test module (worked out from the files).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters.registry import REGISTRY
from tests.conftest import FIXTURES, REPO, cli_env, run_helixctl

Run = Callable[..., subprocess.CompletedProcess[str]]

CLAUDE_SID = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
CODEX_SID = "019c8a4c-ed82-79a1-aa28-7738fc5ab61a"
CODEX_FILE = f"rollout-2026-02-23T12-40-23-{CODEX_SID}.jsonl"
GEMINI_SID = "1593ed60-014f-4810-ad21-854a87108a6b"
GEMINI_FILE = "session-2025-12-31T01-49-1593ed60.json"
GROK_SID = "019f7000-0000-7000-8000-00000000a001"
GROK_OTHER = "019f6851-7ec4-7ef0-97d3-03f3eee38755"
GROK_CWD = "%2Fhome%2Fdev%2Fshop"
GROK_OTHER_CWD = "%2Ftmp%2Fas-agent-lab%2Fgrok%2Fproject"

# (input, output, cache read, cache write, reasoning) per session, from the golden tests:
EXPECTED: dict[str, tuple[int, int, int, int, int]] = {
    # test_claude_golden GOLDEN: (93, 953, 103219, 12698), no reasoning split for Claude
    f"claude:{CLAUDE_SID}": (93, 953, 103219, 12698, 0),
    # test_codex GOLDEN: non-cached input 367673, cached 6836352, output 36075, reasoning 17896
    f"codex:{CODEX_SID}": (367673, 36075, 6836352, 0, 17896),
    # test_gemini: input - cached + tool = 3671+848+7130+1296, output + thoughts = 590,
    # cached 15239, thoughts 424
    f"gemini:{GEMINI_SID}": (3671 + 848 + 7130 + 1296, 147 + 281 + 88 + 74, 15239, 0, 424),
    # test_grok: 3 facts, input 5100, output 340, cache read 19900, reasoning 120
    f"grok:{GROK_SID}": (5100, 340, 19900, 0, 120),
}
CODEX_RESPONSES = 81  # token_count lines whose total advanced (test_codex GOLDEN)


def build_home(home: Path) -> dict[str, list[Path]]:
    """Copy one or two real sessions of each agent where the agent itself writes them."""
    claude = home / ".claude/projects/-home-dev-viewer"
    claude.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude/d-kimuson__claude-code-viewer" / f"{CLAUDE_SID}.jsonl", claude)

    codex_src = FIXTURES / "codex/sessions/2026/02/23" / CODEX_FILE
    day = home / ".codex/sessions/2026/02/23"
    archive = home / ".codex/archived_sessions"
    for d in (day, archive):
        d.mkdir(parents=True)
        shutil.copy(codex_src, d)
    (home / ".codex/auth.json").write_text('{"OPENAI_API_KEY": "sk-never-read"}')
    (home / ".codex/history.jsonl").write_text('{"session_id":"x","text":"never read"}\n')

    project_hash = hashlib.sha256(b"/home/dev/cosmic").hexdigest()
    chats = home / ".gemini/tmp" / project_hash / "chats"
    chats.mkdir(parents=True)
    shutil.copy(FIXTURES / "gemini/mischa-thisness__M-Gemini/chats" / GEMINI_FILE, chats)
    (home / ".gemini/tmp" / project_hash / "logs.json").write_text("[]")

    grok = home / ".grok/sessions"
    shutil.copytree(FIXTURES / "grok/constructed" / GROK_CWD / GROK_SID, grok / GROK_CWD / GROK_SID)
    shutil.copytree(
        FIXTURES / "grok/jazzyalex__agent-sessions" / GROK_OTHER_CWD / GROK_OTHER,
        grok / GROK_OTHER_CWD / GROK_OTHER,
    )
    (home / ".grok/auth.json").write_text('{"token": "never-read"}')
    return {
        "claude": [claude / f"{CLAUDE_SID}.jsonl"],
        "codex": [day / CODEX_FILE, archive / CODEX_FILE],
        "gemini": [chats / GEMINI_FILE],
        "grok": [p for p in grok.rglob("*") if p.is_file()],
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A HOME with the four agents, the CLI bound to it, and the first ingest's summary."""
    base = tmp_path_factory.mktemp("agents")
    home = base / "home"
    files = build_home(home)
    env = cli_env(home, base / "store" / "helix.db")

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_helixctl(args, env, check)

    first = orjson.loads(run("ingest", "--json").stdout)
    return {"home": home, "files": files, "run": run, "first": first}


def lookup(world: dict[str, Any], query: str) -> dict[str, Any]:
    proc = world["run"]("lookup", query, "--json")
    digest: dict[str, Any] = orjson.loads(proc.stdout)
    return digest


def test_first_ingest_reads_every_agent_from_its_default_root(world: dict[str, Any]) -> None:
    s, home, files = world["first"], world["home"], world["files"]
    assert s["roots"] == sorted(
        str(home / r)
        for r in (
            ".claude/projects",
            ".codex/archived_sessions",
            ".codex/sessions",
            ".gemini/tmp",
            ".grok/sessions",
        )
    )
    every = [p for group in files.values() for p in group]
    assert s["files"] == len(every) == s["files_read"]  # auth/history/logs files not claimed
    assert s["bytes"] == sum(p.stat().st_size for p in every)
    assert s["errors"] == [] and s["malformed_lines"] == 1  # the one truncated Grok update
    # claude 1 + codex 1 (two copies) + gemini 1 + grok 2 (plus a001's fork parent, which
    # is only named: it has no events and is not counted here)
    assert s["sessions"] == 5
    assert s["digests_built"] >= 5


@pytest.mark.parametrize("uid", sorted(EXPECTED))
def test_lookup_by_uid_shows_the_agent_and_its_tokens(world: dict[str, Any], uid: str) -> None:
    d = lookup(world, uid)
    agent, _, native = uid.partition(":")
    assert d["session_uid"] == uid
    assert d["flavor"] == agent
    assert d["native_session_id"] == native
    c = d["cost"]
    got = (
        c["input_tokens"],
        c["output_tokens"],
        c["cache_read_tokens"],
        c["cache_write_tokens"],
        c["reasoning_tokens"],
    )
    assert got == EXPECTED[uid]
    assert d["event_count"] > 0 and d["first_prompt"]


@pytest.mark.parametrize("uid", sorted(EXPECTED))
def test_lookup_by_bare_id_and_by_unique_prefix(world: dict[str, Any], uid: str) -> None:
    native = uid.partition(":")[2]
    assert lookup(world, native)["session_uid"] == uid
    prefix = {"grok": native[:6]}.get(uid.partition(":")[0], native[:8])  # grok: 019f70
    assert lookup(world, prefix)["session_uid"] == uid
    assert lookup(world, uid[: len(uid.partition(":")[0]) + 1 + len(prefix)])["session_uid"] == uid


def test_codex_rollout_and_its_archived_copy_count_once(world: dict[str, Any]) -> None:
    d = lookup(world, f"codex:{CODEX_SID}")
    assert d["usage"]["responses"] == CODEX_RESPONSES
    assert d["markers"]["source_files"] == 2
    assert d["model"] == "gpt-5.3-codex"
    from tests.test_codex import GOLDEN

    assert d["kind_counts"] == dict(sorted(GOLDEN[CODEX_SID][5].items()))  # no event twice


def test_ambiguous_prefix_lists_the_candidates(world: dict[str, Any]) -> None:
    proc = world["run"]("lookup", "019f", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "ambiguous" in proc.stderr
    assert f"grok:{GROK_SID}" in proc.stderr and f"grok:{GROK_OTHER}" in proc.stderr
    missing = world["run"]("lookup", "codex:ffffffff", check=False)
    assert missing.returncode == 1 and "no session matches" in missing.stderr


def test_sessions_filtered_by_agent(world: dict[str, Any]) -> None:
    rows = orjson.loads(world["run"]("sessions", "--agent", "codex", "--json").stdout)
    assert [(r["uid"], r["agent"]) for r in rows] == [(f"codex:{CODEX_SID}", "codex")]
    every = orjson.loads(world["run"]("sessions", "--json").stdout)
    assert {r["uid"] for r in every} >= set(EXPECTED)
    assert {r["agent"] for r in every} == {"claude", "codex", "gemini", "grok"}
    started = [r["started_at"] for r in every]
    assert started == sorted(started, reverse=True)  # newest first


def test_second_ingest_reads_nothing(world: dict[str, Any]) -> None:
    again = orjson.loads(world["run"]("ingest", "--json").stdout)
    assert again["bytes"] == 0 and again["files_read"] == 0
    assert again["files"] == world["first"]["files"]
    assert again["digests_built"] == 0


def test_unknown_agent_is_a_usage_error(world: dict[str, Any]) -> None:
    proc = world["run"]("ingest", "--agent", "unknown", check=False)
    assert proc.returncode == 2
    assert "unknown agent 'unknown'" in proc.stderr
    known = proc.stderr.split("(known: ", 1)[1]  # says which names exist
    assert all(a.name in known for a in REGISTRY)
    assert proc.stdout == ""


def test_ingest_of_one_agent_reads_only_its_roots(tmp_path: Path) -> None:
    home = tmp_path / "home"
    files = build_home(home)
    env = cli_env(home, tmp_path / "one.db")
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest", "--agent", "gemini", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=True,
    )
    s = orjson.loads(proc.stdout)
    assert s["roots"] == [str(home / ".gemini/tmp")]
    assert s["files_read"] == 1 and s["bytes"] == files["gemini"][0].stat().st_size


def test_sessions_with_an_unknown_agent_is_a_usage_error(world: dict[str, Any]) -> None:
    proc = world["run"]("sessions", "--agent", "unknown", check=False)
    assert proc.returncode == 2 and "unknown agent 'unknown'" in proc.stderr

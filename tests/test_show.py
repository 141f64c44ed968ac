"""``helixctl show``: a session read back from the store — tool calls with their inputs and
outputs from the stored raw lines, edits as diffs, thinking folded, bodies marked evicted once
the retention pass dropped the raw lines — through the real CLI on real fixtures."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, RunCli

CLAUDE = "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b"


@pytest.fixture
def world(home: Path, helixctl: RunCli) -> RunCli:
    root = home / ".claude" / "projects" / "-path-to-Demo"
    root.mkdir(parents=True)
    for f in (FIXTURES / "claude" / "d-kimuson__claude-code-viewer").glob("*.jsonl"):
        shutil.copy(f, root)
    shutil.copytree(FIXTURES / "codex" / "sessions", home / ".codex" / "sessions")
    helixctl("ingest", "--json")
    return helixctl


def _json(run: RunCli, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(run("show", *args, "--format", "json").stdout)
    return out


def test_tool_calls_show_their_input_and_output_from_the_raw_lines(world: RunCli) -> None:
    page = _json(world, CLAUDE, "--limit", "2000")
    calls = [e for e in page["events"] if e["kind"] == "tool_call" and e["tool"] == "Bash"]
    ls = next(e for e in calls if '"ls -la"' in (e["payload"] or ""))
    assert json.loads(ls["payload"]) == {
        "command": "ls -la",
        "description": "Check current directory structure",
    }
    result = next(
        e for e in page["events"] if e["kind"] == "tool_result" and e["call_id"] == ls["call_id"]
    )
    assert result["payload_state"] == "kept" and "total" in result["payload"]
    assert page["raw"] == "kept" and page["total"] >= len(page["events"])


def test_text_view_pairs_calls_with_results_shows_diffs_and_folds_thinking(world: RunCli) -> None:
    text = world("show", CLAUDE, "--limit", "2000").stdout
    assert "$ ls -la" in text
    assert "→ success" in text or "→ ok" in text
    assert "--- a/path/to/Demo/todo-app/src/app/page.tsx" in text  # an Edit as a diff
    assert '-import Image from "next/image";' in text
    lines = text.splitlines()
    assert lines[0].startswith(CLAUDE)


def test_thinking_is_folded_unless_asked(home: Path, helixctl: RunCli) -> None:
    root = home / ".claude" / "projects" / "-erk"
    root.mkdir(parents=True)
    src = FIXTURES / "claude" / "dagster-io__erk" / "b2c8258b-cfa7-4411-82bd-b2817ab24b4d.jsonl"
    shutil.copy(src, root)
    helixctl("ingest")
    uid = "claude:b2c8258b-cfa7-4411-82bd-b2817ab24b4d"
    folded = helixctl("show", uid, "--limit", "2000").stdout
    unfolded = helixctl("show", uid, "--limit", "2000", "--thinking").stdout
    assert "[thinking folded:" in folded and "[thinking folded:" not in unfolded
    page = json.loads(helixctl("show", uid, "--limit", "2000", "--format", "json").stdout)
    thinking = [e for e in page["events"] if e["kind"] == "thinking"]
    assert thinking and all(
        e["payload"] and e["payload"] in unfolded for e in thinking if e["payload"]
    )


def test_tail_and_paging(world: RunCli) -> None:
    full = _json(world, CLAUDE, "--limit", "2000")
    tail = _json(world, CLAUDE, "--tail", "5")
    assert [e["seq"] for e in tail["events"]] == [e["seq"] for e in full["events"][-5:]]
    page = _json(world, CLAUDE, "--from", str(full["events"][10]["seq"]), "--limit", "3")
    assert [e["seq"] for e in page["events"]] == [e["seq"] for e in full["events"][10:13]]
    text = world("show", CLAUDE, "--tail", "5").stdout
    assert "earlier events" in text


def test_markdown_export(world: RunCli) -> None:
    md = world("show", CLAUDE, "--format", "markdown", "--limit", "2000").stdout
    assert md.startswith("# ")
    assert "## User" in md and "## Assistant" in md and "```diff" in md and "```sh" in md


def test_raw_prints_the_stored_redacted_lines(world: RunCli, home: Path) -> None:
    out = world("show", CLAUDE, "--raw", "--tail", "20").stdout.splitlines()
    assert out
    source = (home / ".claude/projects/-path-to-Demo" / f"{CLAUDE.split(':')[1]}.jsonl").read_text()
    for line in out:
        assert json.loads(line)  # whole JSON records
        assert line in source  # verbatim (nothing to redact in this fixture)


def test_codex_tool_output_comes_back(world: RunCli) -> None:
    con = sqlite3.connect(world.db)  # type: ignore[attr-defined]
    uid = con.execute(
        "SELECT uid FROM sessions WHERE agent = 'codex' ORDER BY events DESC"
    ).fetchone()[0]
    con.close()
    page = _json(world, uid, "--limit", "2000")
    results = [e for e in page["events"] if e["kind"] == "tool_result"]
    assert results and any(e["payload_state"] == "kept" and e["payload"] for e in results)


def test_evicted_bodies_are_marked(world: RunCli) -> None:
    db = world.db  # type: ignore[attr-defined]
    con = sqlite3.connect(db)
    sid = con.execute("SELECT id FROM sessions WHERE uid = ?", (CLAUDE,)).fetchone()[0]
    # what the retention pass's first stage leaves: the events, not the raw lines
    con.execute(
        "DELETE FROM raw_blocks WHERE file_id IN (SELECT id FROM files WHERE session_id = ?)",
        (sid,),
    )
    con.execute("UPDATE sessions SET evict_stage = 1 WHERE id = ?", (sid,))
    con.commit()
    con.close()
    page = _json(world, CLAUDE, "--limit", "2000")
    assert page["raw"] == "evicted"
    results = [e for e in page["events"] if e["kind"] == "tool_result"]
    assert results and all(e["payload"] is None for e in results)
    assert {e["payload_state"] for e in results if e["payload_bytes"]} == {"evicted"}
    text = world("show", CLAUDE, "--limit", "2000").stdout
    assert "evicted" in text and "$ ls -la" in text  # the command survives in the event row
    assert world("show", CLAUDE, "--raw").stdout == ""


def test_unknown_session(world: RunCli) -> None:
    proc = world("show", "nope", check=False)
    assert proc.returncode == 1 and "no session matches" in proc.stderr

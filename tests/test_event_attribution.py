"""Spec §4.2 events: ``tokens`` attributed where the format allows (a Codex or Grok turn's
output tokens on the event that ends it), and ``retry`` events from Claude and Codex as
Grok has them (a call repeating the call whose result just failed, as the signals find)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, REPO, cli_env


def _ingest(home: Path, db: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest", "--json"],
        env=cli_env(home, db),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _digest(db: Path, uid: str) -> dict[str, Any]:
    found = _rows(
        db,
        "SELECT d.json FROM digests d JOIN sessions s ON s.id = d.session_id"
        f" WHERE s.uid = '{uid}'",
    )
    return dict(json.loads(found[0][0]))


def _claude(sid: str, n: int, ts: str, content: list[dict[str, Any]], role: str) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": role,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": sid,
        "timestamp": ts,
        "cwd": "/w/p",
        "message": {"role": role, "content": content},
    }
    if role == "assistant":
        line["requestId"] = f"r{n}"
        line["message"].update(id=f"m{n}", model="claude-sonnet-4-5-20250929",
                               usage={"input_tokens": 1, "output_tokens": 2})  # fmt: skip
    return line


def test_claude_and_codex_emit_retry_events_where_the_signals_find_retries(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "p"
    project.mkdir(parents=True)
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -q"}}
    lines = [
        _claude("c1", 0, "2026-01-05T10:00:00Z", [{**call, "id": "t1"}], "assistant"),
        _claude(
            "c1",
            1,
            "2026-01-05T10:00:01Z",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "1 failed", "is_error": True}],
            "user",
        ),  # fmt: skip
        _claude("c1", 2, "2026-01-05T10:00:02Z", [{**call, "id": "t2"}], "assistant"),
        _claude(
            "c1",
            3,
            "2026-01-05T10:00:03Z",
            [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}],
            "user",
        ),  # fmt: skip
        _claude("c1", 4, "2026-01-05T10:00:04Z", [{**call, "id": "t3"}], "assistant"),
    ]
    (project / "c1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    codex = home / ".codex" / "sessions" / "2026" / "01" / "05"
    codex.mkdir(parents=True)
    native = "019c0000-0000-7000-8000-00000000c0de"

    def rec(ts: str, rtype: str, payload: dict[str, Any]) -> str:
        return json.dumps(
            {"timestamp": f"2026-01-05T11:00:{ts}Z", "type": rtype, "payload": payload}
        )

    def usage(total_out: int, out: int) -> dict[str, Any]:
        last = {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": out,
                "reasoning_output_tokens": 0, "total_tokens": 10 + out}  # fmt: skip
        total = {**last, "output_tokens": total_out, "total_tokens": 10 + total_out}
        return {
            "type": "token_count",
            "info": {"total_token_usage": total, "last_token_usage": last},
        }

    shell = {"type": "function_call", "name": "shell", "arguments": '{"command":["make","test"]}'}
    rollout = [
        rec(
            "00.000",
            "session_meta",
            {
                "id": native,
                "timestamp": "2026-01-05T11:00:00Z",
                "cwd": "/w/p",
                "originator": "codex_cli_rs",
                "cli_version": "0.50.0",
            },
        ),  # fmt: skip
        rec("00.100", "event_msg", {"type": "task_started"}),
        rec(
            "00.200",
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "make the tests pass"}],
            },
        ),  # fmt: skip
        rec("01.000", "response_item", {**shell, "call_id": "k1"}),
        rec(
            "01.500",
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "k1",
                "output": '{"output":"boom","metadata":{"exit_code":2}}',
            },
        ),  # fmt: skip
        rec("01.600", "event_msg", usage(7, 7)),
        rec("02.000", "response_item", {**shell, "call_id": "k2"}),
        rec(
            "02.500",
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "k2",
                "output": '{"output":"ok","metadata":{"exit_code":0}}',
            },
        ),  # fmt: skip
        rec("02.600", "event_msg", usage(12, 5)),
        rec("03.000", "event_msg", {"type": "task_complete", "last_agent_message": "Done."}),
    ]
    (codex / f"rollout-2026-01-05T11-00-00-{native}.jsonl").write_text("\n".join(rollout) + "\n")
    db = tmp_path / "helix.db"
    _ingest(home, db)
    for uid in ("claude:c1", f"codex:{native}"):
        retries = _rows(
            db,
            "SELECT e.tool, e.summary FROM events e JOIN sessions s ON s.id = e.session_id"
            f" WHERE s.uid = '{uid}' AND e.kind = 'retry'",
        )
        assert len(retries) == 1, (uid, retries)
        assert retries[0][1].startswith("retry of ")
        d = _digest(db, uid)
        assert d["kind_counts"]["retry"] == d["cost"]["retries"] == 1, uid
    # Codex: the turn's output tokens (7 + 5) on the event that ends it
    tokens = _rows(db, "SELECT e.kind, e.tokens FROM events e JOIN sessions s ON s.id ="
                   f" e.session_id WHERE s.uid = 'codex:{native}' AND e.tokens > 0")  # fmt: skip
    assert tokens == [("completion", 12)]


def test_a_grok_turn_carries_its_output_tokens(tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = FIXTURES / "grok" / "constructed"
    dst = home / ".grok" / "sessions"
    shutil.copytree(src, dst)
    db = tmp_path / "helix.db"
    _ingest(home, db)
    turns = sorted(t for (t,) in _rows(db, "SELECT tokens FROM events WHERE kind = 'completion'"))
    want = []
    for f in src.rglob("updates.jsonl"):
        for line in f.read_text().splitlines():
            try:
                upd = json.loads(line).get("params", {}).get("update", {})
            except ValueError:
                continue  # the fixture's deliberately broken lines
            if upd.get("sessionUpdate") == "turn_completed":
                usage = upd.get("usage") or {}
                per_model = usage.get("modelUsage") or {"": usage}
                want.append(sum(int(u.get("outputTokens", 0)) for u in per_model.values()))
    assert want and any(want)
    assert [t for t in turns if t] == sorted(w for w in want if w)

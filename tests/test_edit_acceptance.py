"""Edit acceptance: every file operation records whether the user accepted the edit — a
denied Claude permission prompt and a declined Codex patch approval are rejections — and the
Files view's rate comes from those rows (``/api/metrics/acceptance``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from helixd.adapters import codex
from helixd.adapters.base import Chunk, FileContext
from helixd.core.signals import SIGNAL_COLUMNS, accepted_of, extract
from helixd.prices import effective
from helixd.query import metrics, open_reader, signal_metrics
from tests.conftest import RunCli

ROLLOUT = "rollout-2026-01-02T00-00-00-11111111-2222-4333-8444-666666666666.jsonl"
PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


def _lines(*objs: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def _codex(declined: bool) -> bytes:
    out = (
        "patch rejected by user"
        if declined
        else "Success. Updated the following files:\nM src/app.py"
    )
    t = "2026-01-02T00:00:0{}.000Z".format
    return _lines(
        {"timestamp": t(0), "type": "session_meta",
         "payload": {"id": "11111111-2222-4333-8444-666666666666", "cwd": "/w/acc"}},
        {"timestamp": t(1), "type": "turn_context", "payload": {"model": "gpt-5.2", "cwd": "/w/acc"}},  # noqa: E501
        {"timestamp": t(2), "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bump x"}]}},  # noqa: E501
        {"timestamp": t(3), "type": "response_item",
         "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c1", "input": PATCH}},  # noqa: E501
        {"timestamp": t(4), "type": "response_item",
         "payload": {"type": "custom_tool_call_output", "call_id": "c1",
                     "output": orjson.dumps({"output": out, "metadata": {"exit_code": 1 if declined else 0}}).decode()}},  # noqa: E501
    )  # fmt: skip


def _claude(sid: str, rejected: bool) -> bytes:
    base = {"sessionId": sid, "cwd": "/w/acc", "version": "2.1.0", "type": "user"}
    t = "2026-01-03T00:00:0{}.000Z".format
    result: dict[str, Any] = {
        "type": "tool_result", "tool_use_id": "toolu_1",
        "content": "The user doesn't want to proceed with this tool use. The tool use was rejected"
        " (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you"
        " are doing and wait for the user to tell you how to proceed." if rejected
        else "The file /w/acc/a.ts has been updated.",
    }  # fmt: skip
    if rejected:
        result["is_error"] = True
    return _lines(
        {**base, "uuid": "u1", "timestamp": t(1), "message": {"role": "user", "content": "edit a.ts"}},  # noqa: E501
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": t(2),
         "requestId": "r1",
         "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
                     "usage": {"input_tokens": 10, "output_tokens": 5},
                     "content": [{"type": "tool_use", "id": "toolu_1", "name": "Edit",
                                  "input": {"file_path": "/w/acc/a.ts", "old_string": "a", "new_string": "b"}}]}},  # noqa: E501
        {**base, "uuid": "u3", "parentUuid": "u2", "timestamp": t(3),
         "message": {"role": "user", "content": [result]},
         **({"toolUseResult": "User rejected tool use"} if rejected else {})},
    )  # fmt: skip


def test_accepted_is_the_users_decision_not_the_tools_outcome() -> None:
    assert accepted_of("success") is True
    assert accepted_of("rejected") is False and accepted_of("interrupted") is False
    assert accepted_of("error") is None and accepted_of(None) is None


def _row(**v: Any) -> tuple[Any, ...]:
    base = dict.fromkeys(SIGNAL_COLUMNS)
    base.update(is_error=0, lines_added=0, lines_removed=0, **v)
    return tuple(base[c] for c in SIGNAL_COLUMNS)


def test_a_rejected_edit_call_gives_a_rejected_file_operation() -> None:
    rows = [
        _row(seq=1, ts=1, kind="tool_call", tool="Edit", call_id="a", summary="x.py"),
        _row(seq=2, ts=1, kind="edit", tool="Edit", call_id="a", summary="x.py", body="x.py"),
        _row(seq=3, ts=2, kind="tool_result", tool="Edit", call_id="a", status="rejected"),
        _row(seq=4, ts=3, kind="tool_call", tool="Edit", call_id="b", summary="y.py"),
        _row(seq=5, ts=3, kind="edit", tool="Edit", call_id="b", summary="y.py", body="y.py"),
        _row(seq=6, ts=4, kind="tool_result", tool="Edit", call_id="b", status="success"),
    ]
    ops = extract(rows).file_operations
    assert [(o.file_path, o.accepted) for o in ops] == [("x.py", False), ("y.py", True)]


def test_a_declined_codex_patch_is_a_rejected_result_and_an_intervention_not_an_error() -> None:
    def parse(data: bytes) -> Any:
        ctx = FileContext("/h/" + ROLLOUT, ROLLOUT)
        return codex.parse(Chunk(data, 0, True, ctx), {})

    declined = parse(_codex(True))
    result = next(e for e in declined.events if e.kind == "tool_result")
    assert result.status == "rejected"
    kinds = [e.kind for e in declined.events]
    assert "human_intervention" in kinds and "error" not in kinds
    applied = parse(_codex(False))
    assert next(e for e in applied.events if e.kind == "tool_result").status == "success"


def test_the_files_view_counts_rejections_from_both_agents(home: Path, helixctl: RunCli) -> None:
    day = home / ".codex" / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    (day / ROLLOUT).write_bytes(_codex(True))
    proj = home / ".claude" / "projects" / "-w-acc"
    proj.mkdir(parents=True)
    (proj / "aaaaaaaa-0000-4000-8000-000000000001.jsonl").write_bytes(
        _claude("aaaaaaaa-0000-4000-8000-000000000001", True)
    )
    (proj / "aaaaaaaa-0000-4000-8000-000000000002.jsonl").write_bytes(
        _claude("aaaaaaaa-0000-4000-8000-000000000002", False)
    )
    helixctl("ingest")
    db: Path = helixctl.db  # type: ignore[attr-defined]
    rows = (
        sqlite3.connect(db)
        .execute(
            "SELECT s.agent, f.file_path, f.status, f.accepted FROM file_operations f"
            " JOIN sessions s ON s.id = f.session_id ORDER BY 1, 2, 4"
        )
        .fetchall()
    )
    assert rows == [
        ("claude", "/w/acc/a.ts", "rejected", 0),
        ("claude", "/w/acc/a.ts", "success", 1),
        ("codex", "src/app.py", "rejected", 0),
    ]
    con = open_reader(db)
    acc = signal_metrics.acceptance(con, metrics.Scope())
    assert acc["total"] == {
        "operations": 3,
        "accepted": 1,
        "rejected": 2,
        "acceptance_rate": 0.3333,
    }
    ts = {r["language"]: r for r in acc["by_language"]}["typescript"]
    assert (ts["accepted"], ts["rejected"], ts["acceptance_rate"]) == (1, 1, 0.5)
    files = signal_metrics.files(con, metrics.Scope(), 10)["files"]
    assert {f["path"]: f["acceptance_rate"] for f in files}["/w/acc/a.ts"] == 0.5
    summary = metrics.summary(con, metrics.Scope(), effective(None, {})[1])
    assert summary["edits"]["rejected"] == 2


def test_a_store_from_before_acceptance_gets_it_from_the_stored_statuses(tmp_path: Path) -> None:
    """Migration m007 fills ``accepted`` from the edit calls' statuses already stored."""
    from helixd.store.schema import MIGRATIONS

    con = sqlite3.connect(tmp_path / "old.db")
    for name, sql in MIGRATIONS:
        if name == "m009_edit_acceptance":
            break
        con.executescript(sql)
    con.executemany(
        "INSERT INTO file_operations (session_id, seq, ts, operation, file_path, language,"
        " lines_added, lines_removed, status) VALUES (1, ?, 0, 'edit', 'a.py', 'python', 1, 0, ?)",
        [(1, "success"), (2, "rejected"), (3, "error"), (4, "interrupted"), (5, None)],
    )
    con.executescript(dict(MIGRATIONS)["m009_edit_acceptance"])
    got = con.execute("SELECT status, accepted FROM file_operations ORDER BY seq").fetchall()
    assert got == [
        ("success", 1),
        ("rejected", 0),
        ("error", None),
        ("interrupted", 0),
        (None, None),
    ]

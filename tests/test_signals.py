"""Signals (``helixd.core.signals``) on real sessions: test runs with the counts their real pytest
output reports, the tool-result status taxonomy, file operations, retries and errors, each
pointing at the events it came from; plus the pure extraction on constructed rows."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters.registry import REGISTRY
from helixd.core.signals import SIGNAL_COLUMNS, extract, summarize
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store, now_ms

FIXTURES = Path(__file__).parent / "fixtures"
STATUSES = {"success", "error", "rejected", "interrupted", "missing"}

# Real pytest runs in dagster-io/erk sessions (MIT; tests/fixtures/claude/README.md), counted
# by hand from the tool output (the progress dots and the final summary line; the same
# outputs are in tests/fixtures/testruns/).  The subagent ran them: Claude Code copied its
# tool calls into the parent transcript as agent_progress records.
REAL_TEST_RUNS = {
    "claude:ae4a1257-cf8e-47b3-8c80-d7991e4495dd": [
        ("uv run pytest tests/tui/screens/test_objective_plans_screen.py -x -v", 7, 1, "failed"),
        ("uv run pytest tests/tui/screens/test_objective_plans_screen.py -x -v", 7, 1, "failed"),
        # pytest rejected `--timeout` (no such plugin): exit 4, no summary line
        ("uv run pytest tests/tui/ -x --timeout=30", None, None, "error"),
        ("uv run pytest tests/tui/ -x", 112, 1, "failed"),
        ("uv run pytest tests/tui/screens/test_objective_plans_screen.py -v", 9, 0, "passed"),
        ("uv run pytest tests/tui/ -v", 383, 3, "failed"),
    ],
    "claude:beddc0be-103e-4a78-ae7d-ba6c1bad3ac8": [
        # `uv run --package` outside the workspace: an error before pytest starts
        (
            "uv run --package erk-slack-bot pytest packages/erk-slack-bot/tests/ -v",
            None,
            None,
            "error",
        ),
        ("uv run pytest packages/erk-slack-bot/tests/ -v", 22, 1, "failed"),
        ("uv run --package erk-slack-bot pytest packages/erk-slack-bot/tests/ -v", 23, 0, "passed"),
    ],
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every agent's fixtures ingested and analyzed once (one root per agent)."""
    base = tmp_path_factory.mktemp("signals")
    pairs = []
    for adapter in REGISTRY:
        root = base / "src" / adapter.name
        shutil.copytree(
            FIXTURES / adapter.name, root, ignore=shutil.ignore_patterns("README*", "*.py")
        )
        pairs.append((adapter, root))
    path = base / "helix.db"

    async def build() -> None:
        async with await Store.open(path) as store:
            await Ingestor(store).backfill(discover(pairs))
            await digest.analyze(store, await store.analyzable_session_ids(), now_ms())

    asyncio.run(build())
    yield path


def rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def test_real_test_runs_carry_the_counts_of_their_output(db: Path) -> None:
    for uid, expected in REAL_TEST_RUNS.items():
        found = rows(
            db,
            "SELECT t.command, t.passed, t.failed, t.status, t.framework, t.skipped"
            " FROM test_runs t JOIN sessions s ON s.id = t.session_id WHERE s.uid = ?"
            " ORDER BY t.call_seq",
            uid,
        )
        assert [r[:4] for r in found] == expected, uid
        assert {(r[4], r[5]) for r in found if r[1] is not None} == {("pytest", 0)}
        d = digest_of(db, uid)
        last = expected[-1]
        assert d["test_runs"]["total"] == len(expected)
        assert d["test_runs"]["last"]["passed"] == last[1]
        assert d["test_runs"]["last"]["status"] == last[3]
        assert d["markers"]["test_runs"] == len(expected)


def test_test_run_pointers_name_the_call_and_its_result(db: Path) -> None:
    for sid, call_seq, result_seq, duration in rows(
        db, "SELECT session_id, call_seq, result_seq, duration_ms FROM test_runs"
    ):
        call = rows(
            db,
            "SELECT kind, call_id, ts FROM events WHERE session_id = ? AND seq = ?",
            sid,
            call_seq,
        )
        assert call and call[0][0] == "tool_call"
        if result_seq is None:
            continue
        result = rows(
            db,
            "SELECT kind, call_id, ts FROM events WHERE session_id = ? AND seq = ?",
            sid,
            result_seq,
        )
        assert result[0][:2] == ("tool_result", call[0][1])
        if call[0][2] is not None and result[0][2] is not None:
            assert duration == result[0][2] - call[0][2]


def test_tool_call_statuses_and_their_pointers(db: Path) -> None:
    by_agent: dict[str, set[str]] = {}
    for agent, status in rows(
        db,
        "SELECT DISTINCT s.agent, t.status FROM tool_calls t JOIN sessions s"
        " ON s.id = t.session_id",
    ):
        by_agent.setdefault(agent, set()).add(status)
    assert set().union(*by_agent.values()) <= STATUSES
    assert {"success", "error"} <= by_agent["claude"]
    assert "interrupted" in by_agent["gemini"]  # a real Gemini call cancelled mid-run
    assert "rejected" in by_agent["grok"]
    # Every call points at its event, every result at a result of the same call.
    bad = rows(
        db,
        "SELECT count(*) FROM tool_calls t LEFT JOIN events c ON c.session_id = t.session_id"
        " AND c.seq = t.call_seq LEFT JOIN events r ON r.session_id = t.session_id"
        " AND r.seq = t.result_seq WHERE c.kind IS NOT 'tool_call' OR (t.result_seq IS NOT NULL"
        " AND (r.kind IS NOT 'tool_result' OR r.call_id IS NOT c.call_id))",
    )
    assert bad == [(0,)]
    # The status is the result event's own.
    mismatched = rows(
        db,
        "SELECT count(*) FROM tool_calls t JOIN events r ON r.session_id = t.session_id"
        " AND r.seq = t.result_seq WHERE r.status IS NOT t.status",
    )
    assert mismatched == [(0,)]


def test_real_rejections_and_errors_are_told_apart(db: Path) -> None:
    """The user's "no" is a rejection, not a tool error; a failing command is an error."""
    statuses = dict(
        rows(
            db,
            "SELECT e.summary, e.status FROM events e JOIN sessions s ON s.id = e.session_id"
            " WHERE s.uid = 'claude:small' AND e.kind = 'tool_result'",
        )
    )
    assert statuses["The user doesn't want to proceed with this tool use."] == "rejected"
    errors = rows(
        db,
        "SELECT e.summary FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.uid = 'claude:ae4a1257-cf8e-47b3-8c80-d7991e4495dd'"
        " AND e.kind = 'tool_result' AND e.status = 'error'",
    )
    assert errors and all(s.startswith("Exit code") or "rror" in s for (s,) in errors)


def test_file_operations_carry_language_and_lines(db: Path) -> None:
    ops = rows(
        db,
        "SELECT f.file_path, f.operation, f.language, f.lines_added, f.lines_removed, e.kind,"
        " e.lines_added, e.lines_removed FROM file_operations f JOIN events e"
        " ON e.session_id = f.session_id AND e.seq = f.seq",
    )
    named = "SELECT count(*) FROM events WHERE kind = 'edit' AND (body != '' OR summary != tool)"
    assert len(ops) == rows(db, named)[0][0]
    assert not [p for p in ops if p[0] in ("", "apply_patch") or "\n" in p[0]]
    for path, op, language, added, removed, kind, e_added, e_removed in ops:
        assert kind == "edit" and (added, removed) == (e_added, e_removed)
        assert op in ("edit", "write")
        if path.endswith(".py"):
            assert language == "python"
        if path.endswith(".tsx"):
            assert language == "tsx"
    languages = {r[2] for r in ops}
    assert {"python", "typescript", "markdown"} <= languages


def test_retries_point_at_the_failed_call_they_repeat(db: Path) -> None:
    retries = rows(
        db, "SELECT r.session_id, r.seq, r.ref_seq FROM session_signals r WHERE r.kind = 'retry'"
    )
    assert retries
    for sid, seq, ref in retries:
        (again,) = rows(
            db,
            "SELECT tool, target FROM tool_calls WHERE session_id = ? AND call_seq = ?",
            sid,
            seq,
        )
        (failed,) = rows(
            db,
            "SELECT tool, target, status FROM tool_calls WHERE session_id = ? AND call_seq = ?",
            sid,
            ref,
        )
        assert again == failed[:2] and failed[2] == "error" and ref < seq


def test_error_signals_match_the_digest_snippets(db: Path) -> None:
    for (uid,) in rows(db, "SELECT uid FROM sessions"):
        d = digest_of(db, uid)
        if d is None:
            continue
        stored = rows(
            db,
            "SELECT g.fingerprint, count(*), min(g.seq) FROM session_signals g JOIN sessions s"
            " ON s.id = g.session_id WHERE s.uid = ? AND g.kind = 'error' GROUP BY 1",
            uid,
        )
        snippets = {e["fingerprint"]: (e["count"], e["first_seq"]) for e in d["error_snippets"]}
        assert {fp: (n, first) for fp, n, first in stored if fp in snippets} == snippets


def digest_of(db: Path, uid: str) -> Any:
    found = rows(
        db,
        "SELECT d.json FROM digests d JOIN sessions s ON s.id = d.session_id WHERE s.uid = ?",
        uid,
    )
    return orjson.loads(found[0][0]) if found else None


# -- the pure extraction -------------------------------------------------------------------
def row(seq: int, kind: str, **kw: Any) -> tuple[Any, ...]:
    values = dict.fromkeys(SIGNAL_COLUMNS)
    values.update(seq=seq, kind=kind, is_error=0, lines_added=0, lines_removed=0)
    values.update(kw)
    return tuple(values[c] for c in SIGNAL_COLUMNS)


def test_extract_statuses_durations_and_retries() -> None:
    sig = extract(
        [
            row(0, "tool_call", ts=1000, tool="Bash", call_id="a", summary="make check"),
            row(1, "tool_result", ts=3500, tool="Bash", call_id="a", status="error", is_error=1),
            row(2, "error", ts=3500, tool="Bash", call_id="a", body="make: *** [check] Error 2"),
            row(3, "tool_call", ts=4000, tool="Bash", call_id="b", summary="make check"),
            row(
                4,
                "tool_result",
                ts=9000,
                tool="Bash",
                call_id="b",
                status="success",
                test_framework="pytest",
                tests_passed=10,
                tests_failed=0,
                tests_skipped=2,
            ),
            row(5, "tool_call", ts=9100, tool="Edit", call_id="c", summary="app.py"),
            row(
                6,
                "edit",
                ts=9100,
                tool="Edit",
                call_id="c",
                body="/src/app.py",
                lines_added=3,
                lines_removed=1,
            ),
            row(7, "tool_result", ts=None, tool="Edit", call_id="c", status="rejected"),
            row(8, "human_intervention", ts=9200),
            row(9, "tool_call", ts=9300, tool="Bash", call_id="d", summary="sleep 100"),
            row(10, "tool_call", ts=9400, tool="Bash", call_id="e", summary="sleep 200"),
            row(11, "human_intervention", ts=9900),
            row(12, "tool_call", ts=9950, tool="Bash", call_id="f", summary="ls"),
        ]
    )
    assert [(c.call_seq, c.result_seq, c.status, c.duration_ms) for c in sig.tool_calls] == [
        (0, 1, "error", 2500),
        (3, 4, "success", 5000),
        (5, 7, "rejected", None),
        (9, None, "interrupted", None),  # the user stepped in (seq 11) before any result
        (10, None, "interrupted", None),
        (12, None, "missing", None),
    ]
    # `make check` is not a known test command, but its output carried a pytest summary.
    [run] = sig.test_runs
    assert (run.call_seq, run.result_seq, run.passed, run.failed, run.skipped, run.status) == (
        3,
        4,
        10,
        0,
        2,
        "passed",
    )
    [op] = sig.file_operations
    assert (op.file_path, op.language, op.lines_added, op.status) == (
        "/src/app.py",
        "python",
        3,
        "rejected",
    )
    assert [(m.kind, m.seq, m.ref_seq) for m in sig.markers] == [
        ("error", 2, 0),
        ("retry", 3, 0),
        ("intervention", 8, None),
        ("intervention", 11, None),
    ]
    s = summarize(sig)
    assert s["tool_calls"]["by_status"] == {
        "error": 1,
        "interrupted": 2,
        "missing": 1,
        "rejected": 1,
        "success": 1,
    }
    assert s["test_runs"]["last"]["passed"] == 10
    assert s["files"]["by_language"] == {"python": 1}


def test_rows_stored_before_statuses_existed_fall_back_to_the_error_flag() -> None:
    sig = extract(
        [
            row(0, "tool_call", tool="Bash", call_id="a", summary="ls"),
            row(1, "tool_result", tool="Bash", call_id="a", is_error=1),
            row(2, "tool_call", tool="Bash", call_id="b", summary="pwd"),
            row(3, "tool_result", tool="Bash", call_id="b"),
        ]
    )
    assert [c.status for c in sig.tool_calls] == ["error", "success"]


# -- closing: provisional until a session end, a completed turn or the idle timeout ----------
def test_a_completed_turn_closes_the_digest_and_a_user_turn_keeps_it_open(db: Path) -> None:
    async def build(uid: str, after_ms: int) -> dict[str, Any]:
        async with await Store.open(db) as store:
            (sid,) = rows(db, "SELECT id FROM sessions WHERE uid = ?", uid)[0]
            facts = (await store.digest_facts([sid]))[sid]
        last = facts["span"][1]
        return digest.build(facts, last + after_ms)

    # Real Codex rollouts: 019c8bfe ends on final_answer + task_complete; 019c8a53 ends on
    # a user message nobody answered (see tests/test_outcome_labels.py).
    done = next(u for (u,) in rows(db, "SELECT uid FROM sessions") if "019c8bfe" in u)
    waiting = next(u for (u,) in rows(db, "SELECT uid FROM sessions") if "019c8a53" in u)
    minute, hour = 60_000, 3_600_000
    d = asyncio.run(build(done, minute))
    assert (d["provisional"], d["closed_by"]) == (False, "turn completed")
    d = asyncio.run(build(waiting, minute))
    assert (d["provisional"], d["closed_by"]) == (True, None)
    d = asyncio.run(build(waiting, hour))
    assert (d["provisional"], d["closed_by"]) == (False, "idle")


def test_lookup_prints_the_signals(db: Path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("HELIX_")}
    env["HELIX_STORE_DB"] = str(db)
    out = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "lookup", "ae4a1257"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "test runs 6; last pytest failed (383 passed, 3 failed, 0 skipped)" in out
    assert "tool calls 94: error 5, missing 3, success 86" in out
    assert "python 18" in out and "outcome rule:" in out


def test_signals_count_in_the_distilled_tier(db: Path) -> None:
    """The Tier 2 guard (spec §5) sees the signal rows too: they are never evicted."""
    from helixd.store import evict

    con = sqlite3.connect(db)
    try:
        counted = evict.distilled_bytes(con)
        signal_rows = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in evict.SIGNAL_ROW_BYTES
        }
    finally:
        con.close()
    assert signal_rows["tool_calls"] > 100 and signal_rows["file_operations"] > 10
    signals = sum(n * evict.SIGNAL_ROW_BYTES[t] for t, n in signal_rows.items())
    digests, usage, sessions = rows(
        db,
        "SELECT (SELECT sum(length(json)) FROM digests), (SELECT count(*) FROM usage),"
        " (SELECT count(*) FROM sessions)",
    )[0]
    assert counted == (
        digests + usage * evict.USAGE_ROW_BYTES + sessions * evict.SESSION_ROW_BYTES + signals
    )


def test_an_edit_whose_paths_are_unknown_names_no_file() -> None:
    """Issue 14: a redacted ``apply_patch`` (no ``*** Update File:`` line left) was listed as
    an edited file named ``apply_patch``; a patch of two files was one path ``a\\nb``."""
    sig = extract(
        [
            row(0, "tool_call", ts=1, tool="apply_patch", call_id="p", summary="apply_patch"),
            row(1, "edit", ts=1, tool="apply_patch", call_id="p", summary="apply_patch", body=""),
            row(2, "tool_call", ts=2, tool="apply_patch", call_id="q", summary="x"),
            row(
                3,
                "edit",
                ts=2,
                tool="apply_patch",
                call_id="q",
                summary="src/lib.rs, src/extra.rs",
                body="src/lib.rs\nsrc/extra.rs",
                lines_added=2,
            ),
            row(4, "edit", ts=3, tool="Edit", call_id="r", summary="/a/b.py", body=None),
        ]
    )
    assert [(op.seq, op.file_path, op.language) for op in sig.file_operations] == [
        (3, "src/lib.rs", "rust"),
        (4, "/a/b.py", "python"),
    ]

"""Golden tests for the agents read from SQLite databases: every real database in the
fixtures, and the constructed Goose ones.

The expected numbers were worked out from the databases themselves, not from the adapter:
``sqlite3`` over a copy of each database (with its ``-wal``), ``json.loads`` of every
``messages.parts`` (Crush, legacy OpenCode) or ``content_json`` (Goose), counting parts by
the rules in the adapters' docstrings (a ``text`` part of a user message is a
``user_msg``; a ``tool_call`` whose name is an edit tool adds an ``edit``; a failed
``tool_result`` and a ``finish`` with reason ``error`` each add an ``error``; a ``finish``
with reason ``canceled`` a ``human_intervention``), and ``SELECT count(*),
sum(prompt_tokens), sum(completion_tokens) FROM sessions`` for the usage."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES, sample_bytes

CASES = [
    # (agent, fixture, events by kind, sessions, (input, output) summed over usage facts)
    (
        "crush",
        "tuliopc23__LiqUIdify/.crush/crush.db",  # all data in crush.db-wal
        {"user_msg": 4, "assistant_msg": 1, "tool_call": 4, "tool_result": 4, "error": 4},
        2,
        (17033, 231),
    ),
    (
        "crush",
        "Starmel__OpenSuperWhisper/.crush/crush.db",
        {
            "user_msg": 19,
            "assistant_msg": 17,
            "tool_call": 48,
            "tool_result": 47,
            "edit": 7,
            "error": 3,
            "human_intervention": 1,
        },
        3,
        (124744, 3299),
    ),
    ("crush", "LarsArtmann__go-filewatcher/.crush/crush.db", {}, 0, (0, 0)),  # empty, schema 8
    (
        "opencode_go",
        "navicore__flag-rs/.opencode/opencode.db",
        {"user_msg": 7, "assistant_msg": 17, "tool_call": 35, "tool_result": 35, "error": 1},
        3,
        (95439, 2776),
    ),
    (
        "opencode_go",
        "tuist__Noora/.opencode/opencode.db",
        {
            "user_msg": 2,
            "assistant_msg": 23,
            "tool_call": 60,
            "tool_result": 59,
            "edit": 15,
            "error": 3,
            "human_intervention": 1,
        },
        1,
        (637, 47068),
    ),
    (
        "opencode_go",
        "kashifkhan0771__utils/.opencode/opencode.db",
        {
            "user_msg": 13,
            "assistant_msg": 12,
            "tool_call": 78,
            "tool_result": 78,
            "edit": 45,
            "error": 21,
            "human_intervention": 5,
        },
        6,
        (71271, 13450),
    ),
    ("goose", "real/sessions.db", {}, 1, (0, 0)),  # one session, no message, no tokens
    (
        "goose",
        "constructed/a/sessions.db",
        {
            "user_msg": 1,
            "assistant_msg": 2,
            "thinking": 1,
            "tool_call": 2,
            "tool_result": 2,
            "test_run": 1,  # developer__shell `pytest -q`
            "error": 1,  # call_2's toolResult status "error"
        },
        1,
        (5200, 640),
    ),
]


@pytest.mark.parametrize(("agent", "rel", "kinds", "sessions", "tokens"), CASES)
def test_golden(
    agent: str, rel: str, kinds: dict[str, int], sessions: int, tokens: tuple[int, int]
) -> None:
    adapter = adapter_named(agent)
    path = FIXTURES / agent / rel
    data = sample_bytes(adapter, path)
    parsed = adapter.parse(Chunk(data, 0, True, FileContext(str(path), rel)), {})
    got = Counter(e.kind for e in parsed.events)
    test_runs = got.pop("test_run", 0)
    assert dict(got) == {k: n for k, n in kinds.items() if k != "test_run"}
    assert test_runs == kinds.get("test_run", test_runs)  # shell calls running a test suite
    assert len({s.uid for s in parsed.sessions}) == sessions
    assert (
        sum(u.input_tokens for u in parsed.usage),
        sum(u.output_tokens for u in parsed.usage),
    ) == tokens
    assert not parsed.bad
    # every tool call and its result share a call id
    calls = {e.call_id for e in parsed.events if e.kind == "tool_call"}
    results = {e.call_id for e in parsed.events if e.kind == "tool_result"}
    assert results <= calls


def test_goose_counts_an_unknown_item_and_reads_its_test_summary() -> None:
    adapter = adapter_named("goose")
    path = FIXTURES / "goose" / "constructed" / "a" / "sessions.db"
    data = sample_bytes(adapter, path)
    parsed = adapter.parse(Chunk(data, 0, True, FileContext(str(path), "a")), {})
    assert parsed.unknown_types == {"content:brandNewItem2027": 1}
    (result,) = [e for e in parsed.events if e.kind == "tool_result" and e.call_id == "call_1"]
    assert result.tests == ("pytest", 1, 1, 0) and result.status == "success"
    (failed,) = [e for e in parsed.events if e.kind == "tool_result" and e.call_id == "call_2"]
    assert failed.status == "error" and failed.is_error


def test_subagent_sessions_link_to_their_parent() -> None:
    """navicore: 2 of 3 sessions have a parent_session_id (a tool-call id's session)."""
    adapter = adapter_named("opencode_go")
    rel = "navicore__flag-rs/.opencode/opencode.db"
    path = FIXTURES / "opencode_go" / rel
    parsed = adapter.parse(
        Chunk(sample_bytes(adapter, path), 0, True, FileContext(str(path), rel)), {}
    )
    parents = {s.uid: s.parent_uid for s in parsed.sessions if s.parent_uid}
    assert len(parents) == 2
    assert all(p.startswith("opencode_go:") for p in parents.values())


async def test_end_to_end_a_project_database_and_a_second_run(tmp_path: Path) -> None:
    """Ingest through the store: the project's cwd is the directory holding ``.crush``;
    a second run reads nothing."""
    project = tmp_path / "proj"
    (project / ".crush").mkdir(parents=True)
    src = FIXTURES / "crush" / "Starmel__OpenSuperWhisper" / ".crush" / "crush.db"
    (project / ".crush" / "crush.db").write_bytes(src.read_bytes())
    db = tmp_path / "h.db"
    crush = adapter_named("crush")
    async with await Store.open(db) as store:
        first = await Ingestor(store).backfill(discover([(crush, project)]))
        second = await Ingestor(store).backfill(discover([(crush, project)]))
    assert first.files_read == 1 and first.events == 142 and second.files_read == 0
    con = sqlite3.connect(db)
    cwds = {cwd for (cwd,) in con.execute("SELECT DISTINCT cwd FROM sessions")}
    con.close()
    assert cwds == {str(project)}


# Aider: counted with grep over each history (`^# aider chat started` runs, `^> Tokens:`
# lines, `^> Applied edit to`, `^> .*KeyboardInterrupt`, runs of consecutive `^####` lines)
# and the Tokens lines' "<n>[k] sent, <n>[k] received" summed with k = 1000.
AIDER = [
    ("Aquaticat__Monochromatic", 19, 39, 20, 15, 26, (613500, 24145)),
    ("BeehiveInnovations__zen-mcp-server", 4, 0, 0, 2, 8, (0, 0)),
]


@pytest.mark.parametrize(
    ("project", "runs", "usage", "edits", "interrupts", "prompts", "tokens"), AIDER
)
def test_aider_golden(
    project: str,
    runs: int,
    usage: int,
    edits: int,
    interrupts: int,
    prompts: int,
    tokens: tuple[int, int],
) -> None:
    adapter = adapter_named("aider")
    rel = f"{project}/.aider.chat.history.md"
    path = FIXTURES / "aider" / rel
    parsed = adapter.parse(Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {})
    kinds = Counter(e.kind for e in parsed.events)
    assert len({s.uid for s in parsed.sessions}) == runs == kinds["lifecycle"]
    assert (kinds["edit"], kinds["human_intervention"], kinds["user_msg"]) == (
        edits,
        interrupts,
        prompts,
    )
    assert len(parsed.usage) == usage
    assert (
        sum(u.input_tokens for u in parsed.usage),
        sum(u.output_tokens for u in parsed.usage),
    ) == tokens
    assert {s.cwd for s in parsed.sessions if s.cwd} == {str(path.parent)}
    assert not parsed.bad and not parsed.unknown_types


def test_aider_reads_neither_input_nor_llm_history() -> None:
    adapter = adapter_named("aider")
    assert adapter.matches(".aider.chat.history.md")
    assert not adapter.matches(".aider.input.history")
    assert not adapter.matches(".aider.llm.history")


# The classic Cline layout, read off test-task-1/ui_messages.json (Cline's copy): 4
# `say: text` entries (the first is the task: a user_msg; 3 assistant texts), 1
# `user_feedback`, 1 `reasoning`, 1 `completion_result`; 3 `api_req_started` whose JSON text
# holds tokensIn/tokensOut/cacheReads/cacheWrites 100/0/30/50, 250/300/80/20, 400/500/-/-.
def test_cline_tasks_golden() -> None:
    adapter = adapter_named("cline_vscode")
    rel = "test-task-1/ui_messages.json"
    path = FIXTURES / "cline_vscode" / rel
    parsed = adapter.parse(Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {})
    kinds = Counter(e.kind for e in parsed.events)
    assert dict(kinds) == {"user_msg": 2, "assistant_msg": 3, "thinking": 1, "completion": 1}
    got = [
        (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_5m_tokens)
        for u in parsed.usage
    ]
    assert got == [(100, 0, 30, 50), (250, 300, 80, 20), (400, 500, 0, 0)]
    assert {s.uid for s in parsed.sessions} == {"cline_vscode:test-task-1"}


def test_cline_tasks_command_and_its_output() -> None:
    adapter = adapter_named("roo")
    rel = "constructed-task-2/ui_messages.json"
    path = FIXTURES / "roo" / rel
    parsed = adapter.parse(Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {})
    (result,) = [e for e in parsed.events if e.kind == "tool_result"]
    assert result.tests == ("jest", 4, 1, 0)
    assert any(e.kind == "test_run" for e in parsed.events)


# Cursor, counted with sqlite3 + json over a copy of the real state.vscdb: the chat panel's
# 5 tabs hold 33+3+7+3+3 bubbles, the composer's 26 composers the rest; bubbles of type
# "user"/1 are 68, of type "ai"/2 are 63; 5 + 26 = 31 sessions.
def test_cursor_golden() -> None:
    adapter = adapter_named("cursor_ide")
    rel = "workspaceStorage/f87f6e0b2cf1ae8645cc0c5ffaa99529/state.vscdb"
    path = FIXTURES / "cursor_ide" / rel
    parsed = adapter.parse(
        Chunk(sample_bytes(adapter, path), 0, True, FileContext(str(path), rel)), {}
    )
    assert dict(Counter(e.kind for e in parsed.events)) == {"user_msg": 68, "assistant_msg": 63}
    assert len({s.uid for s in parsed.sessions}) == 31
    assert not parsed.usage and not parsed.bad and not parsed.unknown_types


async def test_cursor_end_to_end_reads_two_rows_and_the_workspace_folder(tmp_path: Path) -> None:
    root = tmp_path / "workspaceStorage"
    shutil.copytree(FIXTURES / "cursor_ide" / "workspaceStorage", root)
    db = tmp_path / "h.db"
    cursor = adapter_named("cursor_ide")
    async with await Store.open(db) as store:
        first = await Ingestor(store).backfill(discover([(cursor, root)]))
        second = await Ingestor(store).backfill(discover([(cursor, root)]))
    assert first.files_read == 2 and first.lines == 4  # two ItemTable rows per database
    assert first.events == 131 + 4 and second.files_read == 0
    con = sqlite3.connect(db)
    uid = "cursor_ide:comp-constructed-1"
    cwds = {c for (c,) in con.execute("SELECT cwd FROM sessions WHERE uid = ?", (uid,))}
    con.close()
    assert cwds == {"/home/dev/proj one"}

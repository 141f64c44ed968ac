"""Classic Cline / Roo / Kilo tasks: ``api_conversation_history.json`` beside
``ui_messages.json``.  Expected numbers are counted from the fixture documents with ``json``
(native form: user ``tool_result`` blocks whose ``tool_use_id`` names a ``tool_use`` other
than ``execute_command``; XML form: user text blocks starting ``[<tool> for '…'] Result:``
whose tool is not ``execute_command``), not from the adapter."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.core.records import Parsed
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES

CASES = [("cline_vscode", "test-task-1"), ("roo", "constructed-task-2")]
HEADER = re.compile(r"^\[(\w+)(?: for '.*?')?\] Result:")


def _counted(path: Path) -> tuple[int, int]:
    """(tool results the UI file lacks, failed ones) counted from the document."""
    names: dict[str, str] = {}
    results = failed = 0
    for msg in json.loads(path.read_text()):
        blocks = msg["content"] if isinstance(msg["content"], list) else []
        for b in blocks:
            if b["type"] == "tool_use":
                names[b["id"]] = b["name"]
            elif b["type"] == "tool_result" and names[b["tool_use_id"]] != "execute_command":
                results += 1
                failed += bool(b.get("is_error"))
            elif b["type"] == "text" and msg["role"] == "user":
                found = HEADER.match(b["text"])
                results += bool(found and found.group(1) != "execute_command")
    return results, failed


def _parse(agent: str, rel: str) -> Parsed:
    path = FIXTURES / agent / rel
    return adapter_named(agent).parse(
        Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {}
    )


@pytest.mark.parametrize(("agent", "task"), CASES)
def test_api_history_adds_only_the_tool_results_the_ui_file_lacks(agent: str, task: str) -> None:
    rel = f"{task}/api_conversation_history.json"
    parsed = _parse(agent, rel)
    results, failed = _counted(FIXTURES / agent / rel)
    kinds = Counter(e.kind for e in parsed.events)
    assert kinds == Counter({"tool_result": results, "error": failed}) - Counter()
    assert results >= 2
    assert not parsed.usage and not parsed.bad and not parsed.unknown_types
    assert {s.uid for s in parsed.sessions} == {f"{agent}:{task}"}
    tools = {e.tool for e in parsed.events}
    assert "execute_command" not in tools


def test_a_result_keeps_its_full_text() -> None:
    parsed = _parse("cline_vscode", "test-task-1/api_conversation_history.json")
    first = parsed.events[0]
    assert first.tool == "read_file"
    assert first.payload == b"export function App() {\n  return <main />;\n}"


async def test_both_files_of_a_task_make_one_session_without_double_counting(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(FIXTURES / "roo" / "constructed-task-2", root / "constructed-task-2")
    roo = adapter_named("roo")
    ui = _parse("roo", "constructed-task-2/ui_messages.json")
    api_results, api_failed = _counted(
        root / "constructed-task-2" / "api_conversation_history.json"
    )
    db = tmp_path / "h.db"
    async with await Store.open(db) as store:
        first = await Ingestor(store).backfill(discover([(roo, root)]))
        second = await Ingestor(store).backfill(discover([(roo, root)]))
    assert first.files_read == 2 and second.files_read == 0
    con = sqlite3.connect(db)
    sessions = con.execute("SELECT uid FROM sessions").fetchall()
    by_kind = Counter(k for (k,) in con.execute("SELECT kind FROM events"))
    (usage,) = con.execute("SELECT count(*) FROM usage").fetchone()
    con.close()
    assert sessions == [("roo:constructed-task-2",)]
    ui_kinds = Counter(e.kind for e in ui.events)
    assert by_kind["tool_result"] == ui_kinds["tool_result"] + api_results
    assert by_kind["error"] == ui_kinds["error"] + api_failed
    assert usage == len(ui.usage)

"""Cursor agent transcripts: golden numbers counted from the fixture files with ``json``
(per line: ``role``; per block: ``text`` of a user line → ``user_msg``, non-empty ``text``
of an assistant line → ``assistant_msg``, ``thinking``, ``tool_use`` → ``tool_call``,
``tool_result`` → ``tool_result`` plus an ``error`` when ``is_error``; a ``pytest``
command adds a ``test_run``; lines without a role but ``turn_ended`` and blocks of other
types are the unknown ones), not from the adapter; one end-to-end ingest."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES

BASE = FIXTURES / "cursor_agent"
T = "Users-dev-proj/agent-transcripts"
FILES = [
    f"{T}/small0001.jsonl",
    f"{T}/parent0001/parent0001.jsonl",
    f"{T}/parent0001/subagents/child0001.jsonl",
    f"{T}/helix0001/helix0001.jsonl",
]


def _counted(path: Path) -> tuple[Counter[str], Counter[str]]:
    kinds: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    for raw in path.read_text().splitlines():
        obj = json.loads(raw)
        role = obj.get("role")
        if role is None:
            if obj["type"] != "turn_ended":
                unknown[obj["type"]] += 1
            continue
        for block in obj["message"]["content"]:
            t = block["type"]
            if t == "text" and (role == "user" or block["text"].strip()):
                kinds["user_msg" if role == "user" else "assistant_msg"] += 1
            elif t == "thinking":
                kinds["thinking"] += 1
            elif t == "tool_use":
                kinds["tool_call"] += 1
                kinds["test_run"] += block["input"].get("command", "").startswith("pytest")
            elif t == "tool_result":
                kinds["tool_result"] += 1
                kinds["error"] += block.get("is_error", False)
            elif t != "text":
                unknown[f"block:{t}"] += 1
    return +kinds, unknown


@pytest.mark.parametrize("rel", FILES)
def test_cursor_agent_golden(rel: str) -> None:
    path = BASE / rel
    parsed = adapter_named("cursor_agent").parse(
        Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {}
    )
    kinds, unknown = _counted(path)
    assert Counter(e.kind for e in parsed.events) == kinds
    assert parsed.unknown_types == dict(unknown) and not parsed.bad and not parsed.usage
    (info,) = parsed.sessions
    assert info.uid == f"cursor_agent:{path.stem}"
    assert info.parent_uid == ("cursor_agent:parent0001" if "subagents" in rel else None)


def test_results_join_their_calls_and_the_query_wrapper_is_removed() -> None:
    path = BASE / FILES[3]
    parsed = adapter_named("cursor_agent").parse(
        Chunk(path.read_bytes(), 0, True, FileContext(str(path), FILES[3])), {}
    )
    results = [(e.tool, e.call_id, e.is_error) for e in parsed.events if e.kind == "tool_result"]
    assert results == [("Bash", None, False), ("StrReplace", "call_7", True)]
    first = parsed.events[0]
    assert first.kind == "user_msg" and first.body == "Run the tests and fix the failure."


def test_only_transcripts_are_claimed() -> None:
    agent = adapter_named("cursor_agent")
    assert agent.matches("p/agent-transcripts/a.jsonl")
    assert agent.matches("p/agent-transcripts/a/a.jsonl")
    assert agent.matches("p/agent-transcripts/a/subagents/b.jsonl")
    assert not agent.matches("p/agent-transcripts/a.txt")
    assert not agent.matches("p/agent-transcripts/a/b.jsonl")
    assert not agent.matches("p/mcps/a.jsonl") and not agent.matches("a.jsonl")


async def test_cursor_agent_end_to_end_and_an_append(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    shutil.copytree(BASE, root, ignore=shutil.ignore_patterns("README.md"))
    store_db = tmp_path / "h.db"
    agent = adapter_named("cursor_agent")
    path = root / FILES[0]
    async with await Store.open(store_db) as store:
        first = await Ingestor(store).backfill(discover([(agent, root)]))
        with path.open("a") as fh:
            line = {"role": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}
            fh.write(json.dumps(line) + "\n")
        second = await Ingestor(store).backfill(discover([(agent, root)]))
        third = await Ingestor(store).backfill(discover([(agent, root)]))
    expected = sum(sum(_counted(BASE / f)[0].values()) for f in FILES)
    assert first.files_read == 4 and first.events == expected
    assert second.files_read == 1 and second.events == 1 and third.files_read == 0
    con = sqlite3.connect(store_db)
    parents = dict(con.execute("SELECT uid, parent_uid FROM sessions WHERE parent_uid IS NOT NULL"))
    con.close()
    assert parents == {"cursor_agent:child0001": "cursor_agent:parent0001"}

"""Continue adapter: golden facts read off four real session documents and their real
``sessions.json`` index (tests/fixtures/continue/README.md), a rewrite replacing content,
tool calls of the newer format, and "no usage recorded" end to end.

Read with python's json module: every history item has a message id; roles are
28fdaafd: user, assistant; the other three: user, assistant, user, assistant. The index
lists all four, ``dateCreated`` 1734580436896 for 28fdaafd.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import continue_dev
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, one, parse_fixture, usage_of

S1 = "28fdaafd-5b3a-4342-90db-c3581e27b607"
S4 = ("67733f7c-959d-4521-b326-779efe1967e7", "7bc6e275-126c-4a65-ab0a-0607c64789f9")


def test_real_sessions_golden() -> None:
    p = parse_fixture(continue_dev.ADAPTER, f"{S1}.json")
    assert kinds(p) == {"user_msg": 1, "assistant_msg": 1}
    assert p.usage == [] and p.bad == []
    (info,) = p.sessions
    assert info.uid == f"continue:{S1}"
    assert (info.title, info.cwd) == ("Fixing Python code formatting issues", "/workspace")
    assert info.first_ts == 1734580436896  # from the index
    for sid in S4:
        assert kinds(parse_fixture(continue_dev.ADAPTER, f"{sid}.json")) == {
            "user_msg": 2,
            "assistant_msg": 2,
        }


def test_tool_calls_and_results_of_the_newer_format() -> None:
    doc = (
        b'{"sessionId":"s","title":"t","workspaceDirectory":"/w","history":['
        b'{"message":{"role":"user","content":"run tests","id":"u1"}},'
        b'{"message":{"role":"assistant","content":"","id":"a1","toolCalls":[{"id":"tc1",'
        b'"type":"function","function":{"name":"run_terminal_command",'
        b'"arguments":"{\\"command\\":\\"pytest -q\\"}"}}]}},'
        b'{"message":{"role":"tool","content":"1 passed","toolCallId":"tc1","id":"r1"}}]}'
    )
    p = continue_dev.ADAPTER.parse(Chunk(doc, 0, True, FileContext("/r/s.json", "s.json")), {})
    assert kinds(p) == {"user_msg": 1, "tool_call": 1, "tool_result": 1}
    (result,) = [e for e in p.events if e.kind == "tool_result"]
    assert (result.call_id, result.tool) == ("tc1", "run_terminal_command")


def test_only_session_documents_are_claimed() -> None:
    assert continue_dev.matches(f"{S1}.json")
    assert not continue_dev.matches("sessions.json")
    assert not continue_dev.matches("../dev_data/tokens_generated.jsonl")
    assert not continue_dev.matches("x/config.json")
    assert not continue_dev.ADAPTER.records_usage


async def test_ingest_and_rewrite(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".continue" / "sessions"
    shutil.copytree(FIXTURES / "continue", root, ignore=shutil.ignore_patterns("README.md"))
    first = await ingest(store, continue_dev.ADAPTER, root)
    assert first.files_read == 4  # not the index
    uid = f"continue:{S1}"
    assert await kinds_of(store, uid) == {"user_msg": 1, "assistant_msg": 1}
    assert await usage_of(store, uid) == (0, None, None, None, None)
    # Continue rewrites the document as the chat goes on: same ids replace, new ones add.
    doc = orjson.loads((root / f"{S1}.json").read_bytes())
    doc["history"].append({"message": {"role": "user", "content": "thanks", "id": "n1"}})
    (root / f"{S1}.json").write_bytes(orjson.dumps(doc))
    await ingest(store, continue_dev.ADAPTER, root)
    assert await kinds_of(store, uid) == {"user_msg": 2, "assistant_msg": 1}
    assert await one(store, "SELECT count(*) FROM sessions WHERE uid = ?", uid) == 1

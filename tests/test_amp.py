"""Amp adapter: golden facts read off cli-continues' two hand-written threads (simplified,
not the real schema: tests/fixtures/amp/README.md), usage of the real per-message shape
(agentsview's parser of real threads, built inline), and an ingest.

Read by eye: test-thread-1.json holds 3 user texts, 3 assistant texts and 2 ``tool_use``
blocks (without names or ids); test-thread-edge.json holds 2 user texts, 1 non-empty assistant text,
one ``tool_use``, an assistant message without content, one whose text is empty, and a
``provider`` block.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import amp
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, parse_fixture, usage_of

THREAD = (
    b'{"v": 3, "id": "T-1", "created": 1740470400000, "title": "t", "messages": ['
    b'{"role": "user", "messageId": 0, "content": [{"type": "text", "text": "run tests"}]},'
    b'{"role": "assistant", "messageId": 1, "content": [{"type": "tool_use", "id": "tu1",'
    b' "name": "Bash", "input": {"cmd": "pytest"}}], "usage": {"model": "claude-sonnet-4",'
    b' "inputTokens": 10, "outputTokens": 20, "cacheCreationInputTokens": 300,'
    b' "cacheReadInputTokens": 4000, "timestamp": "2025-02-25T08:00:01Z"}},'
    b'{"role": "user", "messageId": 2, "content": [{"type": "tool_result", "toolUseID": "tu1",'
    b' "run": {"status": "error", "error": {"message": "exit 1"}}}]},'
    b'{"role": "assistant", "messageId": 3, "content": [{"type": "text", "text": "done"}],'
    b' "usage": {"model": "gpt-5", "inputTokens": 0, "outputTokens": 5,'
    b' "cacheCreationInputTokens": 700, "cacheReadInputTokens": 0}}]}'
)


def test_hand_written_threads_golden() -> None:
    one = parse_fixture(amp.ADAPTER, "test-thread-1.json")
    assert kinds(one) == {"user_msg": 3, "assistant_msg": 3, "tool_call": 2}
    assert one.sessions[0].title == "Create a login form component"
    assert one.sessions[0].first_ts == 1740470400000
    assert one.usage == []  # usageLedger is not a field of real threads
    edge = parse_fixture(amp.ADAPTER, "test-thread-edge.json")
    assert kinds(edge) == {"user_msg": 2, "assistant_msg": 1, "tool_call": 1}
    assert edge.unknown_types == {"block/provider": 1}


def test_real_usage_and_tool_result_shapes() -> None:
    p = amp.ADAPTER.parse(Chunk(THREAD, 0, True, FileContext("/r/T-1.json", "T-1.json")), {})
    assert kinds(p) == {
        "user_msg": 1,
        "tool_call": 1,
        "test_run": 1,
        "tool_result": 1,
        "error": 1,
        "assistant_msg": 1,
    }
    (result,) = [e for e in p.events if e.kind == "tool_result"]
    assert (result.call_id, result.tool, result.is_error) == ("tu1", "Bash", True)
    a, b = p.usage
    assert (a.input_tokens, a.cache_write_5m_tokens, a.cache_read_tokens) == (10, 300, 4000)
    assert (b.model, b.input_tokens, b.cache_write_5m_tokens) == ("gpt-5", 700, 0)
    assert all(u.replace for u in p.usage)


def test_roots_and_matches(tmp_path: Path) -> None:
    assert amp.default_roots({}, tmp_path) == [tmp_path / ".local/share/amp/threads"]
    env = {"XDG_DATA_HOME": str(tmp_path / "d")}
    assert amp.default_roots(env, tmp_path) == [tmp_path / "d" / "amp" / "threads"]
    assert amp.matches("T-1.json") and not amp.matches("x/T-1.json")


async def test_ingest(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".local" / "share" / "amp" / "threads"
    shutil.copytree(FIXTURES / "amp", root, ignore=shutil.ignore_patterns("README.md"))
    (root / "T-1.json").write_bytes(THREAD)
    assert (await ingest(store, amp.ADAPTER, root)).files_read == 3
    assert (await kinds_of(store, "amp:T-1"))["tool_result"] == 1
    assert await usage_of(store, "amp:T-1") == (2, 710, 25, 4000, 300)
    assert (await ingest(store, amp.ADAPTER, root)).bytes_read == 0

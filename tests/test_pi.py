"""Pi adapter: golden numbers read off the fixtures (see tests/fixtures/pi/README.md) and an
end-to-end ingest through the store.

How the expectations were read (python's json module over the files, not the adapter):
per ``message`` entry by ``message.role``: user → user_msg; assistant content blocks
``thinking`` (non-blank) / ``text`` (non-blank) / ``toolCall``, ``stopReason`` aborted and
error; toolResult entries and their ``isError``; ``edit``/``write`` tool calls; the sums of
``usage.input/output/cacheRead/cacheWrite`` over assistant messages with any count.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import pi
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, one, parse_fixture, usage_of

V1 = (
    "--Users-badlogic-workspaces-pi-mono--/"
    "2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl"
)
V3 = (
    "--tmp-agent-history-real-agent-pi-workspace--/"
    "2026-06-05T05-24-28-246Z_019e963d-6bd6-7ade-8a49-256ac3391bdd.jsonl"
)
TREE = "--Users-alice-code-my-project--/2025-01-01T10-00-00-000Z_pi-test-session-uuid.jsonl"
V1_USAGE = (439, 1049, 83156, 43229469, 4296232)


def test_real_v1_session_golden() -> None:
    p = parse_fixture(pi.ADAPTER, V1)
    assert p.lines == 1019 and p.bad == [] and p.unknown_types == {}
    assert kinds(p) == {
        "user_msg": 88,
        "assistant_msg": 244,
        "thinking": 1,
        "tool_call": 391,
        "tool_result": 373,  # 18 calls of aborted turns have no result
        "edit": 149,  # 146 edit + 3 write calls
        "error": 20,  # 19 results with isError, 1 stopReason error
        "human_intervention": 21,  # stopReason aborted
        "test_run": 1,  # `cd packages/tui && npm test -- truncated-text.test.ts`
        "lifecycle": 1,  # one model_change; 103 thinking_level_change add none
    }
    assert len(p.usage) == 439
    sums = tuple(
        sum(getattr(u, k) for u in p.usage)
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_5m_tokens")
    )
    assert (len(p.usage), *sums) == V1_USAGE
    assert {u.model for u in p.usage} >= {"claude-sonnet-4-5"}
    (info,) = p.sessions
    assert info.uid == "pi:d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert info.cwd == "/Users/badlogic/workspaces/pi-mono"


def test_real_v3_session_golden() -> None:
    p = parse_fixture(pi.ADAPTER, V3)
    assert kinds(p) == {"lifecycle": 2, "user_msg": 1, "assistant_msg": 1}
    (fact,) = p.usage
    assert (fact.model, fact.input_tokens, fact.output_tokens) == ("gpt-5.5", 433, 9)
    (info,) = p.sessions
    assert (info.title, info.model) == ("agent-history pi smoke", "gpt-5.5")


def test_constructed_tree_session_counts_its_bad_and_unknown_lines() -> None:
    p = parse_fixture(pi.ADAPTER, TREE)
    assert len(p.bad) == 1 and p.unknown_types == {"unknown_future_entry_type": 1}
    assert kinds(p) == {
        "user_msg": 2,
        "thinking": 1,  # the redacted thinking block is empty
        "assistant_msg": 2,
        "tool_call": 1,
        "tool_result": 1,
        "lifecycle": 2,  # model_change, compaction
    }
    assert sum(u.input_tokens for u in p.usage) == 300


def test_a_branched_copy_of_an_entry_counts_once() -> None:
    line = (FIXTURES / "pi" / V3).read_bytes().splitlines(keepends=True)[-1]
    a = pi.ADAPTER.parse(Chunk(line, 0, True, FileContext("/x/a.jsonl", "p/a.jsonl")), {})
    b = pi.ADAPTER.parse(Chunk(line, 0, True, FileContext("/x/b.jsonl", "p/b.jsonl")), {})
    assert a.usage[0].dedup_key == b.usage[0].dedup_key


def test_roots_and_matches(tmp_path: Path) -> None:
    assert pi.default_roots({}, tmp_path) == [tmp_path / ".pi" / "agent" / "sessions"]
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "a")}
    assert pi.default_roots(env, tmp_path) == [tmp_path / "a" / "sessions"]
    assert pi.matches(V1) and not pi.matches("auth.json") and not pi.matches("x.jsonl")


async def test_sessions_ingest_once(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".pi" / "agent" / "sessions"
    shutil.copytree(FIXTURES / "pi", root, ignore=shutil.ignore_patterns("README.md"))
    (root.parent / "auth.json").write_text('{"anthropic": "sk-secret"}')
    first = await ingest(store, pi.ADAPTER, root)
    assert first.files_read == 3
    uid = "pi:d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert (await kinds_of(store, uid))["tool_call"] == 391
    assert await usage_of(store, uid) == V1_USAGE
    sql = "SELECT title FROM sessions WHERE uid = ?"
    assert (
        await one(store, sql, "pi:019e963d-6bd6-7ade-8a49-256ac3391bdd") == "agent-history pi smoke"
    )
    again = await ingest(store, pi.ADAPTER, root)
    assert again.bytes_read == 0
    assert await usage_of(store, uid) == V1_USAGE

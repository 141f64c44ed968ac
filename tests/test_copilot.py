"""GitHub Copilot CLI adapter: golden numbers read off the fixtures (one real session from
softwaresalt/agent-engram, two scrubbed agent-sessions fixtures; see
tests/fixtures/copilot/README.md), usage from messages and shutdown metrics without double
counting, and an end-to-end ingest through the store.

How the expectations were read (python's json module over the files, not the adapter):
real session 07c40cd0: 592 lines; 9 ``user.message``; 75 ``assistant.message`` of which 20
have non-blank ``content`` and 14 a non-blank ``reasoningText``, 86 ``toolRequests`` in all;
86 ``tool.execution_complete``, none with ``success: false``; 1 ``session.error``;
4 ``session.task_complete``; lifecycle = 1 start + 3 model_change + 2 mode_changed + 1 info
+ 2 warning = 9; the sum of ``outputTokens`` is 22 185 and there is no shutdown record.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.declared import copilot
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, one, parse_fixture, usage_of

REAL = "07c40cd0-ff51-4d6e-bdcd-ac2f90877203"
SMALL = "copilot_stage0_small"
V1 = "aaaabbbb-1111-2222-3333-ccccddddeeee"


def test_real_session_golden() -> None:
    p = parse_fixture(copilot.ADAPTER, f"{REAL}/events.jsonl")
    assert p.lines == 592 and p.bad == [] and p.unknown_types == {}
    assert kinds(p) == {
        "user_msg": 9,
        "assistant_msg": 20,
        "thinking": 14,
        "tool_call": 86,
        "tool_result": 86,
        "error": 1,
        "completion": 4,
        "lifecycle": 9,
    }
    calls = {e.call_id: e.tool for e in p.events if e.kind == "tool_call"}
    results = {e.call_id: e.tool for e in p.events if e.kind == "tool_result"}
    assert results == calls  # every result joined to its call, with the call's tool name
    assert sum(1 for t in calls.values() if t == "powershell") == 60
    assert [u.output_tokens for u in p.usage][:3] == [178, 125, 91]
    assert sum(u.output_tokens for u in p.usage) == 22185
    assert {u.input_tokens for u in p.usage} == {0}  # Copilot records output only per message
    (info,) = p.sessions
    assert info.uid == f"copilot:{REAL}"
    assert info.cwd == "D:\\Source\\GitHub\\agent-engram"
    assert info.git_branch == "007-agent-engineering-refactor"
    assert info.title == "Break Down Feature 007"  # workspace.yaml summary
    assert info.version == "1.0.10"
    assert info.model == "claude-sonnet-4.6"  # the last model change, "claude-opus-4.6" before
    assert {u.model for u in p.usage} == {"claude-opus-4.6", "claude-sonnet-4.6"}


def test_shutdown_metrics_complete_the_message_counts() -> None:
    # small.jsonl: messages m-1 (12) and m-2 (3) of gpt-5-mini; the shutdown's tokenDetails
    # say input 100 (non-cached), output 15, cache_read 5: the shutdown adds input and cache.
    p = parse_fixture(copilot.ADAPTER, f"{SMALL}.jsonl")
    facts = {u.dedup_key.rsplit(":", 1)[-1]: u for u in p.usage}
    assert sorted(facts) == ["gpt-5-mini", "m-1", "m-2"]
    shut = facts["gpt-5-mini"]
    assert (shut.input_tokens, shut.output_tokens, shut.cache_read_tokens) == (100, 0, 5)
    assert shut.replace
    assert sum(u.output_tokens for u in p.usage) == 15
    assert p.sessions[0].ended


def test_per_model_shutdown_usage_subtracts_what_messages_counted() -> None:
    lines = [
        b'{"type":"session.start","data":{"sessionId":"s1","selectedModel":"m"},"id":"a"}',
        b'{"type":"assistant.message","data":{"messageId":"x","content":"hi","outputTokens":40},"id":"b"}',
        b'{"type":"session.shutdown","data":{"modelMetrics":{"m":{"requests":{"count":1},'
        b'"usage":{"inputTokens":1000,"outputTokens":50,"cacheReadTokens":600,'
        b'"cacheWriteTokens":100,"reasoningTokens":7}}}},"id":"c"}',
    ]
    from helixd.adapters.base import Chunk, FileContext

    data = b"\n".join(lines) + b"\n"
    p = copilot.ADAPTER.parse(
        Chunk(data, 0, True, FileContext("/r/s1/events.jsonl", "s1/events.jsonl")), {}
    )
    msg, shut = p.usage
    assert (msg.output_tokens, msg.model) == (40, "m")
    assert (shut.input_tokens, shut.output_tokens) == (300, 10)
    assert (shut.cache_read_tokens, shut.cache_write_5m_tokens, shut.reasoning_tokens) == (
        600,
        100,
        7,
    )


def test_scrubbed_fixtures_golden() -> None:
    p = parse_fixture(copilot.ADAPTER, f"{SMALL}.jsonl")
    # 12 lifecycle: start, model_change, info, system.message, auto_mode_resolved,
    # usage_checkpoint, subagent.started/completed, system.notification, resume x2, truncation;
    # errors: session.error + 3 failed tool results; hook.start and turn_start/end add none.
    assert kinds(p) == {
        "lifecycle": 12,
        "assistant_msg": 5,
        "error": 4,
        "tool_call": 4,
        "tool_result": 4,
        "user_msg": 2,
        "thinking": 2,
        "completion": 1,
        "human_intervention": 1,
    }
    assert sum(e.is_sidechain for e in p.events if e.kind == "tool_call") == 1  # subagent's
    v1 = parse_fixture(copilot.ADAPTER, f"{V1}/events.jsonl")
    assert kinds(v1) == {
        "lifecycle": 1,
        "user_msg": 1,
        "tool_call": 1,
        "tool_result": 1,
        "assistant_msg": 1,
    }
    assert sum(u.output_tokens for u in v1.usage) == 26
    assert v1.sessions[0].cwd == "/tmp/project"


def test_only_session_logs_are_claimed(tmp_path: Path) -> None:
    assert copilot.matches(f"{REAL}/events.jsonl")
    assert copilot.matches("0000.jsonl")  # the older flat layout
    for rel in (
        f"{REAL}/workspace.yaml",
        f"{REAL}/checkpoints/index.md",
        "command-history-state.json",
        "config.json",
        f"{REAL}/files/notes.jsonl",
    ):
        assert not copilot.matches(rel), rel
    env = {"COPILOT_HOME": str(tmp_path / "c")}
    assert copilot.default_roots(env, tmp_path) == [tmp_path / "c" / "session-state"]
    assert copilot.default_roots({}, tmp_path) == [tmp_path / ".copilot" / "session-state"]


async def test_sessions_ingest_once(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".copilot" / "session-state"
    shutil.copytree(FIXTURES / "copilot", root, ignore=shutil.ignore_patterns("README.md"))
    (root / "command-history-state.json").write_text('{"commandHistory":["secret"]}')
    first = await ingest(store, copilot.ADAPTER, root)
    assert first.files_read == 3
    assert await kinds_of(store, f"copilot:{REAL}") == {
        "user_msg": 9,
        "assistant_msg": 20,
        "thinking": 14,
        "tool_call": 86,
        "tool_result": 86,
        "error": 1,
        "completion": 4,
        "lifecycle": 9,
    }
    assert await usage_of(store, f"copilot:{REAL}") == (75, 0, 22185, 0, 0)
    assert await usage_of(store, f"copilot:{SMALL}") == (3, 100, 15, 5, 0)
    title = "SELECT title, git_branch FROM sessions WHERE uid = ?"
    assert await one(store, title, f"copilot:{REAL}") == (
        "Break Down Feature 007",
        "007-agent-engineering-refactor",
    )
    again = await ingest(store, copilot.ADAPTER, root)
    assert again.bytes_read == 0
    assert await usage_of(store, f"copilot:{REAL}") == (75, 0, 22185, 0, 0)

"""Factory Droid adapter: golden facts read off agent-sessions' two scrubbed sessions
(tests/fixtures/droid/README.md), session totals from ``.settings.json``, and an ingest.

Read by eye: droid_s1.jsonl is session_start, a user prompt, an ``Execute`` tool_use
(``ls /nope``) and its tool_result; droid_large.jsonl is session_start, then 2 user
prompts, 3 assistant texts ("Ok", "Captured multiline output.", "Ok"), one ``Execute``
call and its result.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import droid
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, one, parse_fixture, usage_of

SETTINGS = (
    b'{"model": "claude-sonnet-4-5", "providerLock": "anthropic",'
    b' "providerLockTimestamp": "2026-05-01T01:02:03.000Z", "tokenUsage": {"inputTokens": 100,'
    b' "outputTokens": 50, "cacheCreationTokens": 20, "cacheReadTokens": 10,'
    b' "thinkingTokens": 5}}'
)


def test_scrubbed_sessions_golden() -> None:
    small = parse_fixture(droid.ADAPTER, "droid_s1.jsonl")
    assert kinds(small) == {"user_msg": 1, "tool_call": 1, "tool_result": 1}
    assert small.sessions[0].uid == "droid:droid_s1"
    assert small.sessions[0].cwd == "/tmp"
    large = parse_fixture(droid.ADAPTER, "-tmp-large/droid_large.jsonl")
    assert kinds(large) == {"user_msg": 2, "assistant_msg": 3, "tool_call": 1, "tool_result": 1}
    assert large.sessions[0].title == "Stage0 Droid Large"
    (call,) = [e for e in large.events if e.kind == "tool_call"]
    assert (call.tool, call.body) == (
        "Execute",
        "printf 'line1\\nline2\\nline3\\n'",
    )  # a shell call


def test_settings_give_the_session_totals() -> None:
    rel = "-tmp-large/droid_large.settings.json"
    p = droid.ADAPTER.parse(Chunk(SETTINGS, 0, True, FileContext("/r/" + rel, rel)), {})
    (u,) = p.usage
    assert (u.dedup_key, u.session_uid, u.model, u.replace) == (
        "droid:droid_large",
        "droid:droid_large",
        "claude-sonnet-4-5",
        True,
    )
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (100, 55, 10)
    assert (u.cache_write_5m_tokens, u.reasoning_tokens) == (20, 5)


def test_roots_and_matches(tmp_path: Path) -> None:
    assert droid.default_roots({}, tmp_path) == [tmp_path / ".factory" / "sessions"]
    assert droid.matches("x.jsonl") and droid.matches("p/x.settings.json")
    assert not droid.matches("p/q/x.jsonl") and not droid.matches("p/config.json")


async def test_ingest_with_settings(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".factory" / "sessions"
    shutil.copytree(FIXTURES / "droid", root, ignore=shutil.ignore_patterns("README.md"))
    (root / "-tmp-large" / "droid_large.settings.json").write_bytes(SETTINGS)
    assert (await ingest(store, droid.ADAPTER, root)).files_read == 3
    uid = "droid:droid_large"
    assert (await kinds_of(store, uid))["assistant_msg"] == 3
    assert await usage_of(store, uid) == (1, 100, 55, 10, 20)
    model = await one(store, "SELECT model FROM sessions WHERE uid = ?", uid)
    assert model == "claude-sonnet-4-5"
    # the settings are rewritten as the session goes on: the totals replace, never add
    (root / "-tmp-large" / "droid_large.settings.json").write_bytes(
        SETTINGS.replace(b'"inputTokens": 100', b'"inputTokens": 300')
    )
    await ingest(store, droid.ADAPTER, root)
    assert await usage_of(store, uid) == (1, 300, 55, 10, 20)

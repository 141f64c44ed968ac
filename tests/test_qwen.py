"""Qwen Code adapter: golden facts read off agent-sessions' two constructed/scrubbed
recordings (tests/fixtures/qwen/README.md), usage from ``usageMetadata`` (the shape of
Qwen Code's ``ChatRecord``, built inline: no public file carries it), and an ingest.

Read by eye: 019f…0001.jsonl has a user prompt (with a hook-context part and
``systemPayload.displayText``), an assistant record with a thought part and a
``functionCall``, its ``tool_result`` (status success), a final assistant text, a
``ui_telemetry`` system record and a ``notification`` user record.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import qwen
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, parse_fixture, usage_of

SID = "019f0000-0000-7000-8000-000000000001"
REL = f"fixture-project/chats/{SID}.jsonl"


def test_constructed_recording_golden() -> None:
    p = parse_fixture(qwen.ADAPTER, REL)
    assert p.lines == 6 and p.bad == [] and p.unknown_types == {}
    assert kinds(p) == {
        "user_msg": 1,
        "thinking": 1,
        "tool_call": 1,
        "tool_result": 1,
        "assistant_msg": 1,
        "lifecycle": 1,  # the notification; ui_telemetry adds nothing
    }
    (prompt,) = [e for e in p.events if e.kind == "user_msg"]
    assert prompt.body == "Inspect the synthetic fixture."  # displayText, not the hook part
    (result,) = [e for e in p.events if e.kind == "tool_result"]
    assert (result.call_id, result.tool, result.status) == (
        "synthetic-call-1",
        "read_file",
        "success",
    )
    (info,) = p.sessions
    assert (info.uid, info.git_branch, info.model) == (
        f"qwen:{SID}",
        "fixture-branch",
        "synthetic-model",
    )


def test_usage_metadata_counts_once_per_record() -> None:
    line = (
        b'{"uuid":"a1","parentUuid":null,"sessionId":"s","timestamp":"2026-08-17T12:00:01Z",'
        b'"type":"assistant","cwd":"/w","version":"0.21","model":"qwen3-coder",'
        b'"message":{"role":"model","parts":[{"text":"ok"}]},"usageMetadata":'
        b'{"promptTokenCount":1000,"cachedContentTokenCount":600,"candidatesTokenCount":50,'
        b'"thoughtsTokenCount":20,"totalTokenCount":1070}}\n'
    )
    rel = "p/chats/s.jsonl"
    p = qwen.ADAPTER.parse(Chunk(line, 0, True, FileContext("/r/" + rel, rel)), {})
    (u,) = p.usage
    assert (u.dedup_key, u.model) == ("qwen:a1", "qwen3-coder")
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (
        400,
        600,
        70,
        20,
    )


def test_roots_and_matches(tmp_path: Path) -> None:
    assert qwen.default_roots({}, tmp_path) == [tmp_path / ".qwen" / "projects"]
    env = {"QWEN_HOME": str(tmp_path / "q")}
    assert qwen.default_roots(env, tmp_path) == [tmp_path / "q" / "projects"]
    assert qwen.matches(REL)
    for rel in ("p/chats/s.runtime.json", "p/chats/archive/s.jsonl", "settings.json"):
        assert not qwen.matches(rel), rel


async def test_ingest(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".qwen" / "projects"
    shutil.copytree(FIXTURES / "qwen", root, ignore=shutil.ignore_patterns("README.md"))
    assert (await ingest(store, qwen.ADAPTER, root)).files_read == 2
    assert (await kinds_of(store, f"qwen:{SID}"))["tool_call"] == 1
    assert await usage_of(store, f"qwen:{SID}") == (0, None, None, None, None)
    assert (await ingest(store, qwen.ADAPTER, root)).bytes_read == 0

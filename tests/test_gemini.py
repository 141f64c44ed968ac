"""Gemini CLI adapter: golden numbers read off the fixture files by hand, and end-to-end
ingests in temp dirs (rewritten ``.json``, appended ``.jsonl`` with rewritten message lines,
``$set``/``$rewindTo``, resume into a second file, half-written and broken documents).

Expected numbers come from reading the fixtures (see tests/fixtures/gemini/README.md):
input = Σ(input − cached + tool), cache read = Σ cached, output = Σ(output + thoughts),
reasoning = Σ thoughts, one fact per message id.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import gemini
from helixd.core.records import Parsed
from helixd.core.timeparse import parse_ts
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.store.database import Store
from tests.agent_helpers import kinds_of, one
from tests.agent_helpers import usage_with_reasoning as usage_of

FIX = Path(__file__).parent / "fixtures" / "gemini"
MISCHA = FIX / "mischa-thisness__M-Gemini" / "chats"
JAZZY = FIX / "jazzyalex__agent-sessions" / "chats"
BUILT = FIX / "constructed" / "chats"
MAIN_SID = "5e1f0a2b-6c1d-4e8f-9a0b-1c2d3e4f5a6b"
SUB_SID = "7a7a7a7a-0000-4000-8000-000000000001"


def parse_file(path: Path, rel: str | None = None) -> Parsed:
    rel = rel or f"proj/chats/{path.name}"
    return gemini.ADAPTER.parse(Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {})


def kinds(parsed: Parsed) -> dict[str, int]:
    return dict(Counter(e.kind for e in parsed.events))


def totals(parsed: Parsed) -> tuple[int, int, int, int, int]:
    u = parsed.usage
    return (
        len(u),
        sum(f.input_tokens for f in u),
        sum(f.output_tokens for f in u),
        sum(f.cache_read_tokens for f in u),
        sum(f.reasoning_tokens for f in u),
    )


def test_fixture_files_are_the_recorded_corpus() -> None:
    """Copied files still match the SHA-256 recorded in the README table."""
    readme = (FIX / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", readme, re.M)
    assert len(rows) >= 4
    for name, digest in rows:
        path = next(p for p in FIX.rglob("*") if p.as_posix().endswith(name))
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name


# -- goldens (adapter only) ----------------------------------------------------------------


def test_real_session_with_three_shell_calls() -> None:
    # session-2025-12-31T01-49-1593ed60.json: 1 user + 4 gemini messages, each gemini
    # message has text and thoughts, the first three one run_shell_command each (exit 0).
    p = parse_file(MISCHA / "session-2025-12-31T01-49-1593ed60.json")
    assert kinds(p) == {
        "user_msg": 1,
        "thinking": 4,
        "assistant_msg": 4,
        "tool_call": 3,
        "tool_result": 3,
    }
    # tokens (input, output, cached, thoughts): (6764,31,3093,116) (6986,75,6138,206)
    # (7130,37,0,51) (7304,23,6008,51)
    assert totals(p) == (4, 3671 + 848 + 7130 + 1296, 147 + 281 + 88 + 74, 15239, 424)
    assert {f.model for f in p.usage} == {"gemini-3-pro-preview"}
    calls = {e.call_id: e for e in p.events if e.kind == "tool_call"}
    results = [e for e in p.events if e.kind == "tool_result"]
    assert [calls[r.call_id].summary for r in results] == [
        "run_shell_command: pgrep -af cosmic-store",
        "run_shell_command: kill 130096 149597",
        "run_shell_command: pgrep -af cosmic-store",
    ]
    assert all(r.parent_key == calls[r.call_id].key and not r.is_error for r in results)
    (info,) = p.sessions
    assert info.uid == "gemini:1593ed60-014f-4810-ad21-854a87108a6b"
    assert info.first_ts == parse_ts("2025-12-31T03:01:12.130Z")
    assert info.last_ts == parse_ts("2025-12-31T03:01:51.964Z")
    assert p.consumed == (MISCHA / "session-2025-12-31T01-49-1593ed60.json").stat().st_size


def test_real_session_with_info_error_cancel_and_failed_commands() -> None:
    # session-2025-12-30T01-16-3f9ce747.json: error + info (update notice) + user + 4 gemini
    # + info "Request cancelled." + user + 4 gemini.  Seven tool calls: list_directory and six
    # shell commands, one cancelled by the user, two ending "Exit Code: 1".
    p = parse_file(MISCHA / "session-2025-12-30T01-16-3f9ce747.json")
    assert kinds(p) == {
        "error": 1 + 2,
        "lifecycle": 1,
        "user_msg": 2,
        "thinking": 8,
        "assistant_msg": 8,
        "tool_call": 7,
        "tool_result": 7,
        "human_intervention": 2,
    }
    failed = [e for e in p.events if e.kind == "tool_result" and e.is_error]
    assert len(failed) == 3  # the cancelled call and the two exit-code-1 commands
    assert totals(p) == (8, 18487, 1571, 39192, 1109)
    assert p.sessions[0].title == "Update Gemini CLI via npm"


def test_hand_written_recording_with_legacy_model_type() -> None:
    # large.json (agent-sessions): "model" messages with parts, an info "Request cancelled."
    # and one shell command with exit code 1 inside a success status.
    p = parse_file(JAZZY / "session-2025-12-16T23-47-b4f17607.json")
    assert kinds(p) == {
        "user_msg": 2,
        "thinking": 1,
        "tool_call": 2,
        "tool_result": 2,
        "error": 1,
        "human_intervention": 1,
        "assistant_msg": 2,
    }
    assert totals(p) == (1, 100, 10, 0, 0)


def test_jsonl_recording_with_set_lines_and_rewritten_messages() -> None:
    # constructed session-…-5e1f0a2b.jsonl: g1 is written three times (running, +tokens,
    # +result); three $set lastUpdated lines, a $set summary, a $rewindTo, a warning and a
    # record type the adapter does not know.
    p = parse_file(BUILT / "session-2026-03-02T09-15-5e1f0a2b.jsonl")
    assert kinds(p) == {
        "user_msg": 2,
        "thinking": 1,
        "tool_call": 2,
        "test_run": 1,
        "tool_result": 2,
        "error": 1,
        "assistant_msg": 2,
        "edit": 1,
        "lifecycle": 2,
    }
    assert len({e.key for e in p.events}) == len(p.events)
    # g1 (2000,50,0,30,tool 0), g2 (2600,80,1800,40,tool 10), g3 (3000,20,2500,0)
    assert totals(p) == (3, 2000 + 810 + 500, 80 + 120 + 20, 4300, 70)
    assert all(f.replace for f in p.usage)
    assert [f.dedup_key for f in p.usage] == [f"gemini:{MAIN_SID}:g{i}" for i in (1, 2, 3)]
    pytest_result = next(e for e in p.events if e.key == "g1#result:run_shell_command-1")
    assert pytest_result.is_error and "1 failed" in pytest_result.summary
    edit = next(e for e in p.events if e.kind == "edit")
    assert edit.body == "/work/app/cart.py" and edit.parent_key == "g2#call:replace-2"
    assert p.unknown_types == {"canvas": 1}
    (info,) = p.sessions
    assert info.title == "Fix the failing cart test"
    assert info.last_ts == parse_ts("2026-03-02T09:16:06.001Z")
    assert info.agent_type is None and info.parent_uid is None


def test_subagent_file_links_to_its_parent() -> None:
    rel = f"proj/chats/{MAIN_SID}/{SUB_SID}.jsonl"
    assert gemini.matches(rel)
    p = parse_file(BUILT / MAIN_SID / f"{SUB_SID}.jsonl", rel)
    (info,) = p.sessions
    assert info.uid == f"gemini:{SUB_SID}"
    assert info.parent_uid == f"gemini:{MAIN_SID}"
    assert info.agent_type == "subagent" and info.cwd == "/work/app"
    assert totals(p) == (1, 500, 10, 0, 0)


def test_which_files_are_claimed() -> None:
    assert gemini.matches("abc/chats/session-2025-01-01T00-00-0123abcd.json")
    assert gemini.matches("abc/chats/session-2025-01-01T00-00-0123abcd.jsonl")
    assert gemini.matches("abc/chats/parent-id/child-id.jsonl")
    assert not gemini.matches("abc/logs.json")
    assert not gemini.matches("abc/chats/checkpoint-foo.json")
    assert not gemini.matches("abc/chats/parent-id/notes.txt")
    assert gemini.whole_file("abc/chats/session-x.jsonl") and gemini.whole_file("x.json")


def test_default_roots_follow_the_documented_overrides(tmp_path: Path) -> None:
    assert gemini.default_roots({}, tmp_path) == [tmp_path / ".gemini" / "tmp"]
    assert gemini.default_roots({"GEMINI_CLI_HOME": "/alt"}, tmp_path) == [Path("/alt/.gemini/tmp")]
    assert gemini.default_roots(
        {"GEMINI_DATA_DIR": "/a, /b", "GEMINI_CLI_HOME": "/x"}, tmp_path
    ) == [Path("/a"), Path("/b")]


def test_half_written_document_waits_and_a_broken_one_is_reported() -> None:
    whole = (MISCHA / "session-2025-12-31T01-49-1593ed60.json").read_bytes()
    ctx = FileContext("/x/session-a.json", "p/chats/session-a.json")
    half = gemini.ADAPTER.parse(Chunk(whole[: len(whole) // 2], 0, True, ctx), {})
    assert half.consumed == 0 and not half.bad and not half.events
    not_at_end = gemini.ADAPTER.parse(Chunk(whole, 0, False, ctx), {})
    assert not_at_end.consumed == 0
    broken = b'{"sessionId": "s", "messages": [}'
    bad = gemini.ADAPTER.parse(Chunk(broken, 0, True, ctx), {})
    assert bad.consumed == len(broken) and [(b.offset, b.length) for b in bad.bad] == [(0, 33)]
    for junk in (b"\xff\xfe{\x00}", b'{"messages": "no"}', b"[1, 2]", b'{"messages":[1,{"id":2}]}'):
        gemini.ADAPTER.parse(Chunk(junk, 0, True, ctx), {})  # never raises
    latin = b'{"sessionId":"s","messages":[{"id":"m","type":"user","content":"caf\xe9"}]}'
    (ev,) = gemini.ADAPTER.parse(Chunk(latin, 0, True, ctx), {}).events
    assert ev.body == "caf\ufffd"


# -- end to end through ingest and the store ---------------------------------------------------


async def ingest(store: Store, root: Path, **kw: int) -> IngestStats:
    return await Ingestor(store, **kw).backfill(discover([(gemini.ADAPTER, root)]))


async def test_fixture_tree_ingests_and_a_second_run_reads_nothing(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "gemini-tmp"
    shutil.copytree(FIX, root, ignore=shutil.ignore_patterns("README*"))
    first = await ingest(store, root)
    assert first.files_read == 9 and first.bad_lines == 0 and first.unknown_records == 1
    assert await usage_of(store, f"gemini:{MAIN_SID}") == (3, 3310, 220, 4300, 70)
    assert await usage_of(store, "gemini:3f9ce747-7498-479f-9b91-936cc1549014") == (
        8,
        18487,
        1571,
        39192,
        1109,
    )
    assert await one(
        store, "SELECT parent_uid FROM sessions WHERE uid = ?", f"gemini:{SUB_SID}"
    ) == (f"gemini:{MAIN_SID}")
    events = await one(store, "SELECT count(*) FROM events")
    second = await ingest(store, root)
    assert second.files_read == 0 and await one(store, "SELECT count(*) FROM events") == events


def doc(messages: list[dict[str, Any]], **meta: Any) -> bytes:
    head = {"sessionId": "sess-1", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"}
    return orjson.dumps({**head, **meta, "messages": messages}, option=orjson.OPT_INDENT_2)


def msg(
    mid: str, kind: str, text: str, tokens: tuple[int, int, int, int] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": mid,
        "timestamp": "2026-01-01T00:00:01Z",
        "type": kind,
        "content": text,
    }
    if tokens:
        i, o, c, t = tokens
        out.update(
            model="gemini-2.5-pro",
            tokens={
                "input": i,
                "output": o,
                "cached": c,
                "thoughts": t,
                "tool": 0,
                "total": i + o + t,
            },
        )
    return out


async def test_rewritten_json_replaces_edited_messages_without_duplicates(
    store: Store, tmp_path: Path
) -> None:
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    f = chats / "session-2026-01-01T00-00-sess0001.json"
    f.write_bytes(doc([msg("m1", "user", "hi"), msg("m2", "gemini", "draft", (100, 5, 0, 0))]))
    await ingest(store, tmp_path / "root")
    f.write_bytes(
        doc(
            [
                msg("m1", "user", "hi"),
                msg("m2", "gemini", "final answer", (150, 7, 40, 3)),
                msg("m3", "user", "thanks"),
            ],
            summary="Greeting",
        )
    )
    stats = await ingest(store, tmp_path / "root")
    assert stats.replaced == 1
    assert await kinds_of(store, "gemini:sess-1") == {"user_msg": 2, "assistant_msg": 1}
    assert (
        await one(store, "SELECT body FROM events WHERE kind = 'assistant_msg'") == "final answer"
    )
    assert await one(store, "SELECT count(*) FROM events") == 3
    assert await one(store, "SELECT events, messages, title FROM sessions") == (3, 3, "Greeting")
    assert await usage_of(store, "gemini:sess-1") == (1, 110, 10, 40, 3)


async def test_rewritten_message_with_fewer_tokens_replaces_its_usage(
    store: Store, tmp_path: Path
) -> None:
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    f = chats / "session-2026-01-01T00-00-sess0001.json"
    f.write_bytes(doc([msg("m2", "gemini", "a", (900, 50, 0, 0))]))
    await ingest(store, tmp_path / "root")
    f.write_bytes(doc([msg("m2", "gemini", "b", (300, 20, 0, 0))]))
    await ingest(store, tmp_path / "root")
    assert await usage_of(store, "gemini:sess-1") == (1, 300, 20, 0, 0)


async def test_jsonl_message_lines_rewritten_across_ingests(store: Store, tmp_path: Path) -> None:
    # The fixture written in three steps: up to g1 still running, then g1 with tokens and its
    # result, then the rest.  Every step re-reads the file; nothing is duplicated.
    lines = (BUILT / "session-2026-03-02T09-15-5e1f0a2b.jsonl").read_bytes().splitlines(True)
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    f = chats / "session-2026-03-02T09-15-5e1f0a2b.jsonl"
    uid = f"gemini:{MAIN_SID}"
    f.write_bytes(b"".join(lines[:4]))
    await ingest(store, tmp_path / "root")
    assert await kinds_of(store, uid) == {
        "user_msg": 1,
        "thinking": 1,
        "tool_call": 1,
        "test_run": 1,
    }
    assert await usage_of(store, uid) == (0, None, None, None, None)
    f.write_bytes(b"".join(lines[:6]))
    await ingest(store, tmp_path / "root")
    assert await kinds_of(store, uid) == {
        "user_msg": 1,
        "thinking": 1,
        "tool_call": 1,
        "test_run": 1,
        "tool_result": 1,
        "error": 1,
    }
    assert await usage_of(store, uid) == (1, 2000, 80, 0, 30)
    f.write_bytes(b"".join(lines))
    await ingest(store, tmp_path / "root", chunk_bytes=1024)  # several batches per read
    assert sum((await kinds_of(store, uid)).values()) == 14
    assert await usage_of(store, uid) == (3, 3310, 220, 4300, 70)
    assert (
        await one(store, "SELECT title FROM sessions WHERE uid = ?", uid)
        == "Fix the failing cart test"
    )


async def test_resumed_session_in_a_second_file_counts_once(store: Store, tmp_path: Path) -> None:
    # Resume migrates session-….json to session-….jsonl: header, every message again, then new
    # messages.  Same session id and message ids: one session, no extra events or usage.
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    old = [msg("m1", "user", "hi"), msg("m2", "gemini", "hello", (100, 5, 20, 1))]
    (chats / "session-2026-01-01T00-00-sess0001.json").write_bytes(doc(old))
    header = {"sessionId": "sess-1", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"}
    new = [
        header,
        *old,
        {"$set": {"sessionId": "sess-1"}},
        msg("m3", "gemini", "more", (200, 9, 150, 0)),
    ]
    (chats / "session-2026-01-01T00-00-sess0001.jsonl").write_bytes(
        b"".join(orjson.dumps(x) + b"\n" for x in new)
    )
    await ingest(store, tmp_path / "root")
    assert await one(store, "SELECT count(*) FROM sessions") == 1
    assert await kinds_of(store, "gemini:sess-1") == {"user_msg": 1, "assistant_msg": 2}
    assert await usage_of(store, "gemini:sess-1") == (2, 80 + 50, 6 + 9, 170, 1)


async def test_half_written_json_is_read_once_it_is_whole(store: Store, tmp_path: Path) -> None:
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    f = chats / "session-2026-01-01T00-00-sess0001.json"
    whole = doc([msg("m1", "user", "hi"), msg("m2", "gemini", "hello", (10, 1, 0, 0))])
    f.write_bytes(whole[: len(whole) - 40])
    stats = await ingest(store, tmp_path / "root")
    assert stats.bad_lines == 0 and stats.events == 0
    f.write_bytes(whole)
    await ingest(store, tmp_path / "root")
    assert await kinds_of(store, "gemini:sess-1") == {"user_msg": 1, "assistant_msg": 1}
    assert await one(store, "SELECT sum(bad_lines) FROM files") == 0


async def test_broken_document_is_one_bad_line_and_never_stops_an_ingest(
    store: Store, tmp_path: Path
) -> None:
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-01-01T00-00-broken01.json").write_bytes(b'{"sessionId": x}')
    (chats / "session-2026-01-01T00-00-garbage1.jsonl").write_bytes(
        b'\xff\xfe\n{"id": "m", "type": "user", "content": "caf\xe9"}\n[1]\n'
    )
    (chats / "session-2026-01-01T00-00-sess0001.json").write_bytes(doc([msg("m1", "user", "ok")]))
    stats = await ingest(store, tmp_path / "root")
    assert stats.bad_lines == 3 and not stats.errors
    assert await kinds_of(store, "gemini:sess-1") == {"user_msg": 1}


async def test_json_larger_than_one_read_chunk_is_ingested(store: Store, tmp_path: Path) -> None:
    chats = tmp_path / "root" / "proj" / "chats"
    chats.mkdir(parents=True)
    big = [msg(f"m{i}", "user", "x" * 200) for i in range(40)]
    (chats / "session-2026-01-01T00-00-sess0001.json").write_bytes(doc(big))
    await ingest(store, tmp_path / "root", chunk_bytes=1024)
    assert await kinds_of(store, "gemini:sess-1") == {"user_msg": 40}

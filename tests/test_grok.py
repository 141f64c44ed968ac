"""Grok Build adapter: golden numbers read off the (constructed and agent-sessions) fixtures,
the update log joined across reads, retried turns, both summary.json schemas, the
chat_history fallback, and end-to-end ingests of session directories in temp dirs.

See tests/fixtures/grok/README.md for where each fixture comes from and what it holds.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import Counter
from pathlib import Path

import orjson

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import grok
from helixd.core.records import Parsed
from helixd.core.timeparse import parse_ts
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.store.database import Store
from tests.agent_helpers import kinds_of, one
from tests.agent_helpers import usage_with_reasoning as usage_of
from tests.contract_helpers import feed

FIX = Path(__file__).parent / "fixtures" / "grok"
SHOP = "%2Fhome%2Fdev%2Fshop"
A1 = "019f7000-0000-7000-8000-00000000a001"
A2 = "019f7000-0000-7000-8000-00000000a002"
LAB = "%2Ftmp%2Fas-agent-lab%2Fgrok%2Fproject"
J1 = "019f6851-7ec4-7ef0-97d3-03f3eee38755"
J2 = "019f6851-7ec4-7ef0-97d3-03f3eee38756"


def rel_of(path: Path) -> str:
    return path.relative_to(FIX).as_posix()


def parse_file(path: Path, sidecar: bytes | None = None) -> Parsed:
    ctx = FileContext(str(path), rel_of(path), sidecar)
    return grok.ADAPTER.parse(Chunk(path.read_bytes(), 0, True, ctx), {})


def kinds(parsed: Parsed) -> dict[str, int]:
    return dict(Counter(e.kind for e in parsed.events))


def usage_rows(parsed: Parsed) -> list[tuple[str, str, int, int, int, int]]:
    return [
        (
            u.dedup_key.rsplit(":", 1)[1],
            u.model,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.reasoning_tokens,
        )
        for u in parsed.usage
    ]


def test_fixture_files_are_the_recorded_corpus() -> None:
    """Copied files still match the SHA-256 recorded in the README table."""
    readme = (FIX / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", readme, re.M)
    assert len(rows) >= 4
    for name, digest in rows:
        path = next(p for p in FIX.rglob("*") if p.as_posix().endswith(name))
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name


# -- goldens (adapter only) ----------------------------------------------------------------


def test_update_log_golden() -> None:
    # a001/updates.jsonl: turn p-1 = user (2 chunks), thought (2 chunks), message, pytest
    # call + result, message (2 chunks), edit call (kind edit) + diff result, message,
    # turn_completed; turn p-2 = user, git push call rejected by the user, turn_completed
    # (cancelled, two models); then available_commands_update (quiet), a truncated line
    # and a sessionUpdate this adapter does not know.
    p = parse_file(FIX / "constructed" / SHOP / A1 / "updates.jsonl")
    assert kinds(p) == {
        "user_msg": 2,
        "thinking": 1,
        "assistant_msg": 3,
        "tool_call": 3,
        "test_run": 1,
        "tool_result": 3,
        "edit": 1,
        "completion": 2,
        "human_intervention": 2,
    }
    texts = [e.body for e in p.events if e.kind in ("user_msg", "assistant_msg")]
    assert texts == [
        "Run the test suite and fix the failing cart test.",
        "Running the tests first.",
        "One test fails; fixing the total.",
        "Fixed: the total now includes tax.",
        "Now push the branch.",
    ]
    calls = {e.call_id: e for e in p.events if e.kind == "tool_call"}
    assert {c: e.tool for c, e in calls.items()} == {
        "call-1": "run_terminal_cmd",
        "call-2": "search_replace",
        "call-3": "run_terminal_cmd",
    }
    results = {e.call_id: e for e in p.events if e.kind == "tool_result"}
    assert {c: (r.tool, r.is_error, r.parent_key) for c, r in results.items()} == {
        "call-1": ("run_terminal_cmd", False, "call:call-1"),
        "call-2": ("search_replace", False, "call:call-2"),
        "call-3": ("run_terminal_cmd", True, "call:call-3"),
    }
    edit = next(e for e in p.events if e.kind == "edit")
    assert edit.body == "/home/dev/shop/cart.py"
    # p-1: grok-4.5 12000 in (8000 cached), 300 out, 120 reasoning.
    # p-2: grok-4.5 12100 in (11900 cached), 30 out; grok-code-fast-1 900 in, 10 out.
    assert usage_rows(p) == [
        ("p-1", "grok-4.5", 4000, 300, 8000, 120),
        ("p-2", "grok-4.5", 200, 30, 11900, 0),
        ("p-2#grok-code-fast-1", "grok-code-fast-1", 900, 10, 0, 0),
    ]
    assert all(u.replace for u in p.usage)
    assert p.unknown_types == {"future_widget_update": 1}
    assert len(p.bad) == 1 and p.lines == 21
    (info,) = p.sessions
    assert info.uid == f"grok:{A1}" and info.cwd == "/home/dev/shop"
    assert info.first_ts == 1785225601000 and info.model == "grok-4.5"


def test_update_log_joined_across_any_reads() -> None:
    path = FIX / "constructed" / SHOP / A1 / "updates.jsonl"
    data = path.read_bytes()
    whole = feed(grok.ADAPTER, data, str(path), rel_of(path), [])
    every_line = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    mid_lines = [n + 17 for n in every_line]
    assert feed(grok.ADAPTER, data, str(path), rel_of(path), every_line) == whole
    assert feed(grok.ADAPTER, data, str(path), rel_of(path), mid_lines) == whole


def test_retried_turn_emits_replacing_facts_under_one_key() -> None:
    # a002: turn p-9 completed, then retried and completed again with smaller numbers.
    path = FIX / "constructed" / SHOP / A2 / "updates.jsonl"
    summary = (path.parent / "summary.json").read_bytes()
    p = parse_file(path, summary)
    assert usage_rows(p) == [
        ("p-9", "grok-code-fast-1", 4000, 100, 1000, 20),
        ("p-9", "grok-code-fast-1", 1200, 90, 3000, 10),
    ]
    assert {u.dedup_key for u in p.usage} == {f"grok:{A2}:p-9"} and all(u.replace for u in p.usage)
    assert kinds(p) == {"user_msg": 1, "assistant_msg": 2, "completion": 2}


def test_usage_without_prompt_id_is_keyed_by_turn_ordinal() -> None:
    lines = b"".join(
        orjson.dumps({"timestamp": 1700000000 + i, "params": {"update": {"usage": u}}}) + b"\n"
        for i, u in enumerate(
            [{"inputTokens": 100, "outputTokens": 20, "cachedReadTokens": 10}, {"inputTokens": 8}]
        )
    )
    ctx = FileContext("/s/c/sid/updates.jsonl", "c/sid/updates.jsonl")
    p = grok.ADAPTER.parse(Chunk(lines, 0, True, ctx), {})
    assert [u.dedup_key for u in p.usage] == ["grok:sid:turn-1", "grok:sid:turn-2"]
    assert (p.usage[0].input_tokens, p.usage[0].cache_read_tokens) == (90, 10)
    assert p.usage[0].model == "grok" and not p.unknown_types


def test_events_file_golden() -> None:
    # a001/events.jsonl: turn_started/loop_started for turns 1 and 2 and one retry record.
    p = parse_file(FIX / "constructed" / SHOP / A1 / "events.jsonl")
    assert kinds(p) == {"lifecycle": 4, "retry": 1}
    assert [e.summary for e in p.events][:2] == ["turn_started (turn 1)", "loop_started (turn 1)"]
    assert p.unknown_types == {"model_request_retry": 1}
    assert p.sessions[0].model == "grok-4.5"


def test_snake_case_summary() -> None:
    p = parse_file(FIX / "constructed" / SHOP / A1 / "summary.json")
    (info,) = p.sessions
    assert (
        not p.events
        and p.consumed == (FIX / "constructed" / SHOP / A1 / "summary.json").stat().st_size
    )
    assert info.uid == f"grok:{A1}"
    assert info.title == "Fix failing cart test"  # generated_title before session_summary
    assert info.cwd == "/home/dev/shop" and info.git_branch == "fix/cart-total"
    assert info.model == "grok-4.5"
    assert info.parent_uid == "grok:019f6fff-0000-7000-8000-00000000a000"
    assert info.first_ts == parse_ts("2026-07-28T08:00:00Z")
    assert info.last_ts == parse_ts("2026-07-28T08:01:12Z")


def test_camel_case_summary() -> None:
    (info,) = parse_file(FIX / "constructed" / SHOP / A2 / "summary.json").sessions
    assert info.title == "Bump the version" and info.model == "grok-code-fast-1"
    assert info.cwd == "/home/dev/shop"  # from the directory name: the legacy schema has none
    assert info.first_ts == parse_ts("2026-07-29T10:00:00Z")
    assert info.last_ts == parse_ts("2026-07-29T10:00:41Z")
    assert info.parent_uid is None and info.agent_type is None


def test_chat_history_fallback_golden() -> None:
    # agent-sessions session: system (skipped), injected environment context, prompt,
    # reasoning, assistant + read_file, its result, backend web_search, assistant with only a
    # run_terminal_cmd call, its result, reasoning, user with an image and text.
    p = parse_file(FIX / "jazzyalex__agent-sessions" / LAB / J1 / "chat_history.jsonl")
    assert kinds(p) == {
        "lifecycle": 1,
        "user_msg": 2,
        "thinking": 2,
        "assistant_msg": 1,
        "tool_call": 3,
        "tool_result": 2,
    }
    assert [e.tool for e in p.events if e.kind == "tool_call"] == [
        "read_file",
        "web_search",
        "run_terminal_cmd",
    ]
    results = [e for e in p.events if e.kind == "tool_result"]
    assert [r.tool for r in results] == ["read_file", "run_terminal_cmd"]
    assert [e.body for e in p.events if e.kind == "user_msg"] == [
        "Read hello.py and summarize what it prints without editing files.",
        "[image]\nHere is a screenshot for reference.",
    ]
    assert not p.usage and p.sessions[0].model == "grok-4.5"


def test_subagent_summary_and_history() -> None:
    base = FIX / "jazzyalex__agent-sessions" / LAB / J2
    (info,) = parse_file(base / "summary.json").sessions
    assert (
        info.agent_type == "explore"
        and info.title == "Count the Python files under the project root"
    )
    assert kinds(parse_file(base / "chat_history.jsonl")) == {
        "user_msg": 1,
        "assistant_msg": 2,
        "tool_call": 1,
        "tool_result": 1,
    }


def test_chat_history_is_ignored_while_the_update_log_exists() -> None:
    history = FIX / "constructed" / SHOP / A1 / "chat_history.jsonl"
    updates = (history.parent / "updates.jsonl").read_bytes()
    p = parse_file(history, updates)
    assert not p.events and not p.usage and p.consumed == len(history.read_bytes())
    assert p.lines == 9
    assert kinds(parse_file(history, b"")) != {}  # an empty log does not count


def test_only_session_files_are_claimed() -> None:
    for name in ("updates.jsonl", "events.jsonl", "summary.json", "chat_history.jsonl"):
        assert grok.matches(f"{SHOP}/{A1}/{name}")
    for rel in (
        "auth.json",
        f"{SHOP}/prompt_history.jsonl",
        f"{SHOP}/{A1}/signals.json",
        f"{SHOP}/{A1}/prompt_context.json",
        f"{SHOP}/{A1}/rewind_points.jsonl",
        "session_search.sqlite",
        "updates.jsonl",
    ):
        assert not grok.matches(rel), rel
    assert grok.whole_file(f"{SHOP}/{A1}/summary.json")
    assert not grok.whole_file(f"{SHOP}/{A1}/updates.jsonl")


def test_default_roots(tmp_path: Path) -> None:
    assert grok.default_roots({}, tmp_path) == [tmp_path / ".grok" / "sessions"]
    assert grok.default_roots({"GROK_HOME": "/g"}, tmp_path) == [Path("/g/sessions")]


def test_garbage_never_raises() -> None:
    for name in ("updates.jsonl", "events.jsonl", "chat_history.jsonl", "summary.json"):
        ctx = FileContext(f"/r/c/s/{name}", f"c/s/{name}", b"\xff{")
        for junk in (b"\xff\xfe\x00\n", b'{"params":{"update":[]}}\n', b'{"type":7}\n', b"{\n"):
            grok.ADAPTER.parse(Chunk(junk, 0, True, ctx), {})
    ctx = FileContext("/r/c/s/updates.jsonl", "c/s/updates.jsonl")
    latin = (
        b'{"params":{"update":{"sessionUpdate":"user_message_chunk",'
        b'"content":{"type":"text","text":"caf\xe9"}}}}\n'
    )
    end = b'{"params":{"update":{"sessionUpdate":"turn_completed"}}}\n'
    p = grok.ADAPTER.parse(Chunk(latin + end, 0, True, ctx), {})
    assert [e.body for e in p.events if e.kind == "user_msg"] == ["caf\ufffd"]


# -- end to end through ingest and the store ---------------------------------------------------


async def ingest(store: Store, root: Path, **kw: int) -> IngestStats:
    return await Ingestor(store, **kw).backfill(discover([(grok.ADAPTER, root)]))


def sessions_root(tmp_path: Path) -> Path:
    root = tmp_path / "grok-home" / "sessions"
    for src in ("constructed", "jazzyalex__agent-sessions"):
        shutil.copytree(FIX / src, root, dirs_exist_ok=True)
    (root / "auth.json").write_text('{"prompt_id":"x","usage":{"inputTokens":999999}}\n')
    (root / SHOP / "prompt_history.jsonl").write_text('{"prompt":"secret"}\n')
    (root / SHOP / A1 / "signals.json").write_text('{"contextTokensUsed": 5}\n')
    return root


async def test_session_directories_ingest_without_double_counting(
    store: Store, tmp_path: Path
) -> None:
    root = sessions_root(tmp_path)
    first = await ingest(store, root)
    assert first.files_read == 10  # 4 + 2 constructed, 2 + 2 agent-sessions; nothing else
    assert await one(store, "SELECT count(*) FROM files WHERE path LIKE '%signals.json'") == 0
    # a001: the update log and events.jsonl only; its chat_history adds nothing.
    assert await kinds_of(store, f"grok:{A1}") == {
        "user_msg": 2,
        "thinking": 1,
        "assistant_msg": 3,
        "tool_call": 3,
        "test_run": 1,
        "tool_result": 3,
        "edit": 1,
        "completion": 2,
        "human_intervention": 2,
        "lifecycle": 4,
        "retry": 1,
    }
    assert await usage_of(store, f"grok:{A1}") == (3, 5100, 340, 19900, 120)
    row = await one(
        store,
        "SELECT title, cwd, repo, git_branch, parent_uid, model FROM sessions WHERE uid = ?",
        f"grok:{A1}",
    )
    assert row == (
        "Fix failing cart test",
        "/home/dev/shop",
        "shop",
        "fix/cart-total",
        "grok:019f6fff-0000-7000-8000-00000000a000",
        "grok-4.5",
    )
    # agent-sessions sessions have no update log: their history is the transcript.
    assert sum((await kinds_of(store, f"grok:{J1}")).values()) == 11
    assert (
        await one(store, "SELECT agent_type FROM sessions WHERE uid = ?", f"grok:{J2}") == "explore"
    )
    a2_model = "SELECT u.model FROM usage u JOIN sessions s ON s.id = u.session_id WHERE s.uid = ?"
    assert await one(store, a2_model, f"grok:{A2}") == "grok-code-fast-1"  # summary.json sidecar
    assert (await usage_of(store, f"grok:{A2}"))[0] == 1  # the retry did not add a fact
    second = await ingest(store, root)
    assert second.files_read == 0


async def test_message_split_across_two_ingests_is_one_event(store: Store, tmp_path: Path) -> None:
    data = (FIX / "constructed" / SHOP / A1 / "updates.jsonl").read_bytes()
    session = tmp_path / "sessions" / SHOP / A1
    session.mkdir(parents=True)
    f = session / "updates.jsonl"
    cut = data.index(b"fixing the total.")  # inside the second chunk of one message
    cut = data.rindex(b"\n", 0, cut) + 1
    f.write_bytes(data[:cut])
    await ingest(store, tmp_path / "sessions")
    with f.open("ab") as fh:
        fh.write(data[cut:])
    await ingest(store, tmp_path / "sessions")
    rows = await store.db.execute(
        "SELECT body FROM events WHERE kind = 'assistant_msg' ORDER BY seq"
    )
    bodies = [b for (b,) in rows]
    assert bodies == [
        "Running the tests first.",
        "One test fails; fixing the total.",
        "Fixed: the total now includes tax.",
    ]
    assert await usage_of(store, f"grok:{A1}") == (3, 5100, 340, 19900, 120)


async def test_retried_turn_replaces_its_usage_in_the_store(store: Store, tmp_path: Path) -> None:
    root = sessions_root(tmp_path)
    await ingest(store, root)
    assert await usage_of(store, f"grok:{A2}") == (1, 1200, 90, 3000, 10)


# -- grok-build's own serialized sessions (issue 16 re-check) -------------------------------

AV = "kenn-io__agentsview"
CUR = f"{AV}/%2Fworkspace%2Fgrok-worktrees%2Fparser-audit/019f6000-0000-7000-8000-000000000001"
LEG = f"{AV}/%2Fworkspace%2Fagentsview/019f6000-0000-7000-8000-000000000002"


def test_grok_build_current_history_golden() -> None:
    # 9 rows read by eye: system (skipped), project_instructions user (context), the prompt,
    # a reasoning row, a backend web_search, an assistant with read_file, its result, an
    # interjection, the final assistant.
    p = parse_file(FIX / CUR / "chat_history.jsonl")
    assert p.bad == [] and p.unknown_types == {} and p.usage == []
    assert kinds(p) == {
        "lifecycle": 1,
        "user_msg": 1,
        "thinking": 1,
        "tool_call": 2,
        "assistant_msg": 2,
        "tool_result": 1,
        "human_intervention": 1,
    }
    calls = [(e.tool, e.call_id) for e in p.events if e.kind == "tool_call"]
    assert calls == [("web_search", "ws_1"), ("read_file", "call_1")]
    (result,) = [e for e in p.events if e.kind == "tool_result"]
    assert (result.tool, result.call_id) == ("read_file", "call_1")
    assert p.sessions[0].cwd == "/workspace/grok-worktrees/parser-audit"


def test_grok_build_legacy_history_golden() -> None:
    # chat_format_version 0: role rows; reasoning_content on the assistant row.
    p = parse_file(FIX / LEG / "chat_history.jsonl")
    assert kinds(p) == {
        "user_msg": 1,
        "thinking": 1,
        "assistant_msg": 2,
        "tool_call": 1,
        "tool_result": 1,
    }
    (thought,) = [e for e in p.events if e.kind == "thinking"]
    assert thought.payload == b"Check the old format"


def test_grok_build_summary_and_unread_signals() -> None:
    p = parse_file(FIX / CUR / "summary.json")
    (info,) = p.sessions
    assert info.title == "Audit Grok compatibility"  # generated_title before session_summary
    assert info.parent_uid == "grok:019f5000-0000-7000-8000-000000000000"
    assert (info.git_branch, info.model) == ("feature/parser-audit", "grok-4.5")
    assert info.cwd == "/workspace/grok-worktrees/parser-audit"
    assert not grok.matches(f"{CUR}/signals.json".split("/", 1)[1])


def test_legacy_raw_output_reasoning_and_backend_tools_count_once() -> None:
    rows = [
        b'{"type":"backend_tool_call","kind":{"tool_type":"web_search","id":"ws_1",'
        b'"action":{"type":"search","query":"q"}}}',
        b'{"type":"assistant","content":"answer","raw_output":[{"type":"reasoning","id":"r1",'
        b'"summary":[{"type":"summary_text","text":"raw thought"}],"encrypted_content":"x"},'
        b'{"type":"web_search_call","id":"ws_1","action":{"type":"search","query":"q"}},'
        b'{"type":"code_interpreter_call","id":"ci_1","code":"print(1)"}]}',
    ]
    data = b"\n".join(rows) + b"\n"
    rel = "%2Fw/s1/chat_history.jsonl"
    p = grok.ADAPTER.parse(Chunk(data, 0, True, FileContext("/r/" + rel, rel)), {})
    assert [(e.tool, e.call_id) for e in p.events if e.kind == "tool_call"] == [
        ("web_search", "ws_1"),
        ("code_interpreter", "ci_1"),
    ]
    (thought,) = [e for e in p.events if e.kind == "thinking"]
    assert thought.payload == b"raw thought"
    assert (
        feed(grok.ADAPTER, data, "/r/" + rel, rel, [len(rows[0]) + 1])["events"]
        == feed(grok.ADAPTER, data, "/r/" + rel, rel, [])["events"]
    )


def test_subagent_directory_links_to_its_parent() -> None:
    rel = "%2Fhome%2Fdev/019f-parent/subagents/019f-child/summary.json"
    assert grok.matches(rel)
    data = b'{"info": {"id": "019f-child"}, "generated_title": "look around"}'
    p = grok.ADAPTER.parse(Chunk(data, 0, True, FileContext("/r/" + rel, rel)), {})
    (info,) = p.sessions
    assert info.uid == "grok:019f-child"
    assert info.parent_uid == "grok:019f-parent"
    assert (info.cwd, info.agent_type) == ("/home/dev", "subagent")
    hist = rel.replace("summary.json", "chat_history.jsonl")
    line = b'{"type":"user","content":[{"type":"text","text":"hi"}]}\n'
    h = grok.ADAPTER.parse(Chunk(line, 0, True, FileContext("/r/" + hist, hist)), {})
    assert h.events[0].session_uid == "grok:019f-child"
    assert h.sessions[0].cwd == "/home/dev"


async def test_grok_build_sessions_ingest(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "grok-home" / "sessions"
    shutil.copytree(FIX / AV, root)
    stats = await ingest(store, root)
    assert stats.files_read == 4  # two summary.json + two chat_history.jsonl; no signals.json
    cur = "grok:019f6000-0000-7000-8000-000000000001"
    assert (await kinds_of(store, cur))["tool_call"] == 2
    row = await one(store, "SELECT title, parent_uid FROM sessions WHERE uid = ?", cur)
    assert row == ("Audit Grok compatibility", "grok:019f5000-0000-7000-8000-000000000000")
    assert (await ingest(store, root)).bytes_read == 0

"""The Codex adapter against real and documented-synthetic rollouts (tests/fixtures/codex).

Every expected number below was derived by reading the JSON lines (jq / a plain json loop
over the fixture), not by running the adapter: token totals are the last ``token_count``'s
``total_token_usage`` of a file (its totals always advance by ``last_token_usage``), with
``input - cached_input`` as non-cached input; event counts are counts of record types.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.adapters.base import Chunk, FileContext
from helixd.adapters.declared import codex
from helixd.core.records import Parsed
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import feed

FIX = Path(__file__).parent / "fixtures" / "codex"
REAL = FIX / "sessions"
SYN = FIX / "synthetic"
CCUSAGE = Path(__file__).parent / "fixtures" / "ccusage"
PARENT_FORK = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
FORK = "019c8c4d-4480-7000-8000-00000000f0c1"
PARENT_SUB = "019c8a70-dda7-7f33-98ea-f30553347322"
SUB = "019c8a71-1628-7000-8000-0000000005ab"
OLDEST = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
NEWGEN = "01a0c368-7d00-7000-8000-0000000009e1"


def path_of(sid: str) -> Path:
    return next(p for p in FIX.rglob(f"rollout-*{sid}.jsonl"))


def parse(path: Path, rel: str | None = None) -> Parsed:
    data = path.read_bytes()
    return codex.ADAPTER.parse(Chunk(data, 0, True, FileContext(str(path), rel or path.name)), {})


def lines_of(*objs: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def parse_bytes(
    data: bytes,
    name: str = "rollout-x-11111111-2222-4333-8444-555555555555.jsonl",
    state: dict[str, Any] | None = None,
) -> Parsed:
    return codex.ADAPTER.parse(Chunk(data, 0, True, FileContext("/h/" + name, name)), state or {})


def tokens(p: Parsed) -> tuple[int, int, int, int]:
    """(non-cached input, cache read, output, reasoning) summed over the usage facts."""
    return (
        sum(u.input_tokens for u in p.usage),
        sum(u.cache_read_tokens for u in p.usage),
        sum(u.output_tokens for u in p.usage),
        sum(u.reasoning_tokens for u in p.usage),
    )


def kinds(p: Parsed) -> dict[str, int]:
    return dict(Counter(e.kind for e in p.events))


# -- roots and file selection ------------------------------------------------------------------
def test_roots_are_sessions_and_archive_under_codex_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert codex.default_roots({}, home) == [
        home / ".codex/sessions",
        home / ".codex/archived_sessions",
    ]
    assert codex.default_roots({"CODEX_HOME": "/x/cx"}, home) == [
        Path("/x/cx/sessions"),
        Path("/x/cx/archived_sessions"),
    ]


@pytest.mark.parametrize(
    ("rel", "claimed"),
    [
        ("2026/02/23/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl", 1),
        ("rollout-2025-08-20T13-20-47-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl", 1),
        ("auth.json", 0),
        ("config.toml", 0),
        ("history.jsonl", 0),
        ("session_index.jsonl", 0),
        ("2026/02/23/notes.jsonl", 0),
        ("rollout-x.json", 0),
    ],
)
def test_only_rollouts_are_claimed(rel: str, claimed: int) -> None:
    assert codex.matches(rel) is bool(claimed)


# -- golden: real sessions ---------------------------------------------------------------------
# uuid: (non-cached input, cached, output, reasoning, facts, event kinds)
GOLDEN: dict[str, tuple[int, int, int, int, int, dict[str, int]]] = {
    # finals: input 7204025 cached 6836352 output 36075 reasoning 17896; 81 advancing of 161
    "019c8a4c-ed82-79a1-aa28-7738fc5ab61a": (
        367673,
        6836352,
        36075,
        17896,
        81,
        {
            "lifecycle": 1 + 10 + 5,
            "user_msg": 10,
            "thinking": 69,
            "assistant_msg": 43,
            "tool_call": 82 + 22 + 1,
            "tool_result": 82 + 22,
            "edit": 22,
            "completion": 5,
        },
    ),
    "019c8a4d-8f45-7010-8b5d-7fad920aa6f9": (
        1751428 - 1651968,
        1651968,
        14600,
        4293,
        28,
        {
            "lifecycle": 1 + 4 + 1,
            "user_msg": 3,
            "thinking": 26,
            "assistant_msg": 17,
            "tool_call": 118,
            "tool_result": 118,
            "completion": 1,
        },
    ),
    "019c8a53-a0dd-7130-bcd7-95445d84846a": (
        6740973 - 6337024,
        6337024,
        36950,
        17085,
        83,
        {
            "lifecycle": 1 + 15 + 7,
            "user_msg": 13,
            "thinking": 78,
            "assistant_msg": 52,
            "tool_call": 134 + 10,
            "tool_result": 133 + 10,
            "edit": 10,
            "completion": 5,
        },
    ),
    # 4 user messages typed while the agent worked (lines 1223, 1528, 2456, 2715 echo them)
    "019c8a59-e9dd-71f0-9ae3-4079fe9726a9": (
        33810485 - 31621504,
        31621504,
        133999,
        42113,
        286,
        {
            "lifecycle": 1 + 45 + 33 + 2,
            "user_msg": 42,
            "human_intervention": 4,
            "thinking": 219,
            "assistant_msg": 255,
            "tool_call": 316 + 49 + 7,
            "tool_result": 316 + 49,
            "edit": 49,
            "completion": 33,
        },
    ),
    "019c8a70-dda7-7f33-98ea-f30553347322": (
        34469 - 3456,
        3456,
        431,
        264,
        1,
        {"lifecycle": 1 + 4 + 1, "user_msg": 4, "thinking": 1, "assistant_msg": 1, "tool_call": 1},
    ),
    "019c8bfe-ec25-79e0-97d7-bda6a9c575ff": (
        298373 - 238848,
        238848,
        1123,
        483,
        6,
        {
            "lifecycle": 1 + 4 + 1,
            "user_msg": 3,
            "thinking": 6,
            "assistant_msg": 6,
            "tool_call": 5,
            "tool_result": 5,
            "completion": 1,
        },
    ),
    # session start, task_started, developer, <environment_context>
    "019e9625-802f-7e91-840a-cfe88d14117a": (
        22539 - 20864,
        20864,
        10,
        0,
        1,
        {"lifecycle": 4, "user_msg": 1, "assistant_msg": 1, "completion": 1},
    ),
    # two non-standard items (tool_call, tool_result) are kept as "unknown"
    "019b2ea4-aaaa-bbbb-cccc-58208e1f0000": (
        12091 - 10880,
        10880,
        182,
        128,
        1,
        {"lifecycle": 2, "user_msg": 6, "assistant_msg": 7, "unknown": 2},
    ),
}


@pytest.mark.parametrize("sid", sorted(GOLDEN))
def test_real_sessions_match_hand_derived_totals_and_kinds(sid: str) -> None:
    p = parse(path_of(sid))
    non_cached, cached, out, reasoning, facts, expected_kinds = GOLDEN[sid]
    assert tokens(p) == (non_cached, cached, out, reasoning)
    assert len(p.usage) == facts
    assert kinds(p) == expected_kinds
    assert not p.bad
    info = p.sessions[0]
    assert (info.uid, info.native_id, info.parent_uid) == (f"codex:{sid}", sid, None)
    assert all(e.session_uid == info.uid for e in p.events)
    assert len({u.dedup_key for u in p.usage}) == facts


def test_tool_results_are_joined_to_their_calls() -> None:
    p = parse(path_of("019c8a53-a0dd-7130-bcd7-95445d84846a"))
    calls = {e.call_id: e.tool for e in p.events if e.kind == "tool_call"}
    results = [e for e in p.events if e.kind == "tool_result"]
    assert len(results) == 143 and all(e.tool == calls[e.call_id] for e in results)
    assert Counter(e.tool for e in results) == {
        "exec_command": 117,
        "write_stdin": 14,
        "update_plan": 2,
        "apply_patch": 10,
    }
    unanswered = set(calls) - {e.call_id for e in results}
    assert len(unanswered) == 1


def test_session_facts_come_from_meta_and_the_latest_turn_context() -> None:
    info = parse(path_of("019c8a4c-ed82-79a1-aa28-7738fc5ab61a")).sessions[0]
    assert (info.version, info.model, info.git_branch) == (
        "0.104.0-alpha.1",
        "gpt-5.3-codex",
        "main",
    )
    assert info.cwd == "/redacted/path/fa3f7eaace" and not info.ended


def test_parent_key_is_the_previous_event() -> None:
    p = parse(path_of("019c8bfe-ec25-79e0-97d7-bda6a9c575ff"))
    assert p.events[0].parent_key is None
    assert all(b.parent_key == a.key for a, b in zip(p.events, p.events[1:], strict=False))


def test_curated_file_with_many_metas_is_one_session() -> None:
    p = parse(path_of("019fc8be-3658-7ca3-9e29-000000000000"))
    own = "codex:019fc8be-3658-7ca3-9e29-000000000000"
    assert {e.session_uid for e in p.events} == {p.sessions[0].uid} == {own}
    assert p.sessions[0].version == "0.146.0" and p.sessions[0].parent_uid is None
    # collab_agent_spawn_end names the spawned thread: a child session linked to this one
    assert [(s.native_id, s.parent_uid) for s in p.sessions[1:]] == [("[trimmed for fixture]", own)]
    # one real token_count, one info:null, one all-zero: 16341 - 3584 non-cached
    assert tokens(p) == (12757, 3584, 81, 63) and len(p.usage) == 1
    k = kinds(p)
    assert k["human_intervention"] == 1  # turn_aborted "interrupted"
    assert k["error"] == 2 and k["completion"] == 2  # an error event, a task_complete error
    assert k["tool_call"] == 2 + 2 + 2 + 1 + 1 and k["tool_result"] == 3 + 2 + 1
    assert not p.unknown_types  # world_state and inter-agent metadata are known


# -- token rules -------------------------------------------------------------------------------
def tc(ts: str, total: list[int] | None, last: list[int] | None) -> dict[str, Any]:
    keys = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
    info: dict[str, Any] = {}
    if total is not None:
        info["total_token_usage"] = dict(zip(keys, total, strict=True))
    if last is not None:
        info["last_token_usage"] = dict(zip(keys, last, strict=True))
    return {"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": info}}


META = {
    "timestamp": "2026-01-01T00:00:00.000Z",
    "type": "session_meta",
    "payload": {"id": "11111111-2222-4333-8444-555555555555", "cli_version": "0.120.0"},
}
CTX = {
    "timestamp": "2026-01-01T00:00:00.100Z",
    "type": "turn_context",
    "payload": {"model": "gpt-5.2", "cwd": "/w"},
}


def test_a_reemitted_token_count_counts_nothing() -> None:
    a = [1000, 800, 300, 200]
    once = parse_bytes(lines_of(META, CTX, tc("2026-01-01T00:00:01.000Z", a, a)))
    twice = parse_bytes(
        lines_of(
            META,
            CTX,
            tc("2026-01-01T00:00:01.000Z", a, a),
            tc("2026-01-01T00:00:05.000Z", a, a),
            {
                "timestamp": "2026-01-01T00:00:06.000Z",
                "type": "event_msg",
                "payload": {"type": "token_count", "info": None},
            },
            tc("2026-01-01T00:00:07.000Z", a, [0, 0, 0, 0]),
        )
    )
    assert tokens(twice) == tokens(once) == (200, 800, 300, 200)
    assert len(twice.usage) == 1


def test_cached_input_and_reasoning_are_not_counted_twice() -> None:
    p = parse_bytes(
        lines_of(
            META, CTX, tc("2026-01-01T00:00:01.000Z", [1000, 800, 300, 200], [1000, 800, 300, 200])
        )
    )
    (u,) = p.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (
        200,
        800,
        300,
        200,
    )
    # the billed tokens add up to the response's total_tokens (input + output), no more
    assert u.input_tokens + u.cache_read_tokens + u.output_tokens == 1000 + 300
    assert u.model == "gpt-5.2" and u.rank.startswith("0")


def test_totals_without_last_are_diffed() -> None:
    p = parse_bytes(
        lines_of(
            META,
            CTX,
            tc("2026-01-01T00:00:01.000Z", [100, 10, 50, 0], None),
            tc("2026-01-01T00:00:02.000Z", [200, 20, 75, 5], None),
        )
    )
    assert [
        (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) for u in p.usage
    ] == [(90, 10, 50, 0), (90, 10, 25, 5)]


def test_dedup_keys_are_the_same_in_the_archived_copy_and_distinct_per_response() -> None:
    path = path_of("019c8a4c-ed82-79a1-aa28-7738fc5ab61a")
    live = parse(path, "2026/02/23/" + path.name)
    archived = codex.ADAPTER.parse(
        Chunk(
            path.read_bytes(),
            0,
            True,
            FileContext("/else/archived_sessions/" + path.name, path.name),
        ),
        {},
    )
    assert [u.dedup_key for u in live.usage] == [u.dedup_key for u in archived.usage]
    assert [e.key for e in live.events] == [e.key for e in archived.events]
    assert len({u.dedup_key for u in live.usage}) == len(live.usage) == 81


# -- forks, subagents and their replay ---------------------------------------------------------
def test_a_fork_does_not_count_the_parent_history_it_replays() -> None:
    parent, child = parse(path_of(PARENT_FORK)), parse(path_of(FORK))
    # the child's own turn: 12000/9000/300/120 then 12600/11800/150/0 (a re-emit in between)
    new = (12000 - 9000 + 12600 - 11800, 9000 + 11800, 300 + 150, 120)
    assert tokens(child) == new
    both = [a + b for a, b in zip(tokens(parent), tokens(child), strict=True)]
    assert both == [59525 + new[0], 238848 + new[1], 1123 + new[2], 483 + new[3]]
    info = child.sessions[0]
    assert info.parent_uid == f"codex:{PARENT_FORK}" and info.agent_type is None
    assert all(u.rank.startswith("0") for u in child.usage)
    # no replayed line became an event: only the session start and the new turn (line 65 on)
    start_of_turn = sum(len(x) + 1 for x in path_of(FORK).read_bytes().split(b"\n")[:64])
    assert [e.offset for e in child.events][1:] == sorted(
        e.offset for e in child.events[1:]
    ) and child.events[1].offset == start_of_turn
    assert kinds(child) == {
        "lifecycle": 3,
        "user_msg": 1,
        "thinking": 1,
        "tool_call": 1,
        "test_run": 1,
        "tool_result": 1,
        "error": 1,
        "assistant_msg": 1,
        "completion": 1,
    }


def test_a_subagent_is_linked_ranked_after_mains_and_counts_only_its_own_turn() -> None:
    child = parse(path_of(SUB))
    assert tokens(child) == (8000 - 6400, 6400, 220, 64)
    info = child.sessions[0]
    assert (info.parent_uid, info.agent_type, info.model) == (
        f"codex:{PARENT_SUB}",
        "explorer",
        "gpt-5.3-codex-mini",
    )
    assert all(u.rank.startswith("1") for u in child.usage)
    (edit,) = [e for e in child.events if e.kind == "edit"]
    assert edit.body == "src/lib.rs\nsrc/extra.rs" and edit.tool == "apply_patch"


def test_a_fork_of_a_parent_without_turn_ids_waits_for_a_pause() -> None:
    created = "2026-05-05T21:52:10.000Z"
    meta = {
        "timestamp": created,
        "type": "session_meta",
        "payload": {
            "id": "019dfa20-8b10-7000-8000-000000000001",
            "forked_from_id": "019df000-0000-7000-8000-000000000001",
        },
    }
    replay = [
        {
            "timestamp": "2026-05-05T21:52:10.001Z",
            "type": "session_meta",
            "payload": {"id": "019df000-0000-7000-8000-000000000001"},
        },
        {
            "timestamp": "2026-05-05T21:52:10.002Z",
            "type": "turn_context",
            "payload": {"model": "gpt-5"},
        },
        tc("2026-05-05T21:52:10.200Z", [300, 0, 30, 0], [300, 0, 30, 0]),
    ]
    own = [
        {
            "timestamp": "2026-05-05T21:52:20.100Z",
            "type": "turn_context",
            "payload": {"model": "gpt-5.4-mini"},
        },
        tc("2026-05-05T21:52:20.200Z", [570, 0, 60, 0], [270, 0, 30, 0]),
    ]
    p = parse_bytes(
        lines_of(meta, *replay, *own),
        "rollout-2026-05-05T21-52-10-019dfa20-8b10-7000-8000-000000000001.jsonl",
    )
    assert tokens(p) == (270, 0, 30, 0)
    assert p.usage[0].model == "gpt-5.4-mini"


# -- generations and record types --------------------------------------------------------------
def test_the_pre_envelope_generation_parses() -> None:
    p = parse(path_of(OLDEST))
    info = p.sessions[0]
    assert (info.uid, info.git_branch, info.version) == (f"codex:{OLDEST}", "main", None)
    assert kinds(p) == {
        "lifecycle": 2,
        "user_msg": 1,
        "thinking": 1,
        "tool_call": 3,
        "tool_result": 3,
        "test_run": 1,
        "error": 1,
        "edit": 1,
        "assistant_msg": 2,
    }
    assert not p.usage and not p.unknown_types and not p.bad
    oks = [e for e in p.events if e.kind == "assistant_msg"]
    assert oks[0].key != oks[1].key  # the same bytes twice are still two events
    (error,) = [e for e in p.events if e.kind == "error"]
    assert error.tool == "shell" and "E0425" in error.body


def test_the_0_154_generation_counts_compactions_once_and_responses_once() -> None:
    p = parse(path_of(NEWGEN))
    a, b = (20000 - 15000, 15000, 500, 200), (9000 - 4000, 4000, 300, 100)
    compaction_1, compaction_2 = (30000, 0, 2000, 0), (12000 - 8000, 8000, 900, 0)
    expected = [sum(x) for x in zip(a, b, compaction_1, compaction_2, strict=True)]
    assert list(tokens(p)) == expected
    assert sorted(u.dedup_key for u in p.usage if ":resp:" in u.dedup_key) == [
        "codex:resp:resp_compact_1",
        "codex:resp:resp_compact_2",
    ]
    info = p.sessions[0]
    assert (info.ended, info.title, info.version, info.model) == (
        True,
        "Parser refactor",
        "0.154.0",
        "gpt-5.5",
    )
    assert p.unknown_types == {"brand_new_record_2027": 1, "event_msg:mystery_event_2027": 1}
    assert kinds(p)["test_run"] == 1  # shell_command running npm test, exit code 0
    assert "error" not in kinds(p)


def test_an_unknown_record_type_is_counted_not_fatal() -> None:
    p = parse_bytes(
        lines_of(
            META, {"timestamp": "2026-01-01T00:00:01Z", "type": "hologram", "payload": {"x": 1}}
        )
        + b"{not json\n"
    )
    assert p.unknown_types == {"hologram": 1} and len(p.bad) == 1 and p.lines == 3


# -- chunking ----------------------------------------------------------------------------------
@pytest.mark.parametrize("sid", [FORK, SUB, NEWGEN, OLDEST, "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_split_at_random_bytes_gives_the_records_of_one_read(sid: str, data: st.DataObject) -> None:
    path = path_of(sid)
    raw = path.read_bytes()
    whole = feed(codex.ADAPTER, raw, str(path), path.name, [])
    cuts = data.draw(st.lists(st.integers(0, len(raw) - 1), max_size=20))
    assert feed(codex.ADAPTER, raw, str(path), path.name, cuts) == whole


# -- parity with ccusage -----------------------------------------------------------------------
def ccusage_sessions(path: Path) -> dict[str, tuple[int, int, int, int]]:
    report = orjson.loads(path.read_bytes())
    return {
        s["sessionFile"][-36:]: (
            s["inputTokens"],
            s["cacheReadTokens"],
            s["outputTokens"],
            s["reasoningOutputTokens"],
        )
        for s in report["sessions"]
    }


def test_parity_with_ccusage_on_the_real_corpus() -> None:
    theirs = ccusage_sessions(CCUSAGE / "codex-session.json")
    ours = {p.name[-42:-6]: tokens(parse(p)) for p in REAL.rglob("rollout-*.jsonl")}
    assert ours == theirs


def test_parity_with_ccusage_on_forks_and_where_we_differ() -> None:
    theirs = ccusage_sessions(FIX / "ccusage-synthetic-session.json")
    for sid in (PARENT_FORK, FORK, PARENT_SUB, SUB):
        assert tokens(parse(path_of(sid))) == theirs[sid]
    # ccusage ignores token_usage_record, so it misses the two compaction requests
    ours = tokens(parse(path_of(NEWGEN)))
    assert [o - t for o, t in zip(ours, theirs[NEWGEN], strict=True)] == [
        30000 + 4000,
        0 + 8000,
        2000 + 900,
        0,
    ]


# -- end to end through the store --------------------------------------------------------------
async def test_store_counts_a_session_and_its_archived_copy_once(
    store: Store, tmp_path: Path
) -> None:
    home = tmp_path / "codex"
    day = home / "sessions/2026/02/23"
    day.mkdir(parents=True)
    (home / "archived_sessions").mkdir()
    for sid in (PARENT_FORK, FORK, PARENT_SUB, SUB):
        shutil.copy(path_of(sid), day)
    shutil.copy(path_of(PARENT_FORK), home / "archived_sessions")  # the same rollout, archived
    shutil.copy(path_of(OLDEST), home / "archived_sessions")
    roots = [(codex.ADAPTER, r) for r in codex.default_roots({"CODEX_HOME": str(home)}, tmp_path)]
    stats = await Ingestor(store).backfill(discover(roots))
    assert stats.files_read == 6 and not stats.errors
    found = await store.db.execute(
        "SELECT s.native_id, sum(u.input), sum(u.cache_read), sum(u.output), sum(u.reasoning),"
        " count(*) FROM usage u JOIN sessions s ON s.id = u.session_id GROUP BY s.native_id"
    )
    rows = {r[0]: tuple(r[1:]) for r in found}
    assert rows == {
        PARENT_FORK: (59525, 238848, 1123, 483, 6),
        FORK: (3800, 20800, 450, 120, 2),
        PARENT_SUB: (31013, 3456, 431, 264, 1),
        SUB: (1600, 6400, 220, 64, 1),
    }
    found = await store.db.execute(
        "SELECT native_id, parent_uid, events FROM sessions WHERE agent = 'codex'"
    )
    sessions = {r[0]: (r[1], r[2]) for r in found}
    assert sessions[FORK][0] == f"codex:{PARENT_FORK}"
    assert sessions[SUB][0] == f"codex:{PARENT_SUB}"
    single = parse(path_of(PARENT_FORK))
    assert sessions[PARENT_FORK] == (None, len(single.events))  # archived copy added no event
    assert OLDEST in sessions


@pytest.mark.parametrize("code", [0, 1])
def test_a_big_json_output_reports_its_exit_code(code: int) -> None:
    output = 'line one\n\t"quoted" \\ path\n' + "x" * 20000
    result = orjson.dumps({"output": output, "metadata": {"exit_code": code}}).decode()
    call = {"type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": '{"command":["bash","-lc","make"]}'}  # fmt: skip
    out = {"type": "function_call_output", "call_id": "c1", "output": result}
    p = parse_bytes(lines_of(META, *({"timestamp": f"2026-01-01T00:00:0{i}.000Z",
                                      "type": "response_item", "payload": x}
                                     for i, x in enumerate((call, out), 1))))  # fmt: skip
    result_event = next(e for e in p.events if e.kind == "tool_result")
    assert result_event.tool == "shell" and result_event.is_error is bool(code)
    assert result_event.summary.startswith('line one "quoted" \\ path')
    assert ("error" in kinds(p)) is bool(code)

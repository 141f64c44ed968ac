"""OpenHands adapter: golden numbers read off three real V0 trajectories and a real V1 event
slice split into OpenHands' one-file-per-event layout (tests/fixtures/openhands/README.md),
and an end-to-end ingest.

Read with python's json module: per trajectory, the distinct
``tool_call_metadata.model_response`` ids with usage and their sums of prompt / completion /
cache read / cache creation tokens: basic.json 2 responses (8 132, 1 312, 3 482, 4 640),
basic_gui_mode.json 4 (17 297, 2 024, 11 793, 5 482), basic_interactions.json 1 (2 473, 10,
2 304, 0).  The V1 slice's last ``stats`` update: prompt 107 458, completion 1 347, cache
read 68 193 (so 39 265 non-cached).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.declared import openhands
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, parse_fixture, usage_of

CONV = "e18b827d3440425a9ff7353c4a6d6a3a"


def test_v0_trajectories_golden() -> None:
    basic = parse_fixture(openhands.ADAPTER, "trajectories/basic.json")
    assert kinds(basic) == {
        "user_msg": 1,
        "assistant_msg": 1,  # the edit action's thought
        "tool_call": 1,
        "edit": 1,
        "tool_result": 1,
        "completion": 1,  # finish
    }
    gui = parse_fixture(openhands.ADAPTER, "trajectories/basic_gui_mode.json")
    assert kinds(gui) == {
        "lifecycle": 5,  # 4 agent_state_changed + 1 change_agent_state
        "user_msg": 1,
        "assistant_msg": 5,  # 4 action thoughts + 1 message
        "tool_call": 4,  # 2 run + 2 edit
        "tool_result": 4,
        "edit": 2,
    }
    chat = parse_fixture(openhands.ADAPTER, "trajectories/basic_interactions.json")
    assert kinds(chat) == {"user_msg": 3, "assistant_msg": 2, "completion": 1}
    for parsed, expected in ((basic, (2, 10, 1312)), (gui, (4, 22, 2024)), (chat, (1, 169, 10))):
        facts = {u.dedup_key: u for u in parsed.usage}  # a response shared by calls counts once
        got = (
            len(facts),
            sum(u.input_tokens for u in facts.values()),
            sum(u.output_tokens for u in facts.values()),
        )
        assert got == expected
    calls = {e.call_id for e in gui.events if e.kind == "tool_call"}
    assert calls == {e.call_id for e in gui.events if e.kind == "tool_result"}


def test_v1_event_files_golden() -> None:
    events = sorted((FIXTURES / "openhands" / "conversations" / CONV / "events").iterdir())
    parsed = [
        parse_fixture(openhands.ADAPTER, p.relative_to(FIXTURES / "openhands").as_posix())
        for p in events
    ]
    total: dict[str, int] = {}
    for p in parsed:
        for k, n in kinds(p).items():
            total[k] = total.get(k, 0) + n
    assert total == {
        "lifecycle": 1,  # execution_status running
        "thinking": 2,  # reasoning_content of both actions
        "assistant_msg": 1,  # the first action's thought after </think>
        "tool_call": 2,
        "tool_result": 3,
        "error": 2,  # two observations with is_error
    }
    last = [u for p in parsed for u in p.usage][-1]
    assert (last.input_tokens, last.output_tokens, last.cache_read_tokens) == (39265, 1347, 68193)
    assert {p.sessions[0].uid for p in parsed if p.sessions} == {f"openhands:{CONV}"}


def test_only_event_files_and_trajectories_are_claimed() -> None:
    assert openhands.matches(f"conversations/{CONV}/events/event-00001-x.json")
    assert openhands.matches("sessions/abc/events/3.json")
    assert openhands.matches("trajectories/run.json")
    for rel in ("settings.json", "secrets.json", f"conversations/{CONV}/meta.json", "x.json"):
        assert not openhands.matches(rel), rel


async def test_ingest_counts_v1_running_totals_once(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".openhands"
    shutil.copytree(FIXTURES / "openhands", root, ignore=shutil.ignore_patterns("README.md"))
    (root / "settings.json").write_text('{"llm_api_key": "sk-secret"}')
    stats = await ingest(store, openhands.ADAPTER, root)
    assert stats.files_read == 13  # 10 event files + 3 trajectories
    uid = f"openhands:{CONV}"
    assert (await kinds_of(store, uid))["tool_result"] == 3
    # four cumulative stats updates merge into one fact holding the last (largest) totals
    assert await usage_of(store, uid) == (1, 39265, 1347, 68193, 0)
    assert await usage_of(store, "openhands:basic_gui_mode") == (4, 22, 2024, 11793, 5482)
    assert (await ingest(store, openhands.ADAPTER, root)).bytes_read == 0

"""The record types (``helixd.core.records``) are NamedTuples (issue 12): what their users
rely on from the frozen dataclasses they replaced still holds."""

from __future__ import annotations

import pickle

import pytest

from helixd.core.records import BadLine, Cursor, Event, Parsed, SessionInfo, UsageFact


def test_each_parse_result_gets_its_own_lists() -> None:
    first, second = Parsed(consumed=0, state={}), Parsed(0, {})
    first.sessions.append(SessionInfo("claude:a", "claude", "a"))
    first.events.append(Event("claude:a", "k", "user_msg", None, 0))
    first.usage.append(UsageFact("m1", "claude:a", None, "opus"))
    first.bad.append(BadLine(0, 3, "not json"))
    first.unknown_types["x"] = 1
    assert (second.sessions, second.events, second.usage, second.bad) == ([], [], [], [])
    assert second.unknown_types == {} and second.lines == 0
    given: list[Event] = []
    assert Parsed(1, {}, events=given).events is given  # what the caller passes is kept


def test_records_are_immutable_and_replace_keeps_the_type() -> None:
    ev = Event("claude:a", "k", "tool_call", 5, 10, tool="Bash")
    with pytest.raises(AttributeError):
        ev.kind = "edit"  # type: ignore[misc]
    changed = ev._replace(is_sidechain=True, body="ls")
    assert type(changed) is Event and changed.is_sidechain and changed.body == "ls"
    assert (ev.is_sidechain, ev.body, changed.tool) == (False, "", "Bash")
    parsed = Parsed(3, {"n": 1}, lines=2)._replace(events=[ev])
    assert type(parsed) is Parsed and parsed.events == [ev] and parsed.lines == 2
    assert parsed.usage == [] and parsed.state == {"n": 1}


def test_records_cross_a_process_boundary_unchanged() -> None:
    """The parse pool pickles parse results between processes."""
    values = [
        SessionInfo("claude:a", "claude", "a", cwd="/w", first_ts=1, ended=True),
        Event("claude:a", "k", "test_run", 5, 10, tests=("pytest", 3, 1, 0), payload=b"x"),
        UsageFact("m1", "claude:a", 7, "opus", input_tokens=9, replace=True),
        BadLine(4, 10, "bad json"),
        Cursor("/r/f.jsonl", "claude", "/r", 1, 2, 3, 4, 5, b"h", 6, 0, 1, {"s": 1}),
        Parsed(9, {"s": 2}, events=[Event("claude:a", "k", "user_msg", None, 0)], lines=1),
    ]
    for value in values:
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is type(value) and back == value, value
    assert UsageFact._fields[:4] == ("dedup_key", "session_uid", "ts", "model")

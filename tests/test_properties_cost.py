"""Property tests (hypothesis) of the recorded-cost parsing of every agent that writes dollars
(Pi, the Cline SDK, classic Cline tasks, Crush, the legacy Go OpenCode, OpenCode, Aider): for a
generated cost put where the agent writes it, the usage fact carries exactly that many dollars
(none for 0: the agent had no price), and a value that is no cost is a bad line naming the
field, never a crash, never a made-up number.  And the agent-database identity re-check:
``agentdb.snapshot(path, identity)`` refuses any database swapped in at that path."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.core.records import Parsed
from helixd.core.values import MAX_USD, Rejected, usd
from helixd.sources.tailer import stat_file
from helixd.store import agentdb

QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pi(value: Any) -> tuple[str, bytes, str]:
    line = {
        "type": "message",
        "id": "m1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {
            "role": "assistant",
            "model": "m",
            "content": [],
            "usage": {"input": 5, "output": 1, "cost": {"total": value}},
        },
    }
    rel = "--tmp--/2026-01-01T00-00-00-000Z_0000.jsonl"
    return rel, json.dumps(line).encode() + b"\n", "usage.cost.total"


def _cline_sdk(value: Any) -> tuple[str, bytes, str]:
    metrics = {"inputTokens": 100, "outputTokens": 7, "cacheReadTokens": 0, "cost": value}
    message = {"id": "msg_1", "role": "assistant", "content": [], "ts": 1783376873493}
    message |= {"modelInfo": {"id": "anthropic/claude"}, "metrics": metrics}
    doc = {"version": 1, "agent": "lead", "sessionId": "s1", "messages": [message]}
    return "s1/s1.messages.json", json.dumps(doc).encode(), "metrics.cost"


def _cline_tasks(value: Any) -> tuple[str, bytes, str]:
    info = {"request": "POST /v1/messages", "tokensIn": 100, "tokensOut": 3, "cost": value}
    ui = [{"ts": 1740470401000, "type": "say", "say": "api_req_started", "text": json.dumps(info)}]
    return "t1/ui_messages.json", json.dumps(ui).encode(), "api_req.cost"


def _session_row(value: Any) -> bytes:
    row = {
        "id": "s1",
        "parent_session_id": None,
        "title": "t",
        "message_count": 1,
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "cost": value,
        "updated_at": 1751116486,
        "created_at": 1751116482,
        "summary_message_id": None,
    }
    return json.dumps({"table": "sessions", "row": row}).encode() + b"\n"


def _crush(value: Any) -> tuple[str, bytes, str]:
    return "p/.crush/crush.db", _session_row(value), "sessions.cost"


def _opencode_go(value: Any) -> tuple[str, bytes, str]:
    return "p/.opencode/opencode.db", _session_row(value), "sessions.cost"


def _opencode(value: Any) -> tuple[str, bytes, str]:
    data = {"role": "assistant", "modelID": "m", "cost": value}
    data |= {"tokens": {"input": 12, "output": 3, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
    data |= {"time": {"created": 1760000002000}}
    row = {"id": "msg_a1", "session_id": "ses_1", "time_created": 1760000002000}
    row |= {"time_updated": 1760000002500, "data": json.dumps(data)}
    return (
        "opencode.db",
        json.dumps({"table": "message", "row": row}).encode() + b"\n",
        "message.cost",
    )


JSON_AGENTS: dict[str, Callable[[Any], tuple[str, bytes, str]]] = {
    "pi": _pi,
    "cline-cli": _cline_sdk,
    "cline_vscode": _cline_tasks,
    "crush": _crush,
    "opencode_go": _opencode_go,
    "opencode": _opencode,
}


def _parse(agent: str, rel: str, data: bytes) -> Parsed:
    adapter = adapter_named(agent)
    assert adapter.matches(rel), rel
    return adapter.parse(Chunk(data, 0, True, FileContext(f"/r/{rel}", rel)), {})


def _recorded(parsed: Parsed) -> list[float | None]:
    return [u.recorded_cost_usd for u in parsed.usage]


dollars = st.one_of(
    st.floats(min_value=0, max_value=MAX_USD, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=int(MAX_USD)),
)
# any JSON value, numbers out of range included (what a drifting or broken agent could write)
junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@pytest.mark.parametrize("agent", sorted(JSON_AGENTS))
@QUICK
@given(value=dollars)
def test_a_recorded_cost_is_carried_exactly(agent: str, value: float) -> None:
    rel, data, _ = JSON_AGENTS[agent](value)
    parsed = _parse(agent, rel, data)
    assert not parsed.bad
    # the dollars the agent wrote, read back through JSON; 0 is "no price": not a cost
    assert _recorded(parsed) == [float(value) if value > 0 else None]


@pytest.mark.parametrize("agent", sorted(JSON_AGENTS))
@QUICK
@given(value=junk)
def test_any_value_is_a_cost_or_a_bad_line_never_a_guess(agent: str, value: Any) -> None:
    rel, data, field = JSON_AGENTS[agent](value)
    parsed = _parse(agent, rel, data)  # never raises
    try:
        expected = usd(value, field)
    except Rejected:
        assert _recorded(parsed) == [] and len(parsed.bad) == 1
        assert field in parsed.bad[0].reason
        return
    assert not parsed.bad and _recorded(parsed) == [expected]
    if expected is not None:
        assert 0 < expected <= MAX_USD


AIDER = "proj/.aider.chat.history.md"


def _aider(message: str) -> bytes:
    return (
        "# aider chat started at 2025-06-02 11:47:49\n\n"
        "#### add a test\n\nDone.\n\n"
        f"> Tokens: 9.7k sent, 85 received. Cost: ${message} message, $9.99 session.  \n"
    ).encode()


@QUICK
@given(
    cents=st.integers(min_value=0, max_value=10**9), places=st.integers(min_value=0, max_value=4)
)
def test_aider_message_cost_is_read_as_written(cents: int, places: int) -> None:
    """Aider prints the message's dollars rounded (``$0.0084``, ``$1,234.50``): whatever digits
    it prints are the recorded cost, the session's running total never is."""
    whole, frac = divmod(cents, 10**places) if places else (cents, 0)
    shown = f"{whole:,}" + (f".{frac:0{places}d}" if places else "")
    parsed = _parse("aider", AIDER, _aider(shown))
    value = float(shown.replace(",", ""))
    if value > MAX_USD:
        assert _recorded(parsed) == [] and len(parsed.bad) == 1
    else:
        assert not parsed.bad and _recorded(parsed) == [value if value > 0 else None]


# --- the agent database's identity re-check ------------------------------------------------


def _database(path: Path, marker: str) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v TEXT)")
    con.execute("INSERT INTO t VALUES (?)", (marker,))
    con.commit()
    con.close()


@settings(max_examples=25, deadline=None)
@given(
    how=st.sampled_from(["rename-over", "delete-recreate", "link-to-original", "link-to-other"]),
    wal=st.booleans(),
    marker=st.text(min_size=1, max_size=20),
)
def test_a_swapped_agent_database_is_refused(how: str, wal: bool, marker: str) -> None:
    """Whatever way another file comes to sit at the path after its identity was taken
    (written beside and renamed over, deleted and created anew, a link), ``snapshot`` raises
    ``Swapped`` before any row is read; the database the identity was taken from is read."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent.db"
        _database(path, "original")
        if wal:
            sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").connection.close()
        st_before = stat_file(str(path))
        assert st_before is not None
        identity = (st_before.dev, st_before.ino)
        with agentdb.snapshot(str(path), identity) as conn:
            assert conn.execute("SELECT v FROM t").fetchone() == ("original",)
        keep = Path(tmp) / "kept.db"  # holds the inode: the new file cannot reuse it
        os.link(path, keep)
        if how == "delete-recreate":
            path.unlink()
            _database(path, marker)
        elif how.startswith("link-to"):
            target = keep
            if how == "link-to-other":
                target = Path(tmp) / "other.db"
                _database(target, marker)
            path.unlink()
            path.symlink_to(target)  # even the very file it was, through a link, is refused
        else:
            other = Path(tmp) / "other.db"
            _database(other, marker)
            os.replace(other, path)
        with pytest.raises(agentdb.Swapped), agentdb.snapshot(str(path), identity) as conn:
            conn.execute("SELECT v FROM t").fetchone()

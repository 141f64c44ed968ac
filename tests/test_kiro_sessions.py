"""Kiro's session files (``~/.kiro/sessions/``): the V2 engine's ``cli/<id>.jsonl`` and the
V3 engine's (and the IDE's) ``<workspace>/<session>/messages.jsonl``.

Golden numbers counted by hand from the constructed fixtures (``tests/fixtures/kiro_sessions``):

* V2 ``3c9d5e2f…``: two ``Prompt`` records (2 user_msg); assistant text in ``a-001`` and in
  the two streamed pieces of ``a-003`` (3 assistant_msg; ``a-002``'s text is empty), one
  ``thinking`` block; two ``toolUse`` blocks (2 tool_call: ``pytest`` is a test run,
  ``write`` with a ``path`` an edit) and their two results (the first ``status: error``: an
  error); one record of an unknown kind (``Checkpoint``).
* V3 ``sess_5b0e…``: 2 ``user``; ``Reasoning`` (thinking), ``Say`` (assistant_msg),
  ``Summary`` (lifecycle); calls ``call-1`` (written twice, pending then completed: one
  call, an edit), ``call-3`` (``pytest -q``: a test run) and the sub-agent (3 tool_call, 3
  tool_result); ``call-2`` denied and the ``cancelled`` turn end (2 human_intervention); one
  unknown payload type; the bookkeeping records add nothing.
* The older IDE file: one user and one assistant line, its session a tangent of ``sess_5b0e…``.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.core.records import Parsed
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES

ROOT = FIXTURES / "kiro_sessions"
V2 = "cli/3c9d5e2f-8a41-4b6c-9e07-d1f2a3b4c5d6.jsonl"
V3 = "9f2c4e1a7b3d/sess_5b0e7c2a-1d3f-4e8a-9c6b-2f7a1e4d8c30/messages.jsonl"
LEGACY = "9f2c4e1a7b3d/sess_legacy-ide-0001/messages.jsonl"
ADAPTER = adapter_named("kiro_sessions")


def _parse(rel: str) -> Parsed:
    path = ROOT / rel
    side = ADAPTER.sidecar(str(path))
    sidecar = Path(side).read_bytes() if side else None
    ctx = FileContext(str(path), rel, sidecar)
    return ADAPTER.parse(Chunk(path.read_bytes(), 0, True, ctx), {})


def test_v2_golden() -> None:
    parsed = _parse(V2)
    assert Counter(e.kind for e in parsed.events) == {
        "user_msg": 2,
        "assistant_msg": 3,
        "thinking": 1,
        "tool_call": 2,
        "test_run": 1,
        "edit": 1,
        "tool_result": 2,
        "error": 1,
    }
    assert parsed.unknown_types == {"Checkpoint": 1} and not parsed.bad
    (uid,) = {s.uid for s in parsed.sessions}
    assert uid == "kiro_sessions:3c9d5e2f-8a41-4b6c-9e07-d1f2a3b4c5d6"
    info = parsed.sessions[0]
    assert (info.cwd, info.model) == ("/home/dev/shop", "claude-sonnet-4.5")
    calls = {e.call_id: e for e in parsed.events if e.kind == "tool_call"}
    results = {e.call_id: e for e in parsed.events if e.kind == "tool_result"}
    assert calls.keys() == results.keys() == {"tooluse_run1", "tooluse_edit1"}
    assert results["tooluse_run1"].is_error and "1 failed" in results["tooluse_run1"].summary
    replies = [e.body for e in parsed.events if e.kind == "assistant_msg"]
    assert replies[1:] == ["The total was an integer; ", "it is a float now and the test passes."]
    prompt = next(e for e in parsed.events if e.kind == "user_msg")
    assert prompt.ts == 1782896400125 and prompt.body == "Why does the cart test fail?"
    # the reply and its calls take the prompt's time (only a Prompt carries one)
    assert {e.ts for e in parsed.events if e.kind != "user_msg"} == {1782896400125}


def test_v3_golden() -> None:
    parsed = _parse(V3)
    assert Counter(e.kind for e in parsed.events) == {
        "user_msg": 2,
        "thinking": 1,
        "assistant_msg": 1,
        "lifecycle": 1,
        "tool_call": 3,
        "edit": 1,
        "test_run": 1,
        "tool_result": 3,
        "human_intervention": 2,
    }
    assert parsed.unknown_types == {"payload:hologram_projection": 1} and not parsed.bad
    info = parsed.sessions[0]
    assert info.uid == "kiro_sessions:sess_5b0e7c2a-1d3f-4e8a-9c6b-2f7a1e4d8c30"
    assert (info.cwd, info.model, info.title) == (
        "/home/dev/api",
        "claude-opus-4.5",
        "Add a health endpoint",
    )
    tools = sorted(e.tool or "" for e in parsed.events if e.kind == "tool_call")
    assert tools == ["execute_bash", "fs_write", "subagent:reviewer"]


def test_older_ide_lines_and_the_tangent_link() -> None:
    parsed = _parse(LEGACY)
    assert [(e.kind, e.body) for e in parsed.events] == [
        ("user_msg", "What does the router do?"),
        ("assistant_msg", "It maps paths to handlers."),
    ]
    assert parsed.sessions[0].parent_uid == (
        "kiro_sessions:sess_5b0e7c2a-1d3f-4e8a-9c6b-2f7a1e4d8c30"
    )


async def test_end_to_end_appended_lines_are_read_once(tmp_path: Path) -> None:
    """The whole root ingested; a line appended to the V2 log is the only thing read next;
    a third run reads nothing."""
    root = tmp_path / "sessions"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("README*"))
    async with await Store.open(tmp_path / "h.db") as store:
        first = await Ingestor(store).backfill(discover([(ADAPTER, root)]))
        with (root / V2).open("ab") as fh:
            fh.write(
                b'{"version":"v1","kind":"AssistantMessage","data":{"message_id":"a-004",'
                b'"content":[{"kind":"text","data":"You are welcome."}]}}\n'
            )
        second = await Ingestor(store).backfill(discover([(ADAPTER, root)]))
        third = await Ingestor(store).backfill(discover([(ADAPTER, root)]))
        rows = await store.db.execute(
            "SELECT s.uid, count(*) FROM events e JOIN sessions s ON s.id = e.session_id"
            " GROUP BY s.uid ORDER BY 1",
            (),
        )
    assert first.files_read == 3 and first.events == 13 + 15 + 2
    assert (second.files_read, second.lines, second.events) == (1, 1, 1)
    assert third.files_read == 0
    assert dict((str(u), int(n)) for u, n in rows) == {
        "kiro_sessions:3c9d5e2f-8a41-4b6c-9e07-d1f2a3b4c5d6": 14,
        "kiro_sessions:sess_5b0e7c2a-1d3f-4e8a-9c6b-2f7a1e4d8c30": 15,
        "kiro_sessions:sess_legacy-ide-0001": 2,
    }

"""Kiro IDE workspace sessions: golden numbers counted from the fixture documents with
``json`` (``history[].message.role``: each ``user`` is a ``user_msg``, each ``assistant``
with text an ``assistant_msg``), not from the adapter; one end-to-end ingest."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES

KIRO = FIXTURES / "kiro"
FILES = ["test-workspace/test-session-1.json", "test-workspace/test-session-edge.json"]


def _counted(path: Path) -> Counter[str]:
    doc = json.loads(path.read_text())
    kinds: Counter[str] = Counter()
    for item in doc["history"]:
        role = item["message"]["role"]
        kinds["user_msg" if role == "user" else "assistant_msg"] += 1
    return kinds


@pytest.mark.parametrize("rel", FILES)
def test_kiro_golden(rel: str) -> None:
    path = KIRO / rel
    doc = json.loads(path.read_text())
    parsed = adapter_named("kiro").parse(
        Chunk(path.read_bytes(), 0, True, FileContext(str(path), rel)), {}
    )
    assert Counter(e.kind for e in parsed.events) == _counted(path)
    (info,) = parsed.sessions
    assert info.uid == f"kiro:{doc['sessionId']}" and info.cwd == doc["workspacePath"]
    assert info.model == doc.get("selectedModel") and info.title == doc.get("title")
    assert not parsed.usage and not parsed.bad and not parsed.unknown_types
    # content given as text blocks reads as the string form does
    assert [e.key for e in parsed.events] == [i["message"]["id"] for i in doc["history"]]


def test_the_workspace_index_is_not_a_session() -> None:
    kiro = adapter_named("kiro")
    assert kiro.matches("ws/abc.json") and not kiro.matches("ws/sessions.json")
    assert not kiro.matches("abc.json") and not kiro.matches("ws/deeper/abc.json")


async def test_kiro_end_to_end_and_a_rewrite(tmp_path: Path) -> None:
    """Ingest, then Kiro rewrites a session with one more message: that message is added,
    nothing else twice; a third run reads nothing."""
    root = tmp_path / "workspace-sessions"
    shutil.copytree(KIRO, root, ignore=shutil.ignore_patterns("README.md"))
    store_db = tmp_path / "h.db"
    kiro = adapter_named("kiro")
    path = root / FILES[0]
    async with await Store.open(store_db) as store:
        first = await Ingestor(store).backfill(discover([(kiro, root)]))
        doc = json.loads(path.read_text())
        doc["history"].append({"message": {"role": "user", "content": "thanks", "id": "msg-5"}})
        path.write_text(json.dumps(doc))
        second = await Ingestor(store).backfill(discover([(kiro, root)]))
        third = await Ingestor(store).backfill(discover([(kiro, root)]))
    assert first.files_read == 2 and first.events == 8
    assert second.files_read == 1 and third.files_read == 0
    con = sqlite3.connect(store_db)
    (n,) = con.execute(
        "SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.uid = 'kiro:test-session-1'"
    ).fetchone()
    con.close()
    assert n == 5

"""The cursor-agent CLI's ``store.db`` chats: golden records of the constructed database
(tests/fixtures/cursor_cli/README.md), the corpus's meta-only database, a new message
inserted later read alone, and the daemon watching ``~/.cursor/chats`` with a write that only
reaches the WAL."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.core.records import Parsed
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES, sample_bytes
from tests.daemon_helpers import Helixd, wait_for
from tests.secret_corpus import FAMILIES

WORKSPACE = "3f2a9c0d51e84b6a9d7c2e1f0a4b8c6d"
CHAT = "7c1e4f2a-9b3d-4e5f-8a6b-1c2d3e4f5a6b"
REL = f"{WORKSPACE}/{CHAT}/store.db"
UID = f"cursor_cli:{CHAT}"


def _parse(rel: str) -> Parsed:
    adapter = adapter_named("cursor_cli")
    path = FIXTURES / "cursor_cli" / rel
    data = sample_bytes(adapter, path)
    return adapter.parse(Chunk(data, 0, True, FileContext(str(path), rel)), {})


def test_matches_only_a_chat_directorys_store() -> None:
    adapter = adapter_named("cursor_cli")
    assert adapter.matches(REL)
    assert not adapter.matches("store.db")
    assert not adapter.matches(f"{WORKSPACE}/store.db")
    assert not adapter.matches(f"{REL}-wal")
    assert not adapter.matches(f"{WORKSPACE}/{CHAT}/sub/store.db")


# From build.py: a system prompt (nothing), 2 user messages, 3 assistant messages (a reasoning
# block, 2 texts, 2 tool calls: a pytest run and an edit), 2 tool results; the root blob
# (protobuf) is not a message.
def test_golden_constructed_store() -> None:
    parsed = _parse(REL)
    assert dict(Counter(e.kind for e in parsed.events)) == {
        "user_msg": 2,
        "assistant_msg": 2,
        "thinking": 1,
        "tool_call": 2,
        "tool_result": 2,
        "edit": 1,
        "test_run": 1,
    }
    assert not parsed.usage and not parsed.bad and not parsed.unknown_types
    ordered = [(e.kind, e.summary) for e in parsed.events if e.kind in ("user_msg", "tool_call")]
    assert ordered == [
        ("user_msg", "Why does the cart test fail?"),  # the <user_query>, not the envelope
        ("tool_call", "Shell: pytest tests/test_cart.py -q"),
        ("tool_call", "Edit: /home/dev/shop/cart.py"),
        ("user_msg", "thanks, commit it"),
    ]
    results = {e.call_id: (e.tool, e.summary) for e in parsed.events if e.kind == "tool_result"}
    assert results == {
        "call_run1": ("Shell", "1 failed, 4 passed in 0.21s"),
        "call_edit1": ("Edit", "ok"),
    }
    assert {s.uid for s in parsed.sessions} == {UID}
    assert any(
        s.title == "Cart test failure" and s.model == "claude-4-sonnet" for s in parsed.sessions
    )
    assert any(s.first_ts == 1772442900123 for s in parsed.sessions)
    assert any(s.cwd == "/home/dev/shop" for s in parsed.sessions)


def test_corpus_meta_only_store_is_a_session_without_events() -> None:
    rel = "corpus0000000000000000000000000/a1b2c3d4-e5f6-7890-abcd-ef1234567890/store.db"
    parsed = _parse(rel)
    assert not parsed.events and not parsed.bad
    assert [(s.title, s.model) for s in parsed.sessions] == [("Test Session", "claude-4-sonnet")]


def test_meta_not_hex_is_a_bad_line_and_the_messages_still_read(tmp_path: Path) -> None:
    db = tmp_path / WORKSPACE / CHAT / "store.db"
    db.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "cursor_cli" / REL, db)
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = 'not hex'")
    con.commit()
    con.close()
    adapter = adapter_named("cursor_cli")
    data = sample_bytes(adapter, db)
    parsed = adapter.parse(Chunk(data, 0, True, FileContext(str(db), REL)), {})
    assert len(parsed.bad) == 1 and "hex" in parsed.bad[0].reason
    assert len([e for e in parsed.events if e.kind == "user_msg"]) == 2


def _add_message(db: Path, message: dict[str, object]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute(
        "INSERT INTO blobs (id, data) VALUES (?, ?)", (hashlib.sha256(data).hexdigest(), data)
    )
    con.commit()
    con.close()


def _events(db: Path, uid: str) -> list[str]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT e.kind, e.summary FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.uid = ? ORDER BY e.seq",
        (uid,),
    ).fetchall()
    con.close()
    return [f"{k}: {s}" for k, s in rows]


async def test_a_new_message_is_read_alone(tmp_path: Path) -> None:
    root = tmp_path / "chats"
    db = root / WORKSPACE / CHAT / "store.db"
    db.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "cursor_cli" / REL, db)
    store_db = tmp_path / "h.db"
    adapter = adapter_named("cursor_cli")
    async with await Store.open(store_db) as store:
        first = await Ingestor(store).backfill(discover([(adapter, root)]))
        before = _events(store_db, UID)
        again = await Ingestor(store).backfill(discover([(adapter, root)]))
        _add_message(db, {"role": "user", "content": "and push it"})
        third = await Ingestor(store).backfill(discover([(adapter, root)]))
    assert first.files_read == 1 and again.files_read == 0
    assert third.lines == 1  # the one new blob, not the table
    after = _events(store_db, UID)
    assert len(before) == 11 and after[:11] == before
    assert after[11:] == ["user_msg: and push it"]


def test_daemon_watches_cursor_chats_and_the_wal(daemon: Helixd, home: Path) -> None:
    root = home / ".cursor" / "chats"
    root.mkdir(parents=True)
    daemon.start()
    staged = home / "store.db"
    shutil.copy(FIXTURES / "cursor_cli" / REL, staged)
    sqlite3.connect(staged).execute("PRAGMA journal_mode=WAL").connection.close()
    (root / WORKSPACE / CHAT).mkdir(parents=True)
    shutil.move(staged, root / WORKSPACE / CHAT / "store.db")
    wait_for(lambda: daemon.lookup(UID) is not None, 15, "cursor-agent chat")
    digest = daemon.lookup(UID)
    assert digest is not None and digest["usage_recorded"] is False
    _add_message(root / WORKSPACE / CHAT / "store.db", {"role": "assistant", "content": "Pushed."})
    new = "assistant_msg: Pushed."
    wait_for(lambda: new in _events(daemon.db, UID), 15, "the message written to the WAL")
    assert daemon.stop() == 0


async def test_secrets_in_messages_and_tool_results_are_not_stored(tmp_path: Path) -> None:
    root = tmp_path / "chats"
    db = root / WORKSPACE / CHAT / "store.db"
    db.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "cursor_cli" / REL, db)
    texts = [text for text, _ in FAMILIES.values()]
    needles = sorted({n for _, found in FAMILIES.values() for n in found})
    for i, text in enumerate(texts):  # one user message and one tool result per family
        _add_message(db, {"role": "user", "content": f"use this: {text}"})
        result = {"type": "tool-result", "toolCallId": f"c{i}", "toolName": "Shell", "result": text}
        _add_message(db, {"role": "tool", "content": [result]})
    store_db = tmp_path / "h.db"
    async with await Store.open(store_db) as store:
        stats = await Ingestor(store).backfill(discover([(adapter_named("cursor_cli"), root)]))
    assert stats.bad_lines == 0 and stats.events == 11 + 2 * len(texts)
    assert stats.redactions >= len(texts)
    blob = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    assert [n for n in needles if n.encode() in blob] == []

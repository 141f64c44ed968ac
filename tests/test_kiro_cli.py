"""Kiro CLI / Amazon Q CLI conversations in ``data.sqlite3``: golden counts on the constructed
databases (tests/fixtures/kiro_cli/README.md), a conversation rewritten in place read again
without a duplicate, and the daemon watching ``$XDG_DATA_HOME/kiro-cli`` with a write that only
reaches the WAL."""

from __future__ import annotations

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

FEATURE = "5f0c2a51-9a7e-4c1b-8f55-2d9f7d1e0a01"


def _parse(rel: str) -> Parsed:
    adapter = adapter_named("kiro_cli")
    path = FIXTURES / "kiro_cli" / rel
    data = sample_bytes(adapter, path)
    return adapter.parse(Chunk(data, 0, True, FileContext(str(path), rel)), {})


# Counted by hand from build.py: FEATURE has 6 turns — 3 prompts (one with a cancellation),
# 5 replies with text, 4 tool uses (2 fs_write edits, 1 pytest run) and their 4 results (the
# cancelled one a rejection); QUESTION 1 prompt + 1 reply; OLD (Q's table) 2 + 2.
def test_golden_kiro_database() -> None:
    parsed = _parse("data.sqlite3")
    assert dict(Counter(e.kind for e in parsed.events)) == {
        "user_msg": 6,
        "assistant_msg": 8,
        "tool_call": 4,
        "tool_result": 4,
        "edit": 2,
        "test_run": 1,
        "human_intervention": 1,
    }
    assert not parsed.usage and not parsed.bad and not parsed.unknown_types
    sessions = {s.uid: s for s in parsed.sessions}
    feature = sessions[f"kiro_cli:{FEATURE}"]
    assert (feature.cwd, feature.model) == ("/home/dev/proj", "claude-sonnet-4")
    assert feature.first_ts == 1772442900123  # 10:15:00.123+01:00
    assert feature.last_ts == 1772442972000  # the last reply's stream end
    edits = [e.summary for e in parsed.events if e.kind == "edit"]
    assert edits == ["/home/dev/proj/cli.py", "/home/dev/proj/tests/test_cli.py"]
    rejected = next(e for e in parsed.events if e.key == "tooluse_write2:result")
    assert rejected.is_error and rejected.tool == "fs_write"
    assert {s.cwd for s in parsed.sessions} == {
        "/home/dev/proj",
        "/home/dev/other",
        "/home/dev/old",
    }


def test_golden_amazon_q_database() -> None:
    parsed = _parse("amazon-q/data.sqlite3")
    assert dict(Counter(e.kind for e in parsed.events)) == {"user_msg": 1, "assistant_msg": 1}
    assert [s.cwd for s in parsed.sessions] == ["/home/dev/q"]


def _add_turn(db: Path, updated: int) -> None:
    con = sqlite3.connect(db)
    (value,) = con.execute(
        "SELECT value FROM conversations_v2 WHERE conversation_id = ?", (FEATURE,)
    ).fetchone()
    doc = json.loads(value)
    turn = json.loads(json.dumps(doc["history"][3]))
    turn["user"]["content"] = {"Prompt": {"prompt": "and update the changelog"}}
    turn["assistant"] = {"Response": {"message_id": "msg-7", "content": "Changelog updated."}}
    turn["request_metadata"]["message_id"] = "msg-7"
    doc["history"].append(turn)
    con.execute(
        "UPDATE conversations_v2 SET value = ?, updated_at = ? WHERE conversation_id = ?",
        (json.dumps(doc), updated, FEATURE),
    )
    con.commit()
    con.close()


def _events(db: Path, uid: str) -> list[str]:
    """``kind: summary`` of the session's stored events, in order."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT e.kind, e.summary FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.uid = ? ORDER BY e.seq",
        (uid,),
    ).fetchall()
    con.close()
    return [f"{k}: {s}" for k, s in rows]


async def test_a_conversation_rewritten_in_place_adds_only_its_new_turn(tmp_path: Path) -> None:
    root = tmp_path / "kiro-cli"
    root.mkdir()
    shutil.copy(FIXTURES / "kiro_cli" / "data.sqlite3", root / "data.sqlite3")
    store_db = tmp_path / "h.db"
    kiro = adapter_named("kiro_cli")
    uid = f"kiro_cli:{FEATURE}"
    async with await Store.open(store_db) as store:
        first = await Ingestor(store).backfill(discover([(kiro, root)]))
        before = _events(store_db, uid)
        again = await Ingestor(store).backfill(discover([(kiro, root)]))
        _add_turn(root / "data.sqlite3", 1772600000000)  # now: past every row
        third = await Ingestor(store).backfill(discover([(kiro, root)]))
    assert first.files_read == 1 and again.files_read == 0
    assert third.lines == 1  # the one rewritten row, not the whole table
    after = _events(store_db, uid)
    assert len(before) == 20 and after[:20] == before
    assert after[20:] == ["user_msg: and update the changelog", "assistant_msg: Changelog updated."]


def test_daemon_watches_the_kiro_cli_database_and_its_wal(daemon: Helixd, home: Path) -> None:
    root = home / ".local" / "share" / "kiro-cli"
    root.mkdir(parents=True)
    daemon.start()
    staged = home / "data.sqlite3"
    shutil.copy(FIXTURES / "kiro_cli" / "data.sqlite3", staged)
    sqlite3.connect(staged).execute("PRAGMA journal_mode=WAL").connection.close()
    shutil.move(staged, root / "data.sqlite3")
    uid = f"kiro_cli:{FEATURE}"
    wait_for(lambda: daemon.lookup(uid) is not None, 15, "kiro-cli conversation")
    digest = daemon.lookup(uid)
    assert digest is not None and digest["usage_recorded"] is False
    db = root / "data.sqlite3"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.close()
    _add_turn(db, 1772600000000)
    new = "assistant_msg: Changelog updated."
    wait_for(lambda: new in _events(daemon.db, uid), 15, "the turn written to the WAL")
    assert daemon.stop() == 0

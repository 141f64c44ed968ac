"""Issue 12: what ``status`` reads cheaply.  The full-text index's segment bytes are kept
beside the index's shape (structure + averages records) and read again when it changed;
answers equal a read of every block.  A real store (the Claude fixtures ingested)."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import orjson
import pytest

from helixd.query import status
from helixd.store import tier1
from tests.conftest import RunCli, copy_claude_fixtures


@pytest.fixture
def db(home: Path, helixctl: RunCli, tmp_path: Path) -> Path:
    copy_claude_fixtures(home)
    helixctl("ingest", "--json")
    copy = tmp_path / "copy.db"
    src = sqlite3.connect(helixctl.db)  # type: ignore[attr-defined]
    dst = sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()
    return copy


def _segments(con: sqlite3.Connection) -> int:
    return int(con.execute("SELECT sum(length(block)) FROM search_data").fetchone()[0])


def test_index_bytes_are_kept_while_the_index_is_unchanged(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = tmp_path / "cache" / "index-size.json"
    monkeypatch.setattr(status, "_KNOWN", {})
    con = sqlite3.connect(db)
    plain = tier1.tier1_bytes(con)
    assert plain[2] > 0
    facts = status.store_facts(con, memo)
    assert facts["summary"]["tier1"]["index_bytes"] == plain[2]
    assert status.store_facts(con)["summary"] == facts["summary"]  # memo or not: one answer
    assert stat.S_IMODE(memo.stat().st_mode) == 0o600
    kept = orjson.loads(memo.read_bytes())
    assert kept["bytes"] == _segments(con)
    # the memo is what a next run uses (marked: a changed figure shows it was read) ...
    memo.write_bytes(orjson.dumps({**kept, "bytes": 12345}))
    monkeypatch.setattr(status, "_KNOWN", {})
    assert status.index_segment_bytes(con, memo) == 12345
    # ... until the index changes: a document added or deleted, the index optimized
    for change in (
        "INSERT INTO search (rowid, text) VALUES (99999999, 'zebraquux flamingo')",
        "INSERT INTO search (search, rowid, text) VALUES ('delete', 99999999,"
        " 'zebraquux flamingo')",
        "INSERT INTO search (search) VALUES ('optimize')",
    ):
        con.execute(change)
        con.commit()
        monkeypatch.setattr(status, "_KNOWN", {})
        assert status.index_segment_bytes(con, memo) == _segments(con)
        assert status.index_segment_bytes(con, memo) == _segments(con)  # in memory now
    con.close()


def test_a_memo_of_another_store_or_a_damaged_one_is_not_used(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = tmp_path / "index-size.json"
    con = sqlite3.connect(db)
    shape = tier1.index_shape(con).hex()
    for junk in (
        b"{",
        b"[]",
        orjson.dumps({"store": "/elsewhere/helix.db", "shape": shape, "bytes": 1}),
        orjson.dumps({"store": str(db), "shape": shape, "bytes": "1"}),
    ):
        memo.write_bytes(junk)
        monkeypatch.setattr(status, "_KNOWN", {})
        assert status.index_segment_bytes(con, memo) == _segments(con)
    con.close()

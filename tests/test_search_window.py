"""Search as you type (the palette's ``prefix=1``): a prefix common to many documents is
ranked among its newest N matches only, deterministically; with fewer matches, or with a
filter, every match is ranked as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helixd.query import open_reader, search
from helixd.store.database import Store
from helixd.store.search_window import newest_floor


async def _store(path: Path, docs: int) -> None:
    """``docs`` documents in one session; the oldest say ``testing`` most often (bm25
    prefers them), the newer ones once among other words."""
    store = await Store.open(path)
    await store.close()
    con = sqlite3.connect(path)
    with con:
        con.execute(
            "INSERT INTO sessions (id, uid, agent, native_id, discovered_at, messages)"
            " VALUES (1, 'claude:s', 'claude', 's', 0, 1)"
        )
        rows = []
        for i in range(1, docs + 1):
            text = "testing " * 6 if i <= 50 else f"step {i} ran the tests and more words here"
            rows.append((i, text))
        con.executemany(
            "INSERT INTO search_docs (id, session_id, kind, ts) VALUES (?, 1, 'user_msg', ?)",
            [(i, 1_763_000_000_000 + i) for i, _ in rows],
        )
        con.executemany("INSERT INTO search (rowid, text) VALUES (?, ?)", rows)
    con.close()


async def test_a_common_prefix_is_ranked_among_its_newest_matches(tmp_path: Path) -> None:
    await _store(tmp_path / "s.db", 3000)
    con = open_reader(tmp_path / "s.db")
    try:
        everything = search.search(con, search.SearchQuery("test", prefix=True, limit=8))
        assert {h["event_id"] for h in everything} <= set(range(1, 51))  # the oldest win
        window = search.SearchQuery("test", prefix=True, limit=8, newest=1000)
        hits = search.search(con, window)
        assert newest_floor(con, '"test"*', 1000) == 2001
        assert len(hits) == 8 and all(h["event_id"] >= 2001 for h in hits)
        assert search.search(con, window) == hits  # the same store, the same hits
        # the window's ranking is bm25 over the window (ties: as FTS5 orders them)
        ranked = con.execute(
            "SELECT rowid FROM search WHERE search MATCH '\"test\"*' AND rowid >= 2001"
            " ORDER BY bm25(search) LIMIT 8"
        ).fetchall()
        assert [h["event_id"] for h in hits] == [r[0] for r in ranked]
        # a filter narrows the matches itself: every match is ranked
        kinds = search.SearchQuery("test", prefix=True, limit=8, newest=1000, kinds=["user_msg"])
        assert search.search(con, kinds) == everything
        # fewer matches than the window: the same as ranking them all
        wide = search.SearchQuery("test", prefix=True, limit=8, newest=5000)
        assert newest_floor(con, '"test"*', 5000) is None
        assert search.search(con, wide) == everything
        with pytest.raises(search.SearchError, match="FTS5"):
            search.search(con, search.SearchQuery('"unclosed', fts=True, newest=1000))
    finally:
        con.close()


def test_a_last_word_shorter_than_three_characters_matches_whole() -> None:
    assert search.to_fts("run te", prefix=True) == '"run" "te"'
    assert search.to_fts("run tes", prefix=True) == '"run" "tes"*'
    assert search.to_fts("run te") == '"run" "te"'


async def test_the_palette_finds_a_short_word_whole_and_a_longer_one_as_prefix(
    tmp_path: Path,
) -> None:
    await _store(tmp_path / "s.db", 60)
    con = open_reader(tmp_path / "s.db")
    try:
        assert search.search(con, search.SearchQuery("te", prefix=True)) == []
        assert search.search(con, search.SearchQuery("tes", prefix=True, limit=100))
    finally:
        con.close()

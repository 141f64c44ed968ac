"""What leaves the machine: no conversation text unless ``fleet.include_text``; with it the
events, titles and the digest's text go, and turning it off takes them back.  Every string is
made storable by PostgreSQL (NUL)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from helixd.fleet.shape import clean, clean_str, for_server, public_digest
from helixd.store.outbox_batch import Tier2Batch
from tests.fleet.helpers import local, push_once, server, target

TABLES = (
    "machines",
    "sessions",
    "digests",
    "usage",
    "usage_buckets",
    "tool_calls",
    "test_runs",
    "file_operations",
    "session_signals",
    "events",
)


def everything_on_the_server(dsn: str) -> str:
    """Every row of every table, as text."""
    return "\n".join(r[0] for t in TABLES for r in server(dsn, f"SELECT t::text FROM helix.{t} t"))


def conversation(db: Path) -> list[str]:
    """Prompts, answers and thinking of the store: distinct passages long enough to be
    unmistakable."""
    rows = local(
        db,
        "SELECT DISTINCT coalesce(body, summary) FROM events"
        " WHERE kind IN ('user_msg', 'assistant_msg', 'thinking')",
    )
    out = set()
    for (text,) in rows:
        words = " ".join((text or "").split())
        if len(words) >= 40 and '"' not in words and "\\" not in words:
            out.add(words[:40])
    return sorted(out)


def test_without_include_text_no_conversation_leaves_the_machine(
    make_store: Any, pg_db: str
) -> None:
    db = make_store("claude")
    passages = conversation(db)
    titles = [t for (t,) in local(db, "SELECT title FROM sessions WHERE title != ''")]
    assert len(passages) > 50 and titles
    asyncio.run(push_once(db, target(pg_db)))
    dump = " ".join(everything_on_the_server(pg_db).split())
    assert [p for p in passages if p in dump] == []
    assert server(pg_db, "SELECT count(*) FROM helix.sessions WHERE title IS NOT NULL") == [(0,)]
    assert server(pg_db, "SELECT count(*) FROM helix.events") == [(0,)]
    prompts = server(pg_db, "SELECT DISTINCT doc->>'first_prompt' FROM helix.digests")
    assert prompts == [("",)]
    assert (
        local(db, "SELECT count(*) FROM digests WHERE json_extract(json, '$.first_prompt') != ''")[
            0
        ][0]
        > 0
    )


def test_with_include_text_it_goes_and_turning_it_off_takes_it_back(
    make_store: Any, pg_db: str
) -> None:
    db = make_store("claude")
    passages = conversation(db)
    asyncio.run(push_once(db, target(pg_db, include_text=True, batch_rows=200)))
    dump = " ".join(everything_on_the_server(pg_db).split())
    found = [p for p in passages if p in dump]
    assert len(found) > 0.9 * len(passages)  # (a passage with JSON escapes may not match)
    (events,) = local(db, "SELECT count(*) FROM events")[0]
    assert server(pg_db, "SELECT count(*) FROM helix.events") == [(events,)]
    assert server(pg_db, "SELECT count(*) FROM helix.sessions WHERE title IS NOT NULL")[0][0] > 0
    assert server(pg_db, "SELECT bool_or(include_text) FROM helix.machines") == [(True,)]

    asyncio.run(push_once(db, target(pg_db, include_text=False)))
    assert server(pg_db, "SELECT count(*) FROM helix.events") == [(0,)]
    assert server(pg_db, "SELECT count(*) FROM helix.sessions WHERE title IS NOT NULL") == [(0,)]
    assert server(pg_db, "SELECT DISTINCT doc->>'first_prompt' FROM helix.digests") == [("",)]
    dump = " ".join(everything_on_the_server(pg_db).split())
    assert [p for p in passages if p in dump] == []


def test_nul_is_made_storable(make_store: Any, pg_db: str) -> None:
    db = make_store("claude")
    con = sqlite3.connect(db)
    with con:
        sid = con.execute("SELECT id FROM sessions ORDER BY id LIMIT 1").fetchone()[0]
        con.execute(
            "UPDATE sessions SET title = ?, cwd = ? WHERE id = ?", ("a\x00b", "/w/x\x00y", sid)
        )
        doc = orjson.loads(
            con.execute("SELECT json FROM digests WHERE session_id = ?", (sid,)).fetchone()[0]
        )
        doc["first_prompt"] = "nul \x00 here"
        con.execute("UPDATE digests SET json = ? WHERE session_id = ?", (orjson.dumps(doc), sid))
        con.execute(
            "UPDATE events SET body = ? WHERE id = (SELECT min(id) FROM events"
            " WHERE session_id = ?)",
            ("b\x00dy", sid),
        )
    con.close()
    asyncio.run(push_once(db, target(pg_db, include_text=True)))
    assert server(pg_db, "SELECT count(*) FROM helix.sessions WHERE title = 'a\ufffdb'") == [(1,)]
    assert server(pg_db, "SELECT count(*) FROM helix.sessions WHERE cwd = '/w/x\ufffdy'") == [(1,)]
    assert server(
        pg_db, "SELECT count(*) FROM helix.digests WHERE doc->>'first_prompt' = 'nul \ufffd here'"
    ) == [(1,)]
    assert server(pg_db, "SELECT count(*) FROM helix.events WHERE body = 'b\ufffddy'") == [(1,)]


def test_the_shaping_rules() -> None:
    assert clean_str("a\x00b") == "a\ufffdb"
    assert clean_str("x\ud800y") == "x\ufffdy"
    assert clean_str("plain ascii") == "plain ascii"
    assert clean({"k\x00": ["v\x00", 1, None]}) == {"k\ufffd": ["v\ufffd", 1, None]}
    digest = {
        "first_prompt": "secret plan",
        "last_assistant": "done",
        "title": "Plan",
        "error_snippets": [{"fingerprint": "E1", "sample": "boom at x", "count": 2}],
        "outcome": "success",
    }
    public = public_digest(digest)
    assert public["first_prompt"] == public["last_assistant"] == ""
    assert public["title"] is None and public["outcome"] == "success"
    assert public["error_snippets"] == [{"fingerprint": "E1", "sample": "", "count": 2}]
    batch = Tier2Batch(entries=[], digests=[("u", 2, 0, 0, orjson.dumps(digest))])
    sent = for_server(batch, include_text=False)
    assert orjson.loads(sent.digests[0][4])["first_prompt"] == ""
    kept = for_server(batch, include_text=True)
    assert orjson.loads(kept.digests[0][4])["first_prompt"] == "secret plan"

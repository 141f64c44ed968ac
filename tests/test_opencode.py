"""OpenCode (current): ``opencode.db`` read through the SQLite source kind.

Golden numbers are worked out from the fixture database itself (``sqlite3`` + ``json`` over
its ``message`` and ``part`` rows, by the rules in ``helixd/adapters/opencode.py``), not
from the adapter's output; the end-to-end test writes to a copy the way OpenCode does (WAL
mode, a part row rewritten in place as a tool completes) and ingests it again."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES, sample_bytes

DB = FIXTURES / "opencode" / "opencode.db"
EDIT_TOOLS = {"edit", "write", "patch", "multiedit"}


def _expected() -> tuple[Counter[str], list[tuple[Any, ...]], int]:
    """Events by kind, usage per assistant message, sessions — from the rows."""
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    roles: dict[str, str] = {}
    kinds: Counter[str] = Counter()
    usage = []
    for mid, raw in con.execute("SELECT id, data FROM message ORDER BY time_updated, rowid"):
        data = json.loads(raw)
        roles[mid] = data["role"]
        if data["role"] != "assistant":
            continue
        t = data.get("tokens")  # the corpus's assistant message records none
        if t:
            usage.append(
                (t["input"], t["output"], t["reasoning"], t["cache"]["read"], t["cache"]["write"])
                + (data.get("cost") or None,)  # the dollars OpenCode recorded (0: none)
            )
        err = data.get("error")
        if err:
            kinds["human_intervention" if err["name"] == "MessageAbortedError" else "error"] += 1
    for mid, raw in con.execute("SELECT message_id, data FROM part"):
        part: dict[str, Any] = json.loads(raw)
        if part["type"] == "text":
            kinds["user_msg" if roles.get(mid) == "user" else "assistant_msg"] += 1
        elif part["type"] == "reasoning":
            kinds["thinking"] += 1
        elif part["type"] == "tool":
            kinds["tool_call"] += 1
            kinds["edit"] += part["tool"] in EDIT_TOOLS
            command = part["state"]["input"].get("command", "")
            kinds["test_run"] += command.startswith("pytest")
            if part["state"]["status"] in ("completed", "error"):
                kinds["tool_result"] += 1
                kinds["error"] += part["state"]["status"] == "error"
    (sessions,) = con.execute("SELECT count(*) FROM session").fetchone()
    con.close()
    return +kinds, usage, sessions


def test_opencode_golden() -> None:
    adapter = adapter_named("opencode")
    parsed = adapter.parse(
        Chunk(sample_bytes(adapter, DB), 0, True, FileContext(str(DB), "opencode.db")), {}
    )
    kinds, usage, sessions = _expected()
    assert Counter(e.kind for e in parsed.events) == kinds
    got = [
        (
            u.input_tokens,
            u.output_tokens,
            u.reasoning_tokens,
            u.cache_read_tokens,
            u.cache_write_5m_tokens,
            u.recorded_cost_usd,
        )
        for u in parsed.usage
    ]
    assert got == usage  # step-finish parts and the session totals are not counted again
    assert sum(u.recorded_cost_usd or 0 for u in parsed.usage) > 0
    assert len({s.uid for s in parsed.sessions}) == sessions == 3
    assert {u.model for u in parsed.usage} == {"claude-sonnet-4-5"}
    assert parsed.unknown_types == {"part:hologram": 1} and not parsed.bad
    parents = {s.uid: s.parent_uid for s in parsed.sessions if s.parent_uid}
    assert parents == {"opencode:ses_helix_child": "opencode:ses_helix_usage"}
    corpus = [e for e in parsed.events if e.session_uid == "opencode:ses_stage0_small"]
    assert [(e.kind, e.body or e.summary) for e in corpus][:2] == [
        ("user_msg", "Hello"),
        ("tool_call", "ls"),
    ]


def test_a_text_part_whose_message_came_in_an_earlier_read_keeps_its_role() -> None:
    """The role of a message read before is remembered in the state (a part row may be
    written in a later read than its message's)."""
    adapter = adapter_named("opencode")
    ctx = FileContext(str(DB), "opencode.db")
    msg = {
        "table": "message",
        "row": {
            "id": "m1",
            "session_id": "s1",
            "time_created": 1,
            "data": json.dumps({"role": "user", "time": {"created": 1}}),
        },
    }
    part = {
        "table": "part",
        "row": {
            "id": "p1",
            "message_id": "m1",
            "session_id": "s1",
            "time_created": 2,
            "data": json.dumps({"type": "text", "text": "hi"}),
        },
    }
    first = json.dumps(msg).encode() + b"\n"
    one = adapter.parse(Chunk(first, 0, True, ctx), {})
    two = adapter.parse(Chunk(json.dumps(part).encode() + b"\n", len(first), True, ctx), one.state)
    assert [e.kind for e in two.events] == ["user_msg"]
    fresh = adapter.parse(Chunk(json.dumps(part).encode() + b"\n", 0, True, ctx), {})
    assert [e.kind for e in fresh.events] == ["assistant_msg"]


def _events(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT e.summary, e.kind FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.uid = 'opencode:ses_helix_usage'"
    ).fetchall()
    con.close()
    return rows


async def test_end_to_end_rows_rewritten_in_place_through_the_wal(tmp_path: Path) -> None:
    """A copy in WAL mode, ingested; then OpenCode completes the running tool (its part row
    is rewritten, ``time_updated`` moves) and adds a reply, in the WAL only: the next run
    reads just those rows, the tool's result appears once, and a third run reads nothing."""
    root = tmp_path / "opencode"
    root.mkdir()
    agent_db = root / "opencode.db"
    shutil.copy(DB, agent_db)
    writer = sqlite3.connect(agent_db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    store_db = tmp_path / "h.db"
    opencode = adapter_named("opencode")
    async with await Store.open(store_db) as store:
        first = await Ingestor(store).backfill(discover([(opencode, root)]))
        before = _events(store_db)
        done = {
            "type": "tool",
            "callID": "toolu_03",
            "tool": "task",
            "state": {
                "status": "completed",
                "input": {"description": "Explore tests"},
                "output": "Tests live in tests/.",
                "title": "Explore tests",
                "metadata": {},
                "time": {"start": 1760000010500, "end": 1760000030000},
            },
        }
        writer.execute(
            "UPDATE part SET data = ?, time_updated = ? WHERE id = 'prt_a2a'",
            (json.dumps(done), 1760000030000),
        )
        writer.execute(
            "INSERT INTO part VALUES ('prt_a2b', 'msg_a2', 'ses_helix_usage', ?, ?, ?)",
            (1760000031000, 1760000031000, json.dumps({"type": "text", "text": "All green now."})),
        )
        writer.commit()
        assert (root / "opencode.db-wal").stat().st_size > 0
        second = await Ingestor(store).backfill(discover([(opencode, root)]))
        third = await Ingestor(store).backfill(discover([(opencode, root)]))
    writer.close()
    assert first.files_read == 1 and first.events == sum(_expected()[0].values())
    after = _events(store_db)
    new = Counter(after) - Counter(before)
    assert new == {
        ("All green now.", "assistant_msg"): 1,
        ("Tests live in tests/.", "tool_result"): 1,
    }
    assert len(after) == len(before) + 2  # the rewritten tool call replaced, not added
    assert second.lines == 2 and third.files_read == 0


async def test_a_session_in_two_channel_databases_is_rebuilt_as_a_fresh_ingest_stores_it(
    tmp_path: Path,
) -> None:
    """The same session in ``opencode.db`` and in a channel database (OpenCode copies a
    session into the channel a user switches to): stored once, and the file and offset its
    events keep are those of the same database in a fresh ingest and in a rebuild from the
    raw lines (``helixd/ingest/renormalize.py``), whatever order the files come in."""
    from helixd.ingest.renormalize import renormalize
    from tests.db_snapshot import snapshot
    from tests.test_renormalize import old_version

    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DB, src / "opencode.db")
    beta = src / "opencode-beta.db"
    shutil.copy(DB, beta)  # every session in both, after one of the channel's own:
    con = sqlite3.connect(beta)  # their rows sit at other offsets of the row stream there
    con.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES ('ses_beta_own', 'p', 's', '/tmp', 'own', '1', 1, 1)"
    )
    con.commit()
    con.close()
    adapter = adapter_named("opencode")
    old_db, new_db = tmp_path / "old.db", tmp_path / "new.db"
    async with await Store.open(old_db) as store:
        await Ingestor(store).backfill(discover([(old_version(adapter), src)]))
    async with await Store.open(old_db) as store:
        stats = await renormalize(store, [adapter])
        assert stats.groups == 1 and not stats.skipped
    async with await Store.open(new_db) as store:
        await Ingestor(store).backfill(discover([(adapter, src)]))
    rebuilt, fresh = snapshot(old_db), snapshot(new_db)
    for table in ("sessions", "events", "usage"):
        assert rebuilt[table] == fresh[table], table
    con = sqlite3.connect(new_db)
    where = set(
        con.execute("SELECT DISTINCT f.path FROM events e JOIN files f ON f.id = e.file_id")
    )
    con.close()
    assert where == {(str(src / "opencode.db"),)}  # the default channel's database first

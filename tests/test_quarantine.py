"""Quarantine, never halt (issue 11): every adapter and every write is total over arbitrary
bytes.  A line that cannot be parsed, validated or stored becomes one bad line (kept raw,
counted, shown by ``status`` and ``lookup``); the lines around it are stored as if it were
not there; every command still works afterwards.

The regressions of the issue, for each of the four adapters: an impossible timestamp
(``-1e308`` raised OverflowError and stopped all ingest), non-finite numbers (``NaN`` went
through the stdlib fallback into ``int()``), counts beyond int64 (SQLite refused them),
negative counts (negative cost), a record type that is a list (unhashable), far-future and
far-past times stored (they broke ``sessions``, ``report``, ``analyze`` and
``renormalize``), and the digest of a re-parented subagent's old parent.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters import Adapter, Chunk, FileContext, jsonl
from helixd.adapters.guard import parse_total
from helixd.core.records import Cursor, Event, Parsed, SessionInfo, UsageFact
from helixd.core.timeparse import iso, parse_ts
from helixd.core.values import TS_MAX_MS, TS_MIN_MS
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.renormalize import renormalize
from helixd.store.batch import prepare_event
from helixd.store.database import Batch, Store
from tests.conftest import REPO, RunCli, cli_env
from tests.daemon_helpers import Helixd, wait_for
from tests.db_snapshot import snapshot
from tests.poison import (
    AGENTS,
    BEYOND_INT64,
    CLAUDE,
    GROK,
    IMPOSSIBLE_TIMES,
    MARK,
    NEGATIVE,
    NOT_A_TYPE,
    NOT_FINITE,
    WRONG_TYPES,
    Agent,
    dumps,
)

IDS = [a.name for a in AGENTS]


def parse(agent: Agent, lines: list[bytes]) -> Parsed:
    data = b"".join(lines)
    ctx = FileContext(f"/home/u/{agent.rel}", agent.rel)
    return parse_total(agent.adapter, Chunk(data, 0, True, ctx), {})


def content(p: Parsed) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
    """Events and usage facts without their offsets (a poison line shifts those)."""
    events = Counter((e.key, e.kind, e.summary, e.body, e.ts, e.parent_key) for e in p.events)
    usage = Counter(
        (u.dedup_key, u.ts, u.input_tokens, u.output_tokens, u.cache_read_tokens) for u in p.usage
    )
    return events, usage


def poisoned(agent: Agent, poison: bytes) -> tuple[list[bytes], int]:
    """A valid session with ``poison`` in the middle; returns the lines and its offset."""
    lines = agent.valid(9)
    at = len(lines) // 2
    return [*lines[:at], poison, *lines[at:]], sum(len(x) for x in lines[:at])


def in_window(ms: int | None) -> bool:
    return ms is None or TS_MIN_MS <= ms < TS_MAX_MS


# -- adapters: values checked at the boundary ------------------------------------------------------
@pytest.mark.parametrize("agent", AGENTS, ids=IDS)
@pytest.mark.parametrize("literal", IMPOSSIBLE_TIMES, ids=lambda b: b.decode())
def test_an_impossible_time_is_unknown_time_never_an_error_nor_the_epoch(
    agent: Agent, literal: bytes
) -> None:
    lines, at = poisoned(agent, agent.bad_ts(literal))
    p = parse(agent, lines)
    assert not p.bad, p.bad
    own = [e for e in p.events if e.offset == at]
    assert own and all(e.ts is None for e in own)  # mapped, at unknown time
    assert all(in_window(e.ts) and e.ts != 0 for e in p.events)
    assert all(in_window(u.ts) for u in p.usage)
    assert all(in_window(s.first_ts) and in_window(s.last_ts) for s in p.sessions)
    clean = parse(agent, agent.valid(9))
    assert {s.first_ts for s in p.sessions} == {s.first_ts for s in clean.sessions}


POISON_COUNTS = NOT_FINITE + BEYOND_INT64 + NEGATIVE + WRONG_TYPES


@pytest.mark.parametrize("agent", AGENTS, ids=IDS)
@pytest.mark.parametrize("literal", POISON_COUNTS, ids=lambda b: b.decode())
def test_a_count_that_is_no_count_makes_its_line_a_bad_line_and_nothing_else_changes(
    agent: Agent, literal: bytes
) -> None:
    poison = agent.bad_count(literal)
    lines, at = poisoned(agent, poison)
    p = parse(agent, lines)
    assert [(b.offset, b.length) for b in p.bad] == [(at, len(poison) - 1)]
    assert not [e for e in p.events if e.offset == at] and not [
        u for u in p.usage if u.offset == at
    ]
    assert content(p) == content(parse(agent, agent.valid(9)))
    assert all(
        0 <= n <= 10**12
        for u in p.usage
        for n in (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens)
    )


@pytest.mark.parametrize("agent", AGENTS, ids=IDS)
@pytest.mark.parametrize("literal", NOT_A_TYPE, ids=lambda b: b.decode())
def test_a_record_type_that_is_not_a_string_is_a_bad_line(agent: Agent, literal: bytes) -> None:
    poison = agent.bad_type(literal)
    lines, at = poisoned(agent, poison)
    p = parse(agent, lines)
    assert [(b.offset, b.length) for b in p.bad] == [(at, len(poison) - 1)]
    assert "not a string" in p.bad[0].reason
    assert content(p) == content(parse(agent, agent.valid(9)))


def test_codex_type_list_no_longer_raises_unhashable() -> None:
    from tests.poison import CODEX

    line = b'{"timestamp":"2026-01-01T00:00:00.000Z","type":["x"]}\n'
    p = parse(CODEX, [*CODEX.valid(4), line])
    assert len(p.bad) == 1 and p.bad[0].reason == "type is a list, not a string: ['x']"


@pytest.mark.parametrize("agent", AGENTS, ids=IDS)
def test_deep_nesting_huge_strings_and_invalid_utf8_never_raise(agent: Agent) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    nested = b"[" * 1000 + b"1" + b"]" * 1000  # orjson's limit is 1024: decodes
    junk = [
        agent.bad_type(deep),
        agent.bad_type(nested),
        agent.bad_ts(b'"' + b"x" * 3_000_000 + b'"'),
        agent.bad_ts(b'"2026-01-01T00:00:00Z \xff\xfe"'),
        agent.bad_count(b"1" * 5000),
    ]
    lines = agent.valid(9)
    p = parse(agent, [*lines[:3], *junk, *lines[3:]])
    clean = parse(agent, lines)
    # nothing of the valid lines is lost (the junk that maps adds records beside them)
    assert {(e.key, e.kind) for e in clean.events} <= {(e.key, e.kind) for e in p.events}
    assert not content(clean)[1] - content(p)[1]
    assert len(p.bad) >= 3  # the deep line, the nested type, the 5000-digit count


# -- the per-line guard: an unforeseen exception is one bad line, and all of it --------------------
def test_a_handler_raising_midway_leaves_no_half_built_records() -> None:
    """A Grok tool call whose result content is nested 1000 deep: the call's events are
    emitted, then ``block_text`` recursing into the content raises RecursionError."""
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "ls",
        "rawInput": {"command": "ls"},
        "status": "completed",
        "content": MARK,
    }
    nested = b"[" * 1000 + b'"deep"' + b"]" * 1000
    line = dumps({"timestamp": 1767300000, "params": {"update": update}}, nested)
    lines = GROK.valid(6)
    p = parse(GROK, [*lines[:3], line, *lines[3:]])
    at = sum(len(x) for x in lines[:3])
    assert [b.offset for b in p.bad] == [at]
    assert "RecursionError" in p.bad[0].reason
    assert not [e for e in p.events if e.offset == at]  # the call emitted first is gone too
    assert max(s.last_ts or 0 for s in p.sessions) < 1767300000 * 1000  # its time too
    assert content(p) == content(parse(GROK, lines))


def test_an_unknown_codex_item_too_deep_to_store_is_one_bad_line() -> None:
    """``dump`` of an unknown item's payload refuses nesting beyond 255: the unknown-type
    count the line had already made is taken back with its records."""
    from tests.poison import CODEX

    deep = b'{"a":' * 300 + b"1" + b"}" * 300
    line = dumps({"timestamp": "2026-01-01T00:09:00.000Z", "type": "response_item",
                  "payload": {"type": "hologram", "x": MARK}}, deep)  # fmt: skip
    p = parse(CODEX, [*CODEX.valid(6), line])
    assert len(p.bad) == 1 and "Recursion limit reached" in p.bad[0].reason
    assert not p.unknown_types


# -- one decoder, one behaviour --------------------------------------------------------------------
@pytest.mark.parametrize("literal", NOT_FINITE)
def test_the_decoder_refuses_non_finite_numbers_even_beside_invalid_utf8(literal: bytes) -> None:
    # invalid UTF-8 used to send a line to the stdlib decoder, which accepted NaN
    line = b'{"a": "\xff", "n": ' + literal + b"}"
    with pytest.raises(jsonl.LineError):
        jsonl.decode(line)


def test_the_decoder_repairs_only_invalid_utf8_and_lone_surrogates() -> None:
    obj, repaired = jsonl.decode(
        b'{"a": "x\xffy", "b": "\\ud800", "c": "\\\\ud800", "d": "\\ud83d\\ude00"}'
    )
    assert repaired and obj == {"a": "x\ufffdy", "b": "\ufffd", "c": "\\ud800", "d": "\U0001f600"}
    obj, repaired = jsonl.decode(b'{"a": 18446744073709551615, "b": 1e300}')
    assert not repaired and obj == {"a": 2**64 - 1, "b": 1e300}  # in range: the checks decide
    with pytest.raises(jsonl.LineError, match="depth"):
        jsonl.decode(b'{"a": ' + b"[" * 100_000 + b"}")


# -- timestamps ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value", [-1e308, 1e308, float("inf"), float("nan"), 9e18, -1, 0, 1e20, True, [1], "x", ""]
)
def test_parse_ts_is_total_and_never_the_epoch(value: Any) -> None:
    assert parse_ts(value) is None


def test_parse_ts_keeps_sane_times_in_seconds_and_milliseconds() -> None:
    assert parse_ts(1767225600) == parse_ts(1767225600000) == parse_ts("2026-01-01T00:00:00Z")
    assert parse_ts("1990-01-01T00:00:00Z") == TS_MIN_MS
    assert parse_ts("1989-12-31T23:59:59.999Z") is None


@pytest.mark.parametrize("ms", [9 * 10**18, -(10**15), 10**40, -(10**40)])
def test_iso_is_total_over_what_an_old_store_may_hold(ms: int) -> None:
    assert iso(ms) is None


# -- writes: the store refusing a value quarantines its line, the file goes on ---------------------
RAW = b'{"line": 0}\n{"line": 1}\n{"line": 2}\n{"line": 3}\n'


def _batch(events: list[Event], usage: list[UsageFact], path: str = "/src/a.jsonl") -> Batch:
    cursor = Cursor(
        path=path, agent="claude", root="/src", dev=1, ino=7, size=len(RAW), mtime_ns=1,
        offset=len(RAW), head_hash=b"h", head_len=1, generation=0, adapter_version=2, state={},
    )  # fmt: skip
    infos = [SessionInfo("claude:s", "claude", "s", cwd="/w/p", first_ts=1767225600000)]
    parsed = Parsed(len(RAW), {}, infos, events, usage, lines=4)
    return Batch(cursor=cursor, start=0, raw=RAW, parsed=parsed)


def _event(line: int, **kw: Any) -> Event:
    return Event(
        "claude:s", f"k{line}", "user_msg", 1767225600000, line * 12, summary=f"l{line}", **kw
    )


def _fact(line: int, n: int) -> UsageFact:
    return UsageFact(f"f{line}", "claude:s", 1767225600000, "m", input_tokens=n, offset=line * 12)


async def test_values_the_store_refuses_quarantine_their_lines_only(store: Store) -> None:
    """What an adapter missed (no adapter emits these now): an event of 2**70 tokens, text
    with a lone surrogate, a usage fact beyond int64 — each costs its own line only."""
    events = [
        _event(0),
        _event(1, tokens=2**70),
        _event(2, body="lone \ud800 surrogate"),
        _event(3),
    ]
    usage = [_fact(0, 5), _fact(2, 7), _fact(3, 2**64)]
    await store.commit(_batch(events, usage))
    con = sqlite3.connect(store.path)
    assert con.execute("SELECT summary FROM events ORDER BY seq").fetchall() == [("l0",)]
    assert con.execute("SELECT input FROM usage").fetchall() == [(5,)]
    bad = con.execute("SELECT offset, length, reason FROM bad_lines ORDER BY offset").fetchall()
    assert [(o, n) for o, n, _ in bad] == [(12, 11), (24, 11), (36, 11)]
    assert all(r.startswith("refused by the store: ") for _, _, r in bad)
    assert "too large" in bad[0][2] and "surrogate" in bad[1][2]
    files = con.execute("SELECT offset, lines, bad_lines FROM files").fetchone()
    assert files == (len(RAW), 4, 3)  # the cursor moved past all of it
    assert con.execute("SELECT sum(input), sum(responses) FROM usage_buckets").fetchone() == (5, 1)
    assert con.execute("SELECT count(*) FROM raw_blocks").fetchone() == (1,)  # raw kept


async def test_a_batch_from_a_parse_worker_rows_without_events_quarantines_the_same(
    store: Store,
) -> None:
    """A parse worker sends prepared rows and no events (``parsepool.parse_piece``): the
    refused values are found line by line from the rows' offsets, as from the events."""
    events = [_event(0), _event(1, tokens=2**70), _event(2, body="lone \ud800 surrogate")]
    batch = _batch([], [_fact(0, 5), _fact(2, 7)])
    batch.rows = [prepare_event(ev) for ev in events]
    await store.commit(batch)
    con = sqlite3.connect(store.path)
    assert con.execute("SELECT summary FROM events ORDER BY seq").fetchall() == [("l0",)]
    assert con.execute("SELECT input FROM usage").fetchall() == [(5,)]
    bad = con.execute("SELECT offset, length FROM bad_lines ORDER BY offset").fetchall()
    assert bad == [(12, 11), (24, 11)]
    sessions = con.execute("SELECT uid, source_path FROM sessions").fetchall()
    assert sessions == [("claude:s", "/src/a.jsonl")]  # the owner, named by the first row


async def test_a_store_fault_is_no_value_and_still_propagates(store: Store, tmp_path: Path) -> None:
    await store.commit(_batch([_event(0)], []))
    reader = await Store.open(store.path, readonly=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await reader.commit(_batch([_event(1, tokens=2**70)], [], "/src/b.jsonl"))
    finally:
        await reader.close()
    con = sqlite3.connect(store.path)
    assert con.execute("SELECT count(*) FROM bad_lines").fetchone() == (0,)


# -- end to end: the real CLI over poisoned files of every agent -----------------------------------
POISONS = (
    ("bad_ts", b"-1e308"),
    ("bad_ts", b'"9999-12-31T23:59:59Z"'),
    ("bad_count", b"NaN"),
    ("bad_count", b"18446744073709551615"),
    ("bad_count", b"-5"),
    ("bad_type", b'["x"]'),
)
QUARANTINED = 4  # the count and type poisons; impossible times are kept at unknown time


def _corpus(home: Path) -> dict[str, Path]:
    paths = {}
    for agent in AGENTS:
        lines = agent.valid(12)
        poison = [getattr(agent, kind)(literal) for kind, literal in POISONS]
        paths[agent.name] = agent.write(home, [*lines[:6], *poison, *lines[6:]])
    # a second Claude session after the poisoned one: ingest must reach it
    other = CLAUDE.root(home) / "-work-proj" / f"{OTHER}.jsonl"
    lines = b"".join(CLAUDE.valid(4)).replace(CLAUDE.uid[7:].encode(), OTHER.encode())
    other.write_bytes(lines.replace(b'"msg_', b'"other_msg_'))
    paths["after"] = other
    return paths


OTHER = "zzzzzzzz-0000-4333-8444-555555555555"


def _json(run: RunCli, *args: str) -> Any:
    return orjson.loads(run(*args, "--json").stdout)


def test_poison_in_every_agent_never_stops_ingest_and_every_command_still_works(
    helixctl: RunCli, home: Path
) -> None:
    paths = _corpus(home)
    first = _json(helixctl, "ingest")
    assert first["files"] == 5 and first["bytes"] == sum(p.stat().st_size for p in paths.values())
    assert first["malformed_lines"] == 4 * QUARANTINED
    again = _json(helixctl, "ingest")
    assert again["bytes"] == 0 and again["malformed_lines"] == 0

    con = sqlite3.connect(helixctl.db)  # type: ignore[attr-defined]
    assert con.execute("SELECT count(*) FROM files WHERE offset != size").fetchone() == (0,)
    uids = {u for (u,) in con.execute("SELECT uid FROM sessions WHERE messages > 0")}
    assert uids >= {a.uid for a in AGENTS} | {f"claude:{OTHER}"}
    bad_ts = con.execute(
        "SELECT count(*) FROM events WHERE ts IS NOT NULL AND (ts < ? OR ts >= ?)",
        (TS_MIN_MS, TS_MAX_MS),
    ).fetchone()
    assert bad_ts == (0,)

    status = orjson.loads(helixctl("status", "--json", check=False).stdout)["store"]
    assert status["malformed_lines"] == 4 * QUARANTINED
    assert status["malformed_by_agent"] == {a.name: QUARANTINED for a in AGENTS}
    assert len(status["malformed_latest"]) == 5
    text = helixctl("status", check=False).stdout
    assert "malformed lines kept raw: claude 4, codex 4, gemini 4, grok 4" in text

    for agent in AGENTS:
        digest = _json(helixctl, "lookup", agent.uid)
        assert digest["markers"]["malformed_lines"] == QUARANTINED
        shown = digest["bad_lines"]
        assert len(shown) == QUARANTINED and all(b["reason"] for b in shown)
        data = paths[agent.name].read_bytes()
        for b in shown:  # the raw bytes, kept
            assert b["raw"] == data[b["offset"] : b["offset"] + min(b["length"], 160)].decode()
        assert "bad line @" in helixctl("lookup", agent.uid).stdout

    assert _json(helixctl, "sessions")
    for period in ("daily", "weekly", "monthly", "session"):
        doc = _json(helixctl, "report", period)
        totals = doc["totals"]
        assert all(v >= 0 for v in totals.values()), totals
        rows = doc.get(period, doc.get("sessions", []))
        assert not [r for r in rows if str(r.get("date", r.get("month", ""))).startswith("1970")]
    assert _json(helixctl, "analyze", "--all")["digests"] >= 5
    assert helixctl("renormalize", "--json").returncode == 0
    assert helixctl("search", "prompt", "--json").returncode == 0


def test_usage_of_unknown_time_is_reported_as_undated_never_1970(
    helixctl: RunCli, home: Path
) -> None:
    lines = CLAUDE.valid(4)
    late = json.loads(lines[1])
    late.update(uuid="late", timestamp=-1e308, requestId="req-late")
    late["message"]["id"] = "msg-late"
    CLAUDE.write(home, [*lines, dumps(late)])
    helixctl("ingest")
    doc = _json(helixctl, "report", "daily", "--timezone", "UTC")
    dates = [d["date"] for d in doc["daily"]]
    assert dates == ["2026-01-01"]  # the response of unknown time is in no day …
    assert doc["totals"]["inputTokens"] == sum(d["inputTokens"] for d in doc["daily"])
    assert doc["undated"]["inputTokens"] > 0  # … but reported apart, never as 1970-01-01
    bounded = _json(helixctl, "report", "daily", "--timezone", "UTC", "--since", "20250101")
    assert [d["date"] for d in bounded["daily"]] == ["2026-01-01"]


# -- stores an older version filled with impossible times ------------------------------------------
def _age(db: Path) -> None:
    """Make ``db`` look like a store an older Helix wrote: times of the year 285200616 and
    before 1970 in every table that holds times, negative and absurd usage counters,
    rollups built from them, and the two new migrations not yet applied."""
    con = sqlite3.connect(db)
    con.executescript(
        """
        DELETE FROM migrations WHERE name IN ('m007_unknown_times', 'm008_parent_links');
        DROP TRIGGER sessions_parent_linked;
        DROP TRIGGER sessions_reparented;
        UPDATE sessions SET started_at = -62135596800000, ended_at = 9000000000000000000;
        UPDATE events SET ts = 9000000000000000000 WHERE seq % 2 = 0;
        UPDATE search_docs SET ts = 9000000000000000000;
        UPDATE usage SET ts = 9000000000000000000 WHERE rowid % 2 = 0;
        UPDATE usage SET input = -5 WHERE rowid % 5 = 1;
        UPDATE usage SET output = 2000000000000 WHERE rowid % 5 = 2;
        UPDATE tool_calls SET ts = -5;
        UPDATE files SET adapter_version = 1;
        DELETE FROM usage_buckets;
        INSERT INTO usage_buckets SELECT coalesce(ts, 0) / 900000, session_id, model, count(*),
            sum(input), sum(output), sum(cache_read), sum(cache_write_5m), sum(cache_write_1h),
            sum(reasoning), NULL, 0 FROM usage GROUP BY 1, 2, 3;
        DELETE FROM usage_hours;
        INSERT INTO usage_hours SELECT coalesce(u.ts, 0) / 3600000, s.agent, u.model, count(*),
            sum(u.input), sum(u.output), sum(u.cache_read), sum(u.cache_write_5m),
            sum(u.cache_write_1h), sum(u.reasoning), NULL, 0
            FROM usage u JOIN sessions s ON s.id = u.session_id GROUP BY 1, 2, 3;
        """
    )
    con.commit()
    con.close()


def test_a_store_with_impossible_times_reads_then_migrates_to_unknown_time(
    helixctl: RunCli, home: Path
) -> None:
    for agent in AGENTS:
        agent.write(home, agent.valid(12))
    helixctl("ingest")
    db: Path = helixctl.db  # type: ignore[attr-defined]
    _age(db)
    # read-only commands do not migrate: they read the impossible times as they are
    rows = _json(helixctl, "sessions")
    assert rows and all(r["ended_at_iso"] is None for r in rows)
    assert helixctl("sessions").returncode == 0
    for period in ("daily", "weekly", "monthly", "session"):
        doc = _json(helixctl, "report", period)
        assert doc["totals"]["inputTokens"] > 0
    report = _json(helixctl, "report", "daily")
    assert not [d for d in report["daily"] if d["date"] < "2000"]  # never 1970 or year 0
    assert report["undated"]["inputTokens"] > 0  # the impossible times: in no day
    assert helixctl("search", "prompt", "--json").returncode == 0
    assert _json(helixctl, "lookup", CLAUDE.uid)["session_uid"] == CLAUDE.uid
    # analyze opens the store for writing: m007 gives those rows unknown time
    assert _json(helixctl, "analyze", "--all")["digests"] >= 4
    con = sqlite3.connect(db)
    for table, col in (("sessions", "started_at"), ("sessions", "ended_at"), ("events", "ts"),
                       ("usage", "ts"), ("search_docs", "ts"), ("tool_calls", "ts")):  # fmt: skip
        outside = f"SELECT count(*) FROM {table} WHERE {col} < ? OR {col} >= ?"
        assert con.execute(outside, (TS_MIN_MS, TS_MAX_MS)).fetchone() == (0,), table
    no_count = "SELECT count(*) FROM usage WHERE input < 0 OR output > 1000000000000"
    assert con.execute(no_count).fetchone() == (0,)  # facts no response has are gone
    exact = con.execute("SELECT sum(input), count(*) FROM usage").fetchone()
    assert con.execute("SELECT sum(input), sum(responses) FROM usage_buckets").fetchone() == exact
    assert con.execute("SELECT sum(input), sum(responses) FROM usage_hours").fetchone() == exact
    assert _json(helixctl, "lookup", GROK.uid)["started_at"].startswith("2026-")
    assert _json(helixctl, "report", "daily")["undated"]["inputTokens"] > 0
    # re-normalization rebuilds the rows from the raw lines, with their real times
    assert _json(helixctl, "renormalize")["groups"] >= 4
    assert [d["date"] for d in _json(helixctl, "report", "daily", "-z", "UTC")["daily"]] == [
        "2026-01-01"
    ]


# -- a re-parented subagent: incremental ingest gives the digests a batch ingest gives -------------
def _digests(db: Path) -> dict[str, dict[str, Any]]:
    con = sqlite3.connect(db)
    out = {}
    for uid, blob in con.execute(
        "SELECT s.uid, d.json FROM digests d JOIN sessions s ON s.id = d.session_id"
    ):
        d = orjson.loads(blob)
        for volatile in ("provisional", "closed_by", "bad_lines"):
            d.pop(volatile, None)
        d["markers"].pop("source_files_gone", None)
        out[uid] = d
    return out


def _ingest_once(home: Path, db: Path) -> Path:
    """One ingest of the files as they are now into a new store ``db``."""
    subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest"],
        env=cli_env(home, db),
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return db


GROK_A = "019f7000-0000-7000-8000-0000000000a1"
GROK_B = "019f7000-0000-7000-8000-0000000000a2"
GROK_CHILD = "019f7000-0000-7000-8000-0000000000c1"


def _grok_session(home: Path, sid: str, summary: dict[str, Any] | None, turns: int) -> None:
    base = GROK.root(home) / "%2Fwork%2Fproj" / sid
    base.mkdir(parents=True, exist_ok=True)
    lines = GROK.valid(3 * turns)
    (base / "updates.jsonl").write_bytes(
        b"".join(lines).replace(b"-0000000000b1", sid[-13:].encode())
    )
    if summary is not None:
        (base / "summary.json").write_bytes(orjson.dumps({"session_id": sid, **summary}))


def test_a_reparented_subagent_leaves_its_old_parents_digest(
    helixctl: RunCli, home: Path, tmp_path: Path
) -> None:
    """Grok rewrites summary.json whole: a subagent first says parent A, then parent B, and
    goes on spending.  Step by step, A must forget it and B list it and sum its usage, as a
    single ingest of the final files says."""
    _grok_session(home, GROK_A, {"generated_title": "A"}, 1)
    _grok_session(home, GROK_B, {"generated_title": "B"}, 1)
    sub = {"session_kind": "subagent", "agent_name": "explore"}
    _grok_session(home, GROK_CHILD, {**sub, "parent_session_id": GROK_A}, 1)
    helixctl("ingest")
    before = _json(helixctl, "lookup", f"grok:{GROK_A}")
    assert before["subagents"] == [f"grok:{GROK_CHILD}"]
    _grok_session(home, GROK_CHILD, {**sub, "parent_session_id": GROK_B}, 2)
    helixctl("ingest")

    batch = _ingest_once(home, tmp_path / "batch.db")
    incremental = _digests(helixctl.db)  # type: ignore[attr-defined]
    assert incremental[f"grok:{GROK_A}"]["subagents"] == []
    assert incremental[f"grok:{GROK_B}"]["subagents"] == [f"grok:{GROK_CHILD}"]
    assert incremental[f"grok:{GROK_B}"]["subagent_cost"]["input_tokens"] > 0
    assert incremental == _digests(batch)


def test_a_subagent_read_after_its_parent_is_listed_and_its_new_usage_counted(
    helixctl: RunCli, home: Path, tmp_path: Path
) -> None:
    parent = CLAUDE.write(home, CLAUDE.valid(4))
    helixctl("ingest")
    assert _json(helixctl, "lookup", CLAUDE.uid)["subagents"] == []
    sub_dir = parent.with_suffix("") / "subagents"
    sub_dir.mkdir(parents=True)
    sub = [
        line.replace(b'"msg_', b'"sub_msg_').replace(b'"uuid":"u', b'"uuid":"s')
        for line in CLAUDE.valid(4)
    ]
    (sub_dir / "agent-a1.jsonl").write_bytes(b"".join(sub[:2]))
    helixctl("ingest")
    assert _json(helixctl, "lookup", CLAUDE.uid)["subagents"] == ["claude:agent-a1"]
    (sub_dir / "agent-a1.jsonl").write_bytes(b"".join(sub))  # the subagent goes on
    helixctl("ingest")
    digest = _json(helixctl, "lookup", CLAUDE.uid)
    assert digest["subagent_cost"]["output_tokens"] == 2 + 4  # both of its answers
    assert _digests(helixctl.db) == _digests(_ingest_once(home, tmp_path / "batch.db"))  # type: ignore[attr-defined]


# -- the write fallback in the real ingest and re-normalization paths ------------------------------
def _careless(adapter: Adapter) -> Adapter:
    """``adapter`` as a careless version would be: an event of a line saying "POISON"
    carries 2**70 tokens (no adapter emits such values now: the store must still cope)."""

    def parse(chunk: Chunk, state: Any) -> Parsed:
        out = adapter.parse(chunk, state)
        poisoned = [e._replace(tokens=2**70) if "POISON" in e.body else e for e in out.events]
        return out._replace(events=poisoned)

    return adapter.replace(parse=parse)


async def test_ingest_and_renormalize_quarantine_what_the_store_refuses(
    store: Store, home: Path
) -> None:
    lines = CLAUDE.valid(8)
    poison = lines[4].replace(b"prompt 4", b"POISON 4")
    path = CLAUDE.write(home, [*lines[:4], poison, *lines[5:]])
    adapter = _careless(CLAUDE.adapter)
    root = CLAUDE.root(home)
    stats = await Ingestor(store, chunk_bytes=600).backfill(discover([(adapter, root)]))
    assert stats.bad_lines == 1 and not stats.errors
    con = sqlite3.connect(store.path)
    at = sum(len(x) for x in lines[:4])
    assert con.execute("SELECT offset, length FROM bad_lines").fetchall() == [(at, len(poison) - 1)]
    assert con.execute("SELECT offset FROM files").fetchone() == (path.stat().st_size,)
    assert con.execute("SELECT count(*) FROM events").fetchone() == (7,)
    before = snapshot(store.path)
    con.execute("UPDATE files SET adapter_version = 1")
    con.commit()
    redone = await renormalize(store, [adapter])
    assert redone.groups == 1 and snapshot(store.path) == before


def test_a_poisoned_message_of_a_gemini_document_costs_that_message_only() -> None:
    """A ``.json`` recording is one document: a message whose type is a list or whose
    tokens are negative is a bad line at its position, the other messages are kept."""
    from tests.poison import GEMINI_SID

    def doc(*extra: Any) -> bytes:
        messages = [
            {"id": "u1", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": "hi"},
            *extra,
            {"id": "g1", "timestamp": "2026-01-01T00:00:02Z", "type": "gemini", "content": "ok",
             "tokens": {"input": 10, "output": 2}, "model": "gemini-2.5-pro"},
        ]  # fmt: skip
        return orjson.dumps({"sessionId": GEMINI_SID, "messages": messages})

    rel = "proj/chats/session-2026-01-01T00-00-5e1f0a2b.json"
    ctx = FileContext(f"/h/{rel}", rel)
    adapter = next(a for a in AGENTS if a.name == "gemini").adapter
    clean = adapter.parse(Chunk(doc(), 0, True, ctx), {})
    bad_type = {"id": "x1", "timestamp": "2026-01-01T00:00:01Z", "type": ["user"], "content": "?"}
    bad_count = {"id": "x2", "type": "gemini", "content": "?", "tokens": {"input": -5}}
    data = doc(bad_type, bad_count)
    p = parse_total(adapter, Chunk(data, 0, True, ctx), {})
    assert [b.offset for b in p.bad] == [data.index(b'"x1"'), data.index(b'"x2"')]
    assert [(e.key, e.kind) for e in p.events] == [(e.key, e.kind) for e in clean.events]
    assert [u.dedup_key for u in p.usage] == [u.dedup_key for u in clean.usage]


# -- the daemon: a poison line is counted and skipped, the daemon goes on --------------------------
def test_the_daemon_skips_poison_lines_and_keeps_reading(daemon: Helixd, home: Path) -> None:
    """Before, a ``-1e308`` timestamp made every pass of the daemon fail at the same line."""
    from tests.daemon_helpers import SID, line, project, stored_digest

    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(
        line(0) + CLAUDE.bad_ts(b"-1e308") + CLAUDE.bad_count(b"NaN") + line(1, "assistant")
    )
    daemon.start()
    wait_for(lambda: daemon.lookup(f"claude:{SID}") is not None, 10, "first digest")
    with f.open("ab") as fh:
        fh.write(CLAUDE.bad_type(b"[1]") + line(2) + line(3, "assistant", "done"))

    def caught_up() -> bool:
        d = stored_digest(daemon.db, f"claude:{SID}")
        return d is not None and d["cost"]["output_tokens"] == 1 + 3  # type: ignore[index]

    wait_for(caught_up, 10, "the lines after the poison")
    digest = daemon.lookup(SID)
    assert digest is not None and digest["markers"]["malformed_lines"] == 2  # type: ignore[index]
    status = orjson.loads(daemon.ctl("status", "--json").stdout)
    assert status["daemon"]["running"] and status["store"]["malformed_lines"] == 2
    assert daemon.stop() == 0

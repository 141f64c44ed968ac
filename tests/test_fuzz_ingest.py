"""Fuzzing ingest with mutated real lines: whatever one line of a real session holds, ingest
finishes, every other line is stored as it would be without the mutation, and the digests,
reports and re-normalization still work on the store.

Each example takes a window of a fixture file of one adapter (``tests/fixtures/<agent>``),
mutates one of its lines — a value anywhere in the record replaced by an extreme number, a
non-finite literal, a wrong type, a deep nesting, a huge string or invalid UTF-8; or bytes
inserted, replaced or cut — and ingests the file with the real ``Ingestor`` into a real
SQLite file, in 4 KiB reads.  Derandomized: CI runs the same examples every time.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.adapters import Adapter, Chunk, FileContext
from helixd.adapters.guard import parse_total
from helixd.adapters.registry import REGISTRY
from helixd.core.pricing import bundled
from helixd.core.records import Parsed
from helixd.core.timeparse import iso
from helixd.core.usage_report import offset_segments, period_report, session_report
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.renormalize import renormalize
from helixd.store import queries
from helixd.store.database import Store, now_ms
from helixd.store.keys import key64
from helixd.store.readonly import open_reader
from tests.contract_helpers import samples
from tests.db_snapshot import snapshot
from tests.poison import MARK

WINDOW = 24  # lines of a fixture file per example


@dataclass(frozen=True)
class Source:
    adapter: Adapter
    rel: str
    lines: tuple[bytes, ...]


def _placed(adapter: Adapter, rel: str) -> str:
    """Where the file goes below its root: a per-project file (``project_files``, Aider's
    history kept in a fixture subdirectory) right in the project directory, where discovery
    looks for it."""
    return next((p for p in adapter.project_files if rel.endswith("/" + p)), rel)


def _corpus() -> list[Source]:
    out = []
    for adapter in REGISTRY:
        if adapter.tables:
            continue  # a database, not a file of lines (tests/test_sqlite_source.py)
        for path, rel in samples(adapter, max_bytes=120_000):
            if not rel.endswith((".jsonl", ".md")):
                continue  # whole JSON documents: one line each, nothing around it
            lines = tuple(x for x in path.read_bytes().split(b"\n") if x.strip())
            if len(lines) >= 3:
                out.append(Source(adapter, _placed(adapter, rel), lines))
    return out


CORPUS = _corpus()

POISON = st.one_of(
    st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"]),
    st.sampled_from(
        [
            b"9223372036854775808",
            b"18446744073709551615",
            b"-9223372036854775809",
            b"1e19",
            b"-1",
            b"-1e308",
            b"1e308",
            b"0",
            b"5e-324",
            b"-0.5",
        ]  # fmt: skip
    ),
    st.sampled_from([b"[]", b"{}", b"null", b"true", b'"x"', b"[1, 2, 3]", b'{"a": {"b": []}}']),
    st.integers(100, 1100).map(lambda d: b"[" * d + b"]" * d),
    st.integers(1, 1 << 21).map(lambda n: b'"' + b"y" * n + b'"'),
    st.sampled_from([b'"\xff\xfe"', b'"\\ud800"', b'"x \\udfff"', b'"\xed\xa0\x80"']),
)
INTERESTING = frozenset(
    {
        "type", "timestamp", "ts", "startTime", "id", "uuid", "sessionUpdate",
        "message", "content", "payload", "info", "usage", "tokens",
        "input_tokens", "output_tokens", "cache_read_input_tokens", "inputTokens",
        "total_token_usage", "last_token_usage",
    }
)  # fmt: skip


def _paths(obj: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if depth < 7 and isinstance(obj, dict):
        for k, v in obj.items():
            found += _paths(v, (*prefix, k), depth + 1)
    elif depth < 7 and isinstance(obj, list):
        for i, v in enumerate(obj[:8]):
            found += _paths(v, (*prefix, i), depth + 1)
    return found


def _replaced(obj: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return MARK
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {k: (_replaced(v, rest) if k == head else v) for k, v in obj.items()}
    return [(_replaced(v, rest) if i == head else v) for i, v in enumerate(obj)]


@st.composite
def mutated(draw: st.DrawFn, line: bytes) -> bytes:
    """``line`` with one value replaced by poison, or with bytes inserted, replaced or cut."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        obj = None
    paths = _paths(obj) if isinstance(obj, dict) else []
    if paths and draw(st.integers(0, 3)):
        keyed = [p for p in paths if isinstance(p[-1], str) and p[-1] in INTERESTING]
        path = draw(
            st.sampled_from(keyed) if keyed and draw(st.booleans()) else st.sampled_from(paths)
        )
        out = orjson.dumps(_replaced(obj, path))
        return out.replace(f'"{MARK}"'.encode(), draw(POISON), 1)
    at = draw(st.integers(0, len(line)))
    how = draw(st.sampled_from(["insert", "replace", "cut"]))
    if how == "cut":
        return line[:at] or b"{"
    junk = draw(st.binary(min_size=1, max_size=6).filter(lambda b: b"\n" not in b))
    return line[:at] + junk + line[at + (len(junk) if how == "replace" else 0) :]


def _parse(src: Source, path: Path, data: bytes) -> Parsed:
    return parse_total(src.adapter, Chunk(data, 0, True, FileContext(str(path), src.rel)), {})


def _by_line(p: Parsed, starts: list[int]) -> dict[int, set[str]]:
    """Event keys per line index (``starts``: each line's offset)."""
    index = {off: i for i, off in enumerate(starts)}
    found: dict[int, set[str]] = {}
    for e in p.events:
        if e.offset in index:
            found.setdefault(index[e.offset], set()).add(e.key)
    return found


def _line_keyed(src: Source, key: str, data: bytes) -> bool:
    """Keys that belong to one line whatever the others hold: not a Grok message joined
    from several chunks, not a Codex fork or subagent (its first lines replay a parent), not
    Aider's (its records have no ids: keyed by byte offset, ``o<offset>``, so a mutated line
    of another length moves the keys of the lines after it)."""
    if src.adapter.name in ("aider", "cursor_agent"):
        return False  # cursor-agent transcripts have no ids either: ``<offset>:<crc>:<i>``
    if src.adapter.name == "grok":
        return not key.startswith("u#")
    if src.adapter.name == "codex":
        return b"forked_from_id" not in data and b"thread_spawn" not in data
    return True


def _offsets(lines: list[bytes]) -> list[int]:
    out, at = [], 0
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


async def _check(
    src: Source, home: Path, original: list[bytes], lines: list[bytes], at: int
) -> None:
    """Ingest ``lines`` (``original`` with line ``at`` mutated) and check the store."""
    root = home / src.adapter.name
    path = root / src.rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    starts, before_starts = _offsets(lines), _offsets(original)
    parsed = _parse(src, path, data)
    clean = _parse(src, path, b"\n".join(original) + b"\n")
    db = home / "helix.db"
    async with await Store.open(db) as store:
        stats = await Ingestor(store, chunk_bytes=4096).backfill(discover([(src.adapter, root)]))
        assert not stats.errors
        con = sqlite3.connect(db)
        assert con.execute("SELECT offset, size FROM files").fetchall() == [(len(data), len(data))]

        # no other line is quarantined (but those bad in the original window already)
        was_bad = {before_starts.index(b.offset) for b in clean.bad if b.offset in before_starts}
        bad = {o for (o,) in con.execute("SELECT offset FROM bad_lines")}
        assert bad <= {starts[at]} | {starts[i] for i in was_bad}
        refused = bad - {b.offset for b in parsed.bad}  # quarantined by the store
        assert refused <= {starts[at]}

        # everything the adapter made of the bytes is stored, but what the store refused
        stored = set(
            con.execute("SELECT s.uid, e.ekey FROM events e JOIN sessions s ON s.id = e.session_id")
        )
        assert stored == {
            (e.session_uid, key64(e.key)) for e in parsed.events if e.offset not in refused
        }
        facts = {k for (k,) in con.execute("SELECT key FROM usage")}
        assert facts == {key64(u.dedup_key) for u in parsed.usage if u.offset not in refused}

        # the records of the other lines are those of the original window
        keys = {e.key for e in parsed.events}
        for i, own in _by_line(clean, before_starts).items():
            if i != at:
                kept = {k for k in own if _line_keyed(src, k, data)}
                assert kept <= keys, (i, kept - keys)

        # every command still works: digests, sessions, reports, re-normalization
        ids = await store.analyzable_session_ids()
        assert await digest.analyze(store, ids, now_ms()) == len(ids)
        assert all([await store.digest(sid) for sid in ids])
        await store.sessions(include_empty=True)
        _reports(db)
        before = snapshot(db)
        con.execute("UPDATE files SET adapter_version = 0")
        con.commit()
        con.close()
        redone = await renormalize(store, REGISTRY)
        assert redone.groups and not redone.skipped and not redone.retry
        assert snapshot(db) == before  # rebuilt from the raw lines: the same rows


def _reports(db: Path) -> None:
    con = open_reader(db)
    try:
        prices = bundled()[1]
        span = queries.bucket_span(con) or (0, 0)
        segments = offset_segments(span[0], span[1], UTC)
        for period in ("daily", "weekly", "monthly"):
            doc = period_report(queries.usage_by_day(con, segments, None, None), period, prices)
            assert all(v >= 0 for v in doc["totals"].values())
            assert not [e for e in doc[period] if e[next(iter(e))].startswith("1970")]
        session_report(queries.usage_by_session(con, None, None), prices, iso)
    finally:
        con.close()


@settings(
    max_examples=24,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_one_mutated_line_never_costs_the_others(data: st.DataObject) -> None:
    src = data.draw(st.sampled_from(CORPUS), label="file")
    first = data.draw(st.integers(0, max(len(src.lines) - 3, 0)), label="window")
    original = list(src.lines[first : first + WINDOW])
    at = data.draw(st.integers(0, len(original) - 1), label="line")
    lines = [*original]
    lines[at] = data.draw(mutated(original[at]), label="mutated")
    with tempfile.TemporaryDirectory(prefix="helix-fuzz-") as tmp:
        asyncio.run(_check(src, Path(tmp), original, lines, at))


def test_the_corpus_holds_every_adapter() -> None:
    """Every adapter of line files; a database's row lines are fuzzed at the adapter and
    through real databases in ``tests/test_sqlite_source.py``; an agent of whole JSON
    documents only (the classic Cline layout) has no lines to mutate one of."""
    lines = {
        a.name
        for a in REGISTRY
        if not a.tables and any(rel.endswith((".jsonl", ".md")) for _, rel in samples(a))
    }
    assert {s.adapter.name for s in CORPUS} == lines

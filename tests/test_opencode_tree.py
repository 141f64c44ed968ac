"""OpenCode's JSON storage tree, read a message with its parts (``helixd/sources/bundle.py``).

Golden numbers: the corpus session is counted by hand from its six files (one user text
part "Hello"; the assistant's message has a completed ``bash`` tool part and a text part
"Found 2 files."; no tokens); the two constructed sessions were written from the rows of
``tests/fixtures/opencode/opencode.db`` (``build_fixture.py``), so the tree must give
exactly the records the database gives for them (the database's golden test pins those).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.core.records import Parsed
from helixd.ingest.pipeline import Ingestor, discover
from helixd.sources import bundle
from helixd.sources.gate import Source
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES, sample_bytes

TREE = FIXTURES / "opencode_tree"
DB = FIXTURES / "opencode" / "opencode.db"
CONSTRUCTED = ("opencode:ses_helix_usage", "opencode:ses_helix_child")


def _parse_tree() -> list[Parsed]:
    adapter = adapter_named("opencode_tree")
    out = []
    for path in sorted(TREE.rglob("*.json")):
        rel = path.relative_to(TREE).as_posix()
        if adapter.matches(rel):
            data = sample_bytes(adapter, path)
            out.append(adapter.parse(Chunk(data, 0, True, FileContext(str(path), rel)), {}))
    return out


def _db_parsed() -> Parsed:
    adapter = adapter_named("opencode")
    return adapter.parse(
        Chunk(sample_bytes(adapter, DB), 0, True, FileContext(str(DB), "opencode.db")), {}
    )


def test_corpus_session_golden() -> None:
    events = [
        e for p in _parse_tree() for e in p.events if e.session_uid == "opencode:s_stage0_small"
    ]
    assert sorted((e.kind, e.key) for e in events) == [
        ("assistant_msg", "p_text_1"),
        ("tool_call", "p_tool_1"),
        ("tool_result", "p_tool_1:result"),
        ("user_msg", "p_user_1"),  # its role is its message's (message/…/m_user_small.json)
    ]
    by_key = {e.key: e for e in events}
    assert by_key["p_user_1"].body == "Hello"
    assert by_key["p_text_1"].body == "Found 2 files."


def test_constructed_sessions_give_the_records_of_the_database() -> None:
    tree = _parse_tree()
    db = _db_parsed()

    def events(parsed: list[Parsed]) -> Counter[tuple[str, str, str, str | None]]:
        return Counter(
            (e.session_uid, e.key, e.kind, e.body)
            for p in parsed
            for e in p.events
            if e.session_uid in CONSTRUCTED
        )

    def usage(parsed: list[Parsed]) -> set[tuple[object, ...]]:
        return {
            (u.dedup_key, u.session_uid, u.model, u.input_tokens, u.output_tokens)
            + (u.reasoning_tokens, u.cache_read_tokens, u.cache_write_5m_tokens)
            + (u.recorded_cost_usd,)
            for p in parsed
            for u in p.usage
            if u.session_uid in CONSTRUCTED
        }

    assert events(tree) == events([db]) and sum(events(tree).values()) > 10
    assert usage(tree) == usage([db]) and len(usage(tree)) == 3
    parents = {s.uid: s.parent_uid for p in tree for s in p.sessions if s.parent_uid}
    assert parents == {"opencode:ses_helix_child": "opencode:ses_helix_usage"}
    assert Counter(k for p in tree for k in p.unknown_types) == {"part:hologram": 1}
    assert not any(p.bad for p in tree)


async def _store_rows(db: Path) -> tuple[Counter[str], list[tuple[object, ...]]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sessions = Counter(
            uid for (uid,) in con.execute("SELECT uid FROM sessions WHERE agent = 'opencode'")
        )
        usage = con.execute(
            "SELECT u.key, s.uid, u.input, u.output, u.cache_read FROM usage u"
            " JOIN sessions s ON s.id = u.session_id ORDER BY u.key"
        ).fetchall()
    finally:
        con.close()
    return sessions, usage


def _events(db: Path) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT s.uid, e.ekey, e.kind, e.body FROM events e"
            " JOIN sessions s ON s.id = e.session_id WHERE s.uid IN (?, ?) ORDER BY 1, 2",
            CONSTRUCTED,
        ).fetchall()
    finally:
        con.close()


async def test_a_session_in_the_tree_and_the_database_is_one_session(tmp_path: Path) -> None:
    """OpenCode migrated its tree into ``opencode.db`` and kept the files: both are read,
    in either order, and the store holds each session once, each message's tokens once,
    and the events the database alone gives."""
    data = tmp_path / "opencode"
    data.mkdir()
    shutil.copy(DB, data / "opencode.db")
    shutil.copytree(TREE, data / "storage", ignore=shutil.ignore_patterns("*.py", "*.md"))
    db_only = tmp_path / "db.db"
    async with await Store.open(db_only) as store:
        await Ingestor(store).backfill(discover([(adapter_named("opencode"), data)]))
    pairs = [(adapter_named("opencode"), data), (adapter_named("opencode_tree"), data / "storage")]
    for order, name in ((pairs, "ab.db"), (pairs[::-1], "ba.db")):
        async with await Store.open(tmp_path / name) as store:
            for pair in order:
                await Ingestor(store).backfill(discover([pair]))
        sessions, usage = await _store_rows(tmp_path / name)
        assert sessions["opencode:ses_helix_usage"] == 1
        assert sessions["opencode:ses_helix_child"] == 1
        assert usage == (await _store_rows(db_only))[1] and len(usage) == 3
        assert _events(tmp_path / name) == _events(db_only)


def _write(path: Path, obj: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2))


def _big_session(root: Path, messages: int) -> None:
    sid = "ses_big"
    _write(root / "session" / "proj" / f"{sid}.json", {"id": sid, "directory": "/w", "time": {}})
    for i in range(messages):
        mid = f"msg_{i:05d}"
        role = "user" if i % 2 == 0 else "assistant"
        _write(
            root / "message" / sid / f"{mid}.json",
            {"id": mid, "sessionID": sid, "role": role, "time": {"created": 1_760_000_000 + i}},
        )
        part = {"id": f"prt_{i:05d}a", "sessionID": sid, "messageID": mid, "type": "text"}
        _write(root / "part" / mid / f"prt_{i:05d}a.json", {**part, "text": f"turn {i}"})


async def test_a_part_appended_reads_its_message_alone(tmp_path: Path) -> None:
    """A session of 1 000 messages: a part added to one message re-reads that message and
    its parts (a few hundred bytes), not the session; with nothing new nothing is read."""
    root = tmp_path / "storage"
    _big_session(root, 1000)
    tree = adapter_named("opencode_tree")
    async with await Store.open(tmp_path / "h.db") as store:
        first = await Ingestor(store).backfill(discover([(tree, root)]))
        mid = "msg_00501"
        extra = {"id": "prt_00501b", "sessionID": "ses_big", "messageID": mid, "type": "text"}
        _write(root / "part" / mid / "prt_00501b.json", {**extra, "text": "one more"})
        second = await Ingestor(store).backfill(discover([(tree, root)]))
        third = await Ingestor(store).backfill(discover([(tree, root)]))
        rows = await store.db.execute("SELECT kind, body FROM events WHERE body = 'one more'", ())
    assert first.files_read == 1001 and first.events == 1000
    assert second.files_read == 1 and second.events == 2  # the message's two parts
    assert 0 < second.bytes_read < 1_000 < first.bytes_read // 100
    assert third.files_read == 0 and third.bytes_read == 0
    assert [tuple(r) for r in rows] == [("assistant_msg", "one more")]


def test_never_reads_outside_its_root(tmp_path: Path) -> None:
    """A parts directory that is a link, and a part that is a link, are not followed."""
    outside = tmp_path / "outside"
    _write(outside / "p.json", {"id": "p_secret", "type": "text", "text": "outside"})
    root = tmp_path / "storage"
    _write(root / "message" / "s" / "m1.json", {"id": "m1", "sessionID": "s", "role": "user"})
    _write(root / "message" / "s" / "m2.json", {"id": "m2", "sessionID": "s", "role": "user"})
    (root / "part").mkdir()
    os.symlink(outside, root / "part" / "m1")
    (root / "part" / "m2").mkdir()
    os.symlink(outside / "p.json", root / "part" / "m2" / "p.json")
    tree = adapter_named("opencode_tree")
    for mid in ("m1", "m2"):
        rel = f"message/s/{mid}.json"
        src = Source(tree, str(root), str(root / rel), rel)
        data, st = bundle.read_bundle(src)
        assert b"outside" not in data and data.count(b"\n") == 1
        assert bundle.stat_bundle(src) == st


async def test_secrets_in_a_part_are_masked_in_the_store(tmp_path: Path) -> None:
    """Every planted secret family in a part's text and a tool's output: none reaches the
    raw lines or the events (the bundle's lines are redacted like any file's)."""
    from tests.db_snapshot import snapshot
    from tests.secret_corpus import FAMILIES

    root = tmp_path / "storage"
    _write(root / "message" / "s" / "m1.json", {"id": "m1", "sessionID": "s", "role": "user"})
    text = "\n".join(t for t, _ in FAMILIES.values())
    _write(root / "part" / "m1" / "p1.json", {"id": "p1", "type": "text", "text": text})
    out = {"status": "completed", "input": {"command": "env"}, "output": text}
    _write(root / "part" / "m1" / "p2.json", {"id": "p2", "type": "tool", "state": out})
    db = tmp_path / "h.db"
    async with await Store.open(db) as store:
        stats = await Ingestor(store).backfill(discover([(adapter_named("opencode_tree"), root)]))
    assert stats.events == 3 and stats.redactions > 0
    raw = b"".join(snapshot(db)["raw"].values())
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    bodies = "\n".join(str(r) for r in con.execute("SELECT summary, body FROM events"))
    con.close()
    needles = [n for _, ns in FAMILIES.values() for n in ns]
    assert needles and raw
    assert [n for n in needles if n.encode() in raw or n in bodies] == []


async def test_a_part_rewritten_at_its_size_with_an_older_mtime_is_seen(tmp_path: Path) -> None:
    """Issue 16: a bundle's stamp is exact.  A part rewritten in place at the same size,
    whose mtime stays older than another part's, changed neither the summed size nor the
    newest mtime the stamp used to be: the edit went unseen.  Now it is re-read."""
    root = tmp_path / "storage"
    _write(root / "message" / "s" / "m1.json", {"id": "m1", "sessionID": "s", "role": "user"})
    first = root / "part" / "m1" / "a.json"
    second = root / "part" / "m1" / "b.json"
    _write(first, {"id": "a", "sessionID": "s", "messageID": "m1", "type": "text", "text": "AAAA"})
    _write(second, {"id": "b", "sessionID": "s", "messageID": "m1", "type": "text", "text": "B"})
    os.utime(first, ns=(1_000_000_000_000, 1_000_000_000_000))
    os.utime(second, ns=(2_000_000_000_000, 2_000_000_000_000))  # the newest member
    tree = adapter_named("opencode_tree")
    rel = "message/s/m1.json"
    src = Source(tree, str(root), str(root / rel), rel)
    before = bundle.stat_bundle(src)
    async with await Store.open(tmp_path / "h.db") as store:
        await Ingestor(store).backfill(discover([(tree, root)]))
        _write(
            first, {"id": "a", "sessionID": "s", "messageID": "m1", "type": "text", "text": "ZZZZ"}
        )
        os.utime(first, ns=(1_500_000_000_000, 1_500_000_000_000))  # still older than b's
        after = bundle.stat_bundle(src)
        again = await Ingestor(store).backfill(discover([(tree, root)]))
        rows = await store.db.execute("SELECT body FROM events WHERE body LIKE 'ZZZZ'", ())
        found = [tuple(r) for r in rows]
    assert after is not None and before is not None and after.size == before.size
    assert after != before and bundle.read_bundle(src)[1] == after
    assert again.files_read == 1 and found == [("ZZZZ",)]


def test_a_part_is_admitted_as_its_message_within_the_root(tmp_path: Path) -> None:
    """The daemon's gate maps a part's path to its message's source (the session named in
    the part, the message by its directory); a part that is a link, or names a session
    outside ``message/``, is refused, never followed."""
    import pytest

    from helixd.sources.gate import MEMBER_UNNAMED, OUTSIDE, Gate, Refused

    root = tmp_path / "storage"
    part = {"id": "p1", "sessionID": "s", "messageID": "m1", "type": "text", "text": "x"}
    _write(root / "part" / "m1" / "p1.json", part)
    _write(root / "part" / "m1" / "bad.json", {**part, "sessionID": ".."})
    _write(root / "part" / "m1" / "other.json", {**part, "messageID": "m2"})
    _write(tmp_path / "outside.json", part)
    os.symlink(tmp_path / "outside.json", root / "part" / "m1" / "link.json")
    gate = Gate([(adapter_named("opencode_tree"), root)])
    assert gate.claims(str(root / "part" / "m1" / "p1.json"))
    src = gate.admit(str(root / "part" / "m1" / "p1.json"))
    assert (src.rel, src.path) == ("message/s/m1.json", str(root / "message" / "s" / "m1.json"))
    expected = {"bad.json": MEMBER_UNNAMED, "other.json": MEMBER_UNNAMED, "link.json": OUTSIDE}
    for name, reason in expected.items():
        with pytest.raises(Refused) as refused:
            gate.admit(str(root / "part" / "m1" / name))
        assert refused.value.reason == reason


def test_a_part_names_its_message_when_big_and_never_through_an_unsafe_id(tmp_path: Path) -> None:
    """A part over the gate's 64 KiB head (a big tool output) still names its message from
    the ids OpenCode writes first; a session id with a NUL, a separator or ``..`` names
    none (refused quietly as a member, never a failed group)."""
    import pytest

    from helixd.sources.gate import MEMBER_HEAD, MEMBER_UNNAMED, Gate, Refused

    root = tmp_path / "storage"
    big = {"id": "p1", "sessionID": "ses_a", "messageID": "m1", "type": "text"}
    _write(root / "part" / "m1" / "p1.json", {**big, "text": "x" * (MEMBER_HEAD + 5000)})
    gate = Gate([(adapter_named("opencode_tree"), root)])
    assert gate.admit(str(root / "part" / "m1" / "p1.json")).rel == "message/ses_a/m1.json"
    for i, sid in enumerate(("ses\x00a", "a/b", "..", "ses a", "")):
        _write(root / "part" / "m1" / f"u{i}.json", {**big, "sessionID": sid, "text": "y"})
        with pytest.raises(Refused) as refused:
            gate.admit(str(root / "part" / "m1" / f"u{i}.json"))
        assert refused.value.reason == MEMBER_UNNAMED, sid


def _tree_message(root: Path, texts: list[str], garbage: bool) -> None:
    sid, mid = "ses_c", "msg_c1"
    _write(root / "session" / "proj" / f"{sid}.json", {"id": sid, "directory": "/w", "time": {}})
    message = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": 1_760_000_000}}
    _write(root / "message" / sid / f"{mid}.json", message)
    for i, text in enumerate(texts):
        part = {"id": f"prt_{i}", "sessionID": sid, "messageID": mid, "type": "text"}
        _write(root / "part" / mid / f"prt_{i}.json", {**part, "text": text})
    if garbage:
        (root / "part" / mid / "prt_z.json").write_text('{"id": "prt_z", "sessionID": "ses_c", ')


async def _file_counts(store: Store) -> list[tuple[object, ...]]:
    rows = await store.db.execute(
        "SELECT path, lines, bad_lines, unknown_records, redactions, raw_bytes FROM files"
        " WHERE path LIKE '%/message/%' ORDER BY path",
        (),
    )
    return [tuple(r) for r in rows]


async def test_parts_changed_together_read_their_message_once_with_a_clean_runs_counts(
    tmp_path: Path,
) -> None:
    """The daemon's path: a message and its parts changed together are one source read
    once, and a bundle read again whole (a part rewritten) keeps the counters a clean
    first read of the final files gives — lines, bad lines, raw bytes — not their sum."""
    from helixd.sources.gate import Gate

    root = tmp_path / "storage"
    _tree_message(root, ["one", "two", "three"], garbage=True)
    tree = adapter_named("opencode_tree")
    gate = Gate([(tree, root)])
    members = sorted(str(p) for p in (root / "part" / "msg_c1").iterdir())
    async with await Store.open(tmp_path / "live.db") as store:
        message = str(root / "message" / "ses_c" / "msg_c1.json")
        for changed, rewrite in (
            ([message, *members], None),
            (members[1:2], "two again"),  # one part rewritten: its bundle is read whole
            (members[:1], "two, a third time"),
        ):
            if rewrite is not None:
                _tree_message(root, ["one", rewrite, "three!"], garbage=True)
            sources, refused = gate.admit_all(changed)
            assert len(sources) == 1 and not refused
            known = await store.cursors_for([s.path for s in sources])
            stats = await Ingestor(store).ingest_files([(s, known.get(s.path)) for s in sources])
            assert stats.files_read == 1
        live = await _file_counts(store)
    async with await Store.open(tmp_path / "clean.db") as store:
        await Ingestor(store).backfill(discover([(tree, root)]))
        clean = await _file_counts(store)
    assert live == clean and clean[0][2] == 1  # one bad line (the garbage part), not three


def test_the_bundle_stamp_digest_is_hashlibs_blake2b() -> None:
    """Stamps stored before (``hashlib.blake2b``) still match: an upgrade re-reads no bundle."""
    import hashlib

    from helixd.sources.bundle import blake2b_64

    mine = blake2b_64(b"120\x001700000000000000000\x00None\n")
    theirs = hashlib.blake2b(b"120\x001700000000000000000\x00None\n", digest_size=8)
    mine.update(b"p1.json\x0042\x001\n")
    theirs.update(b"p1.json\x0042\x001\n")
    assert mine.digest() == theirs.digest()

"""Re-normalization: rows an older adapter version produced are rebuilt from the stored raw
lines, with the source files gone, and equal a fresh ingest by the new version."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters import Adapter, Chunk
from helixd.adapters.registry import REGISTRY
from helixd.core.records import Parsed
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.renormalize import renormalize
from helixd.store.database import Store, now_ms
from tests.conftest import RunCli
from tests.daemon_helpers import Helixd, wait_for
from tests.db_snapshot import snapshot

FIXTURES = Path(__file__).parent / "fixtures"
QUERIES = ("pytest", "error", "file", "the", "session")


def old_version(adapter: Adapter) -> Adapter:
    """The adapter as its previous version behaved: tool results without a status or test
    counts, and every summary upper-cased (so every row differs from the new version's)."""

    def parse(chunk: Chunk, state: Any) -> Parsed:
        out = adapter.parse(chunk, state)
        events = [
            e._replace(status=None, tests=None, summary=e.summary.upper()) for e in out.events
        ]
        return out._replace(events=events)

    return adapter.replace(version=adapter.version - 1, parse=parse)


def lay_out(base: Path) -> list[tuple[Adapter, Path]]:
    """Every agent's fixtures under ``base/<agent>`` (one root per agent)."""
    pairs = []
    for adapter in REGISTRY:
        root = base / adapter.name
        shutil.copytree(
            FIXTURES / adapter.name, root, ignore=shutil.ignore_patterns("README*", "*.py")
        )
        pairs.append((adapter, root))
    return pairs


async def ingest_and_analyze(db: Path, pairs: list[tuple[Adapter, Path]]) -> None:
    async with await Store.open(db) as store:
        await Ingestor(store).backfill(discover(pairs))
        await digest.analyze(store, await store.analyzable_session_ids(), now_ms())


def digests_and_hits(db: Path) -> dict[str, Any]:
    con = sqlite3.connect(db)
    try:
        found: dict[str, Any] = {}
        for uid, json in con.execute(
            "SELECT s.uid, d.json FROM digests d JOIN sessions s ON s.id = d.session_id"
        ):
            d = digest_without_clock(json)
            found[uid] = d
        for q in QUERIES:
            found[f"search:{q}"] = sorted(
                con.execute(
                    "SELECT s.uid, e.seq FROM search JOIN search_docs d ON d.id = search.rowid"
                    " JOIN events e ON e.id = d.id JOIN sessions s ON s.id = e.session_id"
                    " WHERE search MATCH ?",
                    (q,),
                ).fetchall()
            )
        found["signals"] = sorted(
            con.execute(
                "SELECT s.uid, t.call_seq, t.status, t.duration_ms FROM tool_calls t"
                " JOIN sessions s ON s.id = t.session_id"
            ).fetchall()
        )
        found["versions"] = sorted(con.execute("SELECT agent, adapter_version FROM files"))
        return found
    finally:
        con.close()


def digest_without_clock(json: bytes) -> dict[str, Any]:
    d: dict[str, Any] = orjson.loads(json)
    d.pop("provisional", None)
    return d


def events_with_signals(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return sorted(
            con.execute(
                "SELECT s.uid, e.seq, e.ekey, e.kind, e.summary, e.status, e.test_framework,"
                " e.tests_passed, e.tests_failed, e.tests_skipped, e.lines_added, e.lines_removed"
                " FROM events e JOIN sessions s ON s.id = e.session_id"
            ).fetchall()
        )
    finally:
        con.close()


async def test_renormalize_from_raw_lines_equals_a_fresh_ingest(tmp_path: Path) -> None:
    pairs = lay_out(tmp_path / "src")
    old_pairs = [(old_version(a), root) for a, root in pairs]
    kept = tmp_path / "kept"
    shutil.copytree(tmp_path / "src", kept)

    old_db = tmp_path / "old" / "helix.db"
    await ingest_and_analyze(old_db, old_pairs)
    before = events_with_signals(old_db)
    assert before and all(row[5] is None for row in before)  # the old version: no status
    shutil.rmtree(tmp_path / "src")  # the sources are gone: only raw lines remain

    async with await Store.open(old_db) as store:
        stats = await renormalize(store, REGISTRY)
        assert stats.groups > 0 and not stats.skipped and not stats.retry
        await digest.analyze(store, await store.analyzable_session_ids(), now_ms())
        again = await renormalize(store, REGISTRY)
        assert again.groups == 0  # nothing is stale any more

    # A fresh ingest by the new version of the same files at the same paths.
    shutil.copytree(kept, tmp_path / "src")
    new_db = tmp_path / "new" / "helix.db"
    await ingest_and_analyze(new_db, pairs)

    assert events_with_signals(old_db) == events_with_signals(new_db)
    rebuilt, fresh = snapshot(old_db), snapshot(new_db)
    for table in ("sessions", "events", "usage", "bad_lines", "raw"):
        assert rebuilt[table] == fresh[table], table
    assert digests_and_hits(old_db) == digests_and_hits(new_db)
    statuses = {row[5] for row in events_with_signals(old_db) if row[3] == "tool_result"}
    assert {"success", "error"} <= statuses


async def test_evicted_sessions_are_skipped_and_keep_their_rows(tmp_path: Path) -> None:
    pairs = lay_out(tmp_path / "src")
    db = tmp_path / "helix.db"
    await ingest_and_analyze(db, [(old_version(a), root) for a, root in pairs])
    con = sqlite3.connect(db)
    sid, path = con.execute(
        "SELECT s.id, f.path FROM sessions s JOIN files f ON f.session_id = s.id"
        " WHERE s.agent = 'codex' ORDER BY s.id LIMIT 1"
    ).fetchone()
    # Stage-1 eviction of one session: its raw lines go, its events stay.
    con.execute(
        "DELETE FROM raw_blocks WHERE file_id IN (SELECT id FROM files WHERE path = ?)", (path,)
    )
    con.execute("UPDATE sessions SET evict_stage = 1 WHERE id = ?", (sid,))
    con.commit()
    kept_events = con.execute(
        "SELECT ekey, summary FROM events WHERE session_id = ? ORDER BY seq", (sid,)
    ).fetchall()
    con.close()

    async with await Store.open(db) as store:
        stats = await renormalize(store, REGISTRY)
        # Only what cannot be rebuilt is left: the next pass is one count, not a graph.
        again = await renormalize(store, REGISTRY)
    assert stats.groups > 0
    assert any("evicted" in s for s in stats.skipped)
    assert (again.groups, again.skipped) == (0, [])
    con = sqlite3.connect(db)
    try:
        assert (
            con.execute(
                "SELECT ekey, summary FROM events WHERE session_id = ? ORDER BY seq", (sid,)
            ).fetchall()
            == kept_events
        )
        versions = {a.name: a.version for a in REGISTRY}
        (version,) = con.execute(
            "SELECT adapter_version FROM files WHERE path = ?", (path,)
        ).fetchone()
        assert version == versions["codex"] - 1  # left as it was
        rebuilt = con.execute(
            "SELECT DISTINCT f.agent, f.adapter_version FROM files f WHERE f.agent = 'claude'"
        ).fetchall()
        assert rebuilt == [("claude", versions["claude"])]
    finally:
        con.close()


async def test_a_group_an_ingest_moved_meanwhile_is_not_written(tmp_path: Path) -> None:
    pairs = lay_out(tmp_path / "src")
    db = tmp_path / "helix.db"
    await ingest_and_analyze(db, [(old_version(a), root) for a, root in pairs])
    before = snapshot(db)
    async with await Store.open(db) as store:
        group = next(g for g in await store.renormalize_groups({"claude": 99}) if g.complete)
        c = group.cursors[0]
        assert c.file_id is not None
        moved = [(c.file_id, c.generation, c.offset - 1, 1)]  # as if an append had landed
        assert not await store.replay(group.session_ids, moved, [])
    assert snapshot(db) == before


@pytest.mark.parametrize("agent", [a.name for a in REGISTRY])
def test_every_adapter_declares_a_version(agent: str) -> None:
    adapter = next(a for a in REGISTRY if a.name == agent)
    # 2: tool results carry a status and test counts; adapters added later had them from 1
    first_four = ("claude", "codex", "gemini", "grok")
    assert adapter.version >= (2 if agent in first_four else 1)


async def test_the_daemon_renormalizes_in_the_background(
    home: Path, tmp_path: Path, daemon: Helixd
) -> None:
    """An old store, its sources gone: the daemon rebuilds it when idle, from raw lines."""
    src = home / ".claude" / "projects"
    shutil.copytree(FIXTURES / "claude" / "dagster-io__erk", src / "erk")
    claude = next(a for a in REGISTRY if a.name == "claude")
    await ingest_and_analyze(daemon.db, [(old_version(claude), src)])
    con = sqlite3.connect(daemon.db)
    uids = [r[0] for r in con.execute("SELECT uid FROM sessions WHERE agent = 'claude'")]
    con.close()
    assert uids
    shutil.rmtree(src / "erk")

    daemon.start()

    def rebuilt() -> bool:
        con = sqlite3.connect(daemon.db)
        try:
            versions = {r[0] for r in con.execute("SELECT adapter_version FROM files")}
            statuses = con.execute(
                "SELECT count(*) FROM events WHERE kind = 'tool_result' AND status IS NULL"
            ).fetchone()[0]
            return versions == {claude.version} and statuses == 0
        finally:
            con.close()

    wait_for(rebuilt, 30, "the daemon to re-normalize the old rows")
    versions = []
    for uid in uids:
        d = daemon.lookup(uid)
        assert d is not None and "tool_calls" in d  # digests rebuilt by the new version
        versions.append(d["source"]["adapter_version"])  # type: ignore[index]
    # (a session known only from other files' records owns no file: no version)
    assert set(versions) == {claude.version, None} and versions.count(claude.version) >= 5


async def test_the_cli_names_stale_files_and_renormalizes_them(
    home: Path, helixctl: RunCli
) -> None:
    src = home / ".claude" / "projects"
    shutil.copytree(FIXTURES / "claude" / "dagster-io__erk", src / "erk")
    claude = next(a for a in REGISTRY if a.name == "claude")
    db: Path = helixctl.db  # type: ignore[attr-defined]
    await ingest_and_analyze(db, [(old_version(claude), src)])

    hint = helixctl("ingest").stderr
    assert "read by an older adapter version" in hint and "helixctl renormalize" in hint
    doc = orjson.loads(helixctl("renormalize", "--json").stdout)
    assert doc["groups"] >= 7 and doc["bytes"] > 0 and doc["digests"] >= 7
    assert doc["skipped"] == [] and doc["retry"] == 0
    assert "older adapter version" not in helixctl("ingest").stderr
    again = orjson.loads(helixctl("renormalize", "--json").stdout)
    assert again["groups"] == 0


async def test_an_unreadable_raw_block_skips_its_group_only(tmp_path: Path) -> None:
    pairs = lay_out(tmp_path / "src")
    db = tmp_path / "helix.db"
    await ingest_and_analyze(db, [(old_version(a), root) for a, root in pairs])
    con = sqlite3.connect(db)
    (path,) = con.execute(
        "SELECT f.path FROM files f JOIN raw_blocks r ON r.file_id = f.id"
        " WHERE f.agent = 'codex' ORDER BY f.id LIMIT 1"
    ).fetchone()
    con.execute(
        "UPDATE raw_blocks SET data = x'00112233' WHERE file_id = (SELECT id FROM files"
        " WHERE path = ?)",
        (path,),
    )
    con.commit()
    con.close()
    async with await Store.open(db) as store:
        stats = await renormalize(store, REGISTRY)
    assert stats.groups > 0
    assert [s for s in stats.skipped if "unreadable raw lines" in s and path in s]
    con = sqlite3.connect(db)
    try:
        versions = dict(con.execute("SELECT path, adapter_version FROM files").fetchall())
    finally:
        con.close()
    codex = next(a for a in REGISTRY if a.name == "codex")
    assert versions[path] == codex.version - 1
    assert sum(v == codex.version for v in versions.values()) >= 1

"""Re-normalization racing the daemon's other jobs, and retries with parallel tool calls.

Found by a review of the issue-6 changes: each test failed before its fix (the comment on
each says what went wrong)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from helixd.adapters.registry import REGISTRY
from helixd.core.retention import Eviction
from helixd.core.signals import extract
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.renormalize import renormalize
from helixd.store.database import Store, now_ms
from tests.test_renormalize import FIXTURES, ingest_and_analyze, lay_out, old_version

GROK = next(a for a in REGISTRY if a.name == "grok")


def _count(db: Path, sql: str, *args: object) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute(sql, args).fetchone()[0])
    finally:
        con.close()


# Was: (helixd/store/renorm.py groups + helixd/store/writer.py Writer.replay/_clear):
# the group graph is built once per pass and ``replay`` only re-checks the cursors of the
# files that were in the group.  A file ingested meanwhile (the daemon's ingest runs
# between the awaits of the renormalize job) whose events join one of the group's sessions
# is not in ``expect``; ``_clear`` deletes every event of the session and the rebuild only
# re-parses the group's old files, so the new file's events are lost for good (its cursor
# says it was read).
async def test_events_of_a_file_ingested_during_renormalize_are_not_lost(tmp_path: Path) -> None:
    # A Grok session is a directory of several files; its events.jsonl appears (and is
    # ingested) while the renormalize pass is between its graph and the group's replay.
    root = tmp_path / "src"
    shutil.copytree(FIXTURES / "grok" / "constructed", root)
    (session_dir,) = [p for p in root.glob("*/*") if p.name.endswith("a001")]
    held_back = (session_dir / "events.jsonl").read_bytes()
    (session_dir / "events.jsonl").unlink()
    db = tmp_path / "helix.db"
    await ingest_and_analyze(db, [(old_version(GROK), root)])
    lifecycle = (
        "SELECT count(*) FROM events e JOIN files f ON f.id = e.file_id"
        " WHERE f.path LIKE '%events.jsonl'"
    )
    async with await Store.open(db) as store:
        real_replay = store.replay
        ingested: list[int] = []

        async def replay_after_an_ingest(*args: object) -> bool:
            # the daemon's ingest lands between the graph and the group's transaction
            if not ingested:
                (session_dir / "events.jsonl").write_bytes(held_back)
                await Ingestor(store).backfill(discover([(GROK, root)]))
                ingested.append(_count(db, lifecycle))
                assert ingested[0] > 0
            return await real_replay(*args)  # type: ignore[arg-type]

        store.replay = replay_after_an_ingest  # type: ignore[method-assign]
        calls: list[object] = []

        async def counted(*args: object) -> bool:
            calls.append(args)
            return await replay_after_an_ingest(*args)

        store.replay = counted  # type: ignore[method-assign]
        stats = await renormalize(store, REGISTRY)
        # the moved group is refused, then taken again at once from a fresh graph, whole
        assert stats.groups >= 1 and stats.retry == 0 and len(calls) == stats.groups + 1
        assert _count(db, lifecycle) == ingested[0]
        store.replay = real_replay  # type: ignore[method-assign]
        again = await renormalize(store, REGISTRY)
        assert again.groups == 0 and again.retry == 0
    assert _count(db, lifecycle) == ingested[0]
    assert _count(db, "SELECT count(*) FROM files WHERE adapter_version < ?", GROK.version) == 0


# Was: (helixd/renormalize.py renormalize/_replay_group, helixd/store/renorm.py groups):
# ``group.complete`` (no session evicted, raw lines whole) is decided when the graph is
# built, never re-checked in ``Writer.replay``.  The evict job runs on the same loop; a
# stage-1 eviction (drops raw lines, KEEPS events) landing before the group's raw lines are
# read leaves ``stored_raw`` empty, the file is replayed as an "empty file" (its
# cursor/offset did not move, so ``expect`` passes) and ``_clear`` deletes every event of
# the session: Tier-1 events retention meant to keep are destroyed.
async def test_a_stage1_eviction_during_renormalize_keeps_the_sessions_events(
    tmp_path: Path,
) -> None:
    pairs = lay_out(tmp_path / "src")
    db = tmp_path / "helix.db"
    await ingest_and_analyze(db, [(old_version(a), root) for a, root in pairs])
    con = sqlite3.connect(db)
    sid, uid, fid = con.execute(
        "SELECT s.id, s.uid, f.id FROM sessions s JOIN files f ON f.session_id = s.id"
        " WHERE s.agent = 'codex' AND s.events > 0 ORDER BY s.id LIMIT 1"
    ).fetchone()
    con.close()
    before = _count(db, "SELECT count(*) FROM events WHERE session_id = ?", sid)
    assert before > 0
    async with await Store.open(db) as store:
        real_stored_raw = store.stored_raw

        async def evict_first(file_id: int):  # type: ignore[no-untyped-def]
            if file_id == fid:  # the evict job runs while the renormalize job awaits
                done = await store.evict([Eviction(sid, uid, "budget", 1, 0, None)], now_ms())
                assert done
            return await real_stored_raw(file_id)

        store.stored_raw = evict_first  # type: ignore[method-assign]
        await renormalize(store, REGISTRY)
    assert _count(db, "SELECT evict_stage FROM sessions WHERE id = ?", sid) == 1
    assert _count(db, "SELECT count(*) FROM events WHERE session_id = ?", sid) == before


def _row(seq, kind, tool=None, call_id=None, summary=None, status=None):  # type: ignore[no-untyped-def]
    # SIGNAL_COLUMNS order
    return (
        seq,
        1000 + seq,
        kind,
        tool,
        call_id,
        summary,
        None,
        int(status == "error"),
        status,
        None,
        None,
        None,
        None,
        0,
        0,
    )


# Was: (helixd/signals.py _Extraction.tool_result): the failed call a retry must repeat
# is taken as ``self.last_call`` (the last call *made*), not the call the failed result
# answers (``call_of(row)``).  With parallel tool calls (Claude issues several tool_use
# blocks, then their results) the wrong call is blamed: here B succeeded and A failed, yet
# repeating B is counted as a retry of B and repeating A is not a retry at all.
def test_retry_points_at_the_call_whose_result_failed() -> None:
    rows = [
        _row(0, "tool_call", "Read", "A", "a.py"),
        _row(1, "tool_call", "Bash", "B", "make"),
        _row(2, "tool_result", "Bash", "B", status="success"),
        _row(3, "tool_result", "Read", "A", status="error"),
        _row(4, "tool_call", "Read", "C", "a.py"),  # the failed Read a.py, again
    ]
    sig = extract(rows)
    retries = [(m.seq, m.ref_seq) for m in sig.markers if m.kind == "retry"]
    assert retries == [(4, 0)]


def test_repeating_a_call_that_succeeded_is_not_a_retry() -> None:
    rows = [
        _row(0, "tool_call", "Read", "A", "a.py"),
        _row(1, "tool_call", "Bash", "B", "make"),
        _row(2, "tool_result", "Bash", "B", status="success"),
        _row(3, "tool_result", "Read", "A", status="error"),
        _row(4, "tool_call", "Bash", "C", "make"),  # B succeeded: not a retry
    ]
    sig = extract(rows)
    assert [m for m in sig.markers if m.kind == "retry"] == []


async def test_a_file_whose_current_generation_is_empty_keeps_its_cursor(tmp_path: Path) -> None:
    """A file replaced by an empty one (generation 1, nothing stored yet) must not get its
    older generation's cursor back from a rebuild."""
    root = tmp_path / "src"
    project = root / "p"
    project.mkdir(parents=True)
    claude = next(a for a in REGISTRY if a.name == "claude")
    source = FIXTURES / "claude" / "d-kimuson__claude-code-viewer"
    target = project / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    shutil.copy(source / target.name, target)
    db = tmp_path / "helix.db"
    await ingest_and_analyze(db, [(old_version(claude), root)])
    target.write_bytes(b"")  # replaced: read again from 0 as a new generation
    await ingest_and_analyze(db, [(old_version(claude), root)])
    row = "SELECT generation, offset FROM files WHERE path = ?"
    con = sqlite3.connect(db)
    before = con.execute(row, (str(target),)).fetchone()
    con.close()
    assert before == (1, 0)
    async with await Store.open(db) as store:
        stats = await renormalize(store, REGISTRY)
    assert stats.groups == 1
    con = sqlite3.connect(db)
    try:
        assert con.execute(row, (str(target),)).fetchone() == before
        (version,) = con.execute("SELECT adapter_version FROM files").fetchone()
        assert version == claude.version
    finally:
        con.close()


async def test_a_change_committed_while_a_digest_is_built_is_analyzed_again(tmp_path: Path) -> None:
    """The analyze pass stamps ``analyzed_at`` with the time it read the facts: an ingest
    landing between the read and the save leaves the session to analyze again."""
    from helixd.ingest import digest

    root = tmp_path / "src" / "p"
    root.mkdir(parents=True)
    claude = next(a for a in REGISTRY if a.name == "claude")
    name = "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    lines = (FIXTURES / "claude" / "d-kimuson__claude-code-viewer" / name).read_bytes()
    head, tail = lines.splitlines(keepends=True)[:5], lines.splitlines(keepends=True)[5:]
    (root / name).write_bytes(b"".join(head))
    pairs = [(claude, root.parent)]
    async with await Store.open(tmp_path / "helix.db") as store:
        await Ingestor(store).backfill(discover(pairs))
        real = store.digest_facts

        async def read_then_ingest(ids):  # type: ignore[no-untyped-def]
            facts = await real(ids)
            with (root / name).open("ab") as f:  # lines arrive while the digest is built
                f.write(b"".join(tail))
            await Ingestor(store).backfill(discover(pairs))
            return facts

        store.digest_facts = read_then_ingest  # type: ignore[method-assign]
        ids = await store.sessions_to_analyze(now_ms(), 60_000)
        await digest.analyze(store, ids, now_ms())
        store.digest_facts = real  # type: ignore[method-assign]
        assert await store.sessions_to_analyze(now_ms(), 60_000) == ids


async def test_event_ids_are_never_given_twice(tmp_path: Path) -> None:
    """Index entries outlive their events (eviction): a new event never takes the id of
    one that was deleted, even the highest."""
    pairs = lay_out(tmp_path / "src")
    db = tmp_path / "helix.db"
    first = [(a, r) for a, r in pairs if a.name == "claude"]
    await ingest_and_analyze(db, first)
    con = sqlite3.connect(db)
    top = con.execute("SELECT max(id) FROM events").fetchone()[0]
    floor = con.execute("SELECT value FROM meta WHERE key = 'event_id_floor'").fetchone()[0]
    assert int(floor) == top
    con.execute("DELETE FROM events WHERE id > ?", (top - 50,))  # as stage 2 would
    con.commit()
    con.close()
    await ingest_and_analyze(db, [(a, r) for a, r in pairs if a.name == "codex"])
    con = sqlite3.connect(db)
    try:
        (low,) = con.execute(
            "SELECT min(e.id) FROM events e JOIN sessions s ON s.id = e.session_id"
            " WHERE s.agent = 'codex'"
        ).fetchone()
    finally:
        con.close()
    assert low > top

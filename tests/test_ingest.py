"""Ingest end to end over real files in temp dirs and a real SQLite store: incremental
reads, idempotence, replaced/truncated/renamed/deleted sources, and bad input."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from helixd.adapters.declared import claude
from helixd.ingest import digest, groupwriter, pipeline
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.store.database import Batch, Store, now_ms
from tests.db_snapshot import raw_of, snapshot

SID = "11111111-2222-4333-8444-555555555555"


def record(n: int, kind: str = "user", text: str = "hello", **extra: object) -> bytes:
    obj: dict[str, object] = {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": SID,
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}.000Z",
        "cwd": "/work/proj",
        "message": {"role": kind, "content": text},
        **extra,
    }
    if kind == "assistant":
        obj["message"] = {
            "role": "assistant",
            "id": f"msg_{n}",
            "model": "claude-x",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 10, "output_tokens": n},
        }
        obj["requestId"] = f"req_{n}"
    return orjson.dumps(obj) + b"\n"


async def ingest(store: Store, root: Path, **kw: int) -> IngestStats:
    stats = await Ingestor(store, **kw).backfill(discover([(claude.ADAPTER, root)]))
    await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
    return stats


def session_file(home: Path, name: str = SID) -> Path:
    d = home / ".claude" / "projects" / "-work-proj"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{name}.jsonl"


async def count(store: Store, sql: str, *args: object) -> int:
    rows = await store.db.execute(sql, args)
    row = rows[0] if rows else None
    assert row is not None
    return int(row[0])


async def test_second_ingest_reads_nothing_and_changes_nothing(store: Store, home: Path) -> None:
    f = session_file(home)
    f.write_bytes(b"".join(record(i, "user" if i % 2 == 0 else "assistant") for i in range(20)))
    root = home / ".claude/projects"
    first = await ingest(store, root)
    before = snapshot(store.path)
    second = await ingest(store, root)
    assert first.bytes_read == f.stat().st_size
    assert second.bytes_read == 0 and second.files_read == 0
    assert snapshot(store.path) == before


async def test_appended_lines_are_read_incrementally(store: Store, home: Path) -> None:
    f = session_file(home)
    f.write_bytes(record(0) + record(1, "assistant"))
    root = home / ".claude/projects"
    await ingest(store, root)
    size = f.stat().st_size
    with f.open("ab") as fh:
        fh.write(record(2) + record(3, "assistant"))
    stats = await ingest(store, root)
    assert stats.bytes_read == f.stat().st_size - size
    assert await count(store, "SELECT count(*) FROM events WHERE kind='user_msg'") == 2
    assert await count(store, "SELECT max(seq) FROM events") == 3
    assert await count(store, "SELECT count(*) FROM events WHERE parent_seq IS NOT NULL") == 3


async def test_a_partial_line_is_read_once_when_completed(store: Store, home: Path) -> None:
    f = session_file(home)
    line = record(1)
    f.write_bytes(record(0) + line[:30])
    root = home / ".claude/projects"
    await ingest(store, root)
    assert await count(store, "SELECT count(*) FROM events") == 1
    with f.open("ab") as fh:
        fh.write(line[30:])
    await ingest(store, root)
    assert await count(store, "SELECT count(*) FROM events") == 2


async def test_final_line_without_newline_counts_once_after_newline(
    store: Store, home: Path
) -> None:
    f = session_file(home)
    f.write_bytes(record(0) + record(1, "assistant").rstrip(b"\n"))
    root = home / ".claude/projects"
    await ingest(store, root)
    assert await count(store, "SELECT count(*) FROM events") == 2
    with f.open("ab") as fh:
        fh.write(b"\n" + record(2))
    await ingest(store, root)
    assert await count(store, "SELECT count(*) FROM events") == 3
    assert await count(store, "SELECT count(*) FROM usage") == 1


async def test_truncated_and_rewritten_file_adds_no_duplicates(store: Store, home: Path) -> None:
    f = session_file(home)
    f.write_bytes(b"".join(record(i) for i in range(10)))
    root = home / ".claude/projects"
    await ingest(store, root)
    f.write_bytes(b"".join(record(i) for i in range(3)))  # shrank: same head, fewer lines
    stats = await ingest(store, root)
    assert stats.replaced == 1
    assert await count(store, "SELECT count(*) FROM events") == 10  # memory is kept
    assert await count(store, "SELECT generation FROM files") == 1
    with f.open("ab") as fh:
        fh.write(b"".join(record(i) for i in range(3, 12)))
    await ingest(store, root)
    assert await count(store, "SELECT count(*) FROM events") == 12


async def test_replaced_file_under_the_same_name_is_read_from_zero(
    store: Store, home: Path
) -> None:
    f = session_file(home)
    f.write_bytes(b"".join(record(i, text="old") for i in range(5)))
    root = home / ".claude/projects"
    await ingest(store, root)
    tmp = f.with_suffix(".tmp")
    tmp.write_bytes(record(100, text="new") + b"".join(record(i, text="old") for i in range(5)))
    os.replace(tmp, f)
    stats = await ingest(store, root)
    assert stats.replaced == 1
    assert await count(store, "SELECT count(*) FROM events") == 6
    assert await count(store, "SELECT count(*) FROM events WHERE body='new'") == 1


async def test_renamed_file_keeps_its_cursor(store: Store, home: Path) -> None:
    f = session_file(home)
    f.write_bytes(b"".join(record(i) for i in range(5)))
    root = home / ".claude/projects"
    await ingest(store, root)
    moved = f.with_name("moved.jsonl")
    f.rename(moved)
    stats = await ingest(store, root)
    assert stats.bytes_read == 0
    assert await count(store, "SELECT count(*) FROM files") == 1
    rows = await store.db.execute("SELECT path FROM files")
    assert (rows[0] if rows else None) == (str(moved),)


async def test_deleted_source_keeps_every_row(store: Store, home: Path) -> None:
    f = session_file(home)
    f.write_bytes(b"".join(record(i) for i in range(5)))
    root = home / ".claude/projects"
    await ingest(store, root)
    before = await count(store, "SELECT count(*) FROM events")
    f.unlink()
    stats = await ingest(store, root)
    assert stats.files_gone == 1
    assert await count(store, "SELECT count(*) FROM events") == before
    assert await count(store, "SELECT count(*) FROM files WHERE gone_at IS NOT NULL") == 1
    assert await count(store, "SELECT count(*) FROM digests") == 1


async def test_odd_files_never_stop_an_ingest(store: Store, home: Path) -> None:
    root = home / ".claude/projects"
    session_file(home, "empty").write_bytes(b"")
    session_file(home, "summaries").write_bytes(
        b'{"type":"summary","summary":"Fixing tests","leafUuid":"x"}\n' * 3
    )
    session_file(home, "bad").write_bytes(
        record(0) + b"{broken json\n" + b'{"type":"user","message":{"content":"caf\xe9"},'
        b'"uuid":"b1","timestamp":"2026-01-01T00:00:00Z"}\n' + record(2)
    )
    stats = await ingest(store, root)
    assert stats.bad_lines == 1
    assert await count(store, "SELECT count(*) FROM sessions WHERE messages > 0") == 1
    rows = await store.sessions()
    assert [r["uid"] for r in rows] == ["claude:bad"]
    assert await count(store, "SELECT count(*) FROM events WHERE body LIKE 'caf%'") == 1
    again = await ingest(store, root)
    assert again.files_read == 0


async def test_a_50_mb_line_is_parsed(store: Store, home: Path) -> None:
    f = session_file(home)
    big = "x" * (50 * 1024 * 1024)
    f.write_bytes(record(0) + record(1, text=big) + record(2))
    stats = await ingest(store, home / ".claude/projects")
    assert stats.bad_lines == 0
    assert await count(store, "SELECT count(*) FROM events WHERE kind='user_msg'") == 3


async def test_a_line_over_the_cap_is_kept_raw_and_counted(store: Store, home: Path) -> None:
    f = session_file(home)
    huge = record(1, text="y" * 300_000)
    f.write_bytes(record(0) + huge + record(2))
    stats = await ingest(
        store, home / ".claude/projects", chunk_bytes=64 * 1024, max_line_bytes=128 * 1024
    )
    assert stats.bad_lines == 1
    assert await count(store, "SELECT count(*) FROM events WHERE kind='user_msg'") == 2
    assert raw_of(store.path, str(f)) == f.read_bytes()


async def test_secrets_are_redacted_before_storage(store: Store, home: Path) -> None:
    f = session_file(home)
    secret = "sk-ant-api03-" + "Z9" * 30
    f.write_bytes(record(0, text=f"my key is {secret}") + record(1, "assistant", text=secret))
    await ingest(store, home / ".claude/projects")
    snap = snapshot(store.path)
    assert secret.encode() not in snap["raw"][(str(f), 0)]
    assert not any(secret in repr(e) for e in snap["events"])
    assert await count(store, "SELECT redactions FROM files") == 2


def test_credential_files_are_never_claimed(home: Path) -> None:
    root = home / ".claude/projects"
    (home / ".claude/.credentials.json").write_text('{"token": "secret"}')
    (root / "p").mkdir()
    (root / "p/.credentials.json").write_text('{"token": "secret"}')
    (root / "p/notes.env").write_text("KEY=1")
    (root / "p/s.jsonl").write_bytes(record(0))
    found = [s.rel for s in discover([(claude.ADAPTER, root)])]
    assert found == ["p/s.jsonl"]


async def test_chunked_reads_equal_one_read(tmp_path: Path, home: Path) -> None:
    f = session_file(home)
    f.write_bytes(
        b"".join(
            record(i, "user" if i % 3 else "assistant", text="t" * (i * 37)) for i in range(200)
        )
    )
    root = home / ".claude/projects"
    a = await Store.open(tmp_path / "a.db")
    b = await Store.open(tmp_path / "b.db")
    try:
        await ingest(a, root)
        await ingest(b, root, chunk_bytes=4096, max_line_bytes=8192)
        sa, sb = snapshot(a.path), snapshot(b.path)
        for key in ("sessions", "events", "usage"):
            assert sa[key] == sb[key], key
    finally:
        await a.close()
        await b.close()


async def test_a_backfill_commits_whole_groups_not_each_piece(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backfill's writer waits until a transaction holds ``GROUP_BYTES`` of pieces (or
    the pieces end) rather than committing whatever one hand-over brought: each commit
    rewrites the pages it touches (usage pages by hashed key, indexes, summaries), so a
    commit per piece wrote ~30 % more bytes.  The rows are those of one read."""
    f = session_file(home)
    f.write_bytes(b"".join(record(i, "user" if i % 3 else "assistant", text="w" * 900)
                           for i in range(300)))  # fmt: skip
    monkeypatch.setattr(groupwriter, "GROUP_BYTES", 64 * 1024)
    root = home / ".claude/projects"
    a = await Store.open(tmp_path / "a.db")
    b = await Store.open(tmp_path / "b.db")
    commits: list[int] = []
    real = a.commit_many

    async def counted(batches: Sequence[Batch]) -> list[int]:
        commits.append(len(batches))
        return await real(batches)

    monkeypatch.setattr(a, "commit_many", counted)
    try:
        await ingest(a, root, chunk_bytes=8192, workers=0)
        pieces = sum(commits)
        assert pieces >= 30  # ~300 KB in 8 KiB pieces
        assert len(commits) <= f.stat().st_size // (64 * 1024) + 1
        await ingest(b, root)
        sa, sb = snapshot(a.path), snapshot(b.path)
        for key in ("sessions", "events", "usage"):
            assert sa[key] == sb[key], key
    finally:
        await a.close()
        await b.close()


async def test_a_backfill_queues_batches_by_bytes_while_a_group_commits(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the writer commits a group, the producer keeps queuing batches until they make
    ``QUEUE_BYTES`` (it goes on taking the parse workers' results and feeding them), not
    four batches whatever their size: four pieces of a small file were less work than one
    commit.  It waits beyond the bound, and what it queued is committed with its cursors."""
    f = session_file(home)
    f.write_bytes(b"".join(record(i, text="q" * 900) for i in range(200)))
    monkeypatch.setattr(groupwriter, "GROUP_BYTES", 16 * 1024)
    monkeypatch.setattr(groupwriter, "QUEUE_BYTES", 64 * 1024)
    a = await Store.open(tmp_path / "a.db")
    b = await Store.open(tmp_path / "b.db")
    gate = asyncio.Event()
    committing = asyncio.Event()
    real = a.commit_many

    async def held(batches: Sequence[Batch]) -> list[int]:
        committing.set()
        await gate.wait()
        return await real(batches)

    monkeypatch.setattr(a, "commit_many", held)
    writers: list[groupwriter.GroupWriter] = []

    class Seen(groupwriter.GroupWriter):  # the real writer, remembered to be looked at
        def __init__(self, store: Store, *, whole: bool = False) -> None:
            super().__init__(store, whole=whole)
            writers.append(self)

    monkeypatch.setattr(pipeline, "GroupWriter", Seen)
    try:
        task = asyncio.create_task(
            ingest(a, home / ".claude/projects", chunk_bytes=4096, workers=0)
        )
        await asyncio.wait_for(committing.wait(), 10)
        (writer,) = writers
        for _ in range(1000):  # the producer queues what the bound allows (a loaded machine:
            if writer.queued_bytes >= 48 * 1024:  # up to 10 s), then waits
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert writer.queue.qsize() > 4  # batches of ~4 KiB: more than four while it commits
        assert 48 * 1024 <= writer.queued_bytes <= (64 + 8) * 1024  # and no more than the bound
        assert not task.done()
        gate.set()
        await asyncio.wait_for(task, 30)
        await ingest(b, home / ".claude/projects")
        sa, sb = snapshot(a.path), snapshot(b.path)
        for key in ("sessions", "events", "usage"):
            assert sa[key] == sb[key], key
        assert await count(a, "SELECT offset FROM files") == f.stat().st_size
    finally:
        gate.set()
        await a.close()
        await b.close()


async def test_a_read_budget_stops_a_big_file_and_the_next_visit_continues(
    store: Store, home: Path
) -> None:
    """One huge file cannot starve the others: the daemon reads at most a budget per visit
    and comes back; the visits together give exactly one whole read."""
    f = session_file(home)
    f.write_bytes(b"".join(record(i, text="z" * 3000) for i in range(200)))
    src = next(iter(discover([(claude.ADAPTER, home / ".claude/projects")])))
    ingestor = Ingestor(store, chunk_bytes=64 * 1024)
    visits = 0
    while True:
        visits += 1
        stats = await ingestor.ingest_file(src, await store.cursor_for(str(f)), budget=100_000)
        if not stats.more:
            break
        assert stats.bytes_read <= 100_000 + 64 * 1024
    assert visits >= 5
    assert await count(store, "SELECT count(*) FROM events") == 200
    assert await count(store, "SELECT offset FROM files") == f.stat().st_size

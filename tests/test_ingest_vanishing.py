"""Files that disappear between discovery and reading never stop an ingest (issue 2, item 7).

Agents delete and rotate their logs while Helix reads them.  ``discover`` lists files first
and ``Ingestor.backfill`` stats, opens and reads them afterwards, so a file can vanish in
each of those gaps.  Whatever the moment: the other files are read completely, nothing is
raised, and rows already stored for the vanished file stay.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from helixd.adapters.declared import claude
from helixd.ingest import digest, fileplan
from helixd.ingest.pipeline import Ingestor, IngestStats, Source, discover
from helixd.sources import tailer
from helixd.sources.tailer import FileStat
from helixd.store.database import Store, now_ms

SIDS = ("aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002")


def lines(sid: str, n: int, start: int = 0) -> bytes:
    """``n`` user/assistant records of session ``sid`` (one usage fact per assistant)."""
    out = []
    for i in range(start, start + n):
        obj: dict[str, object] = {
            "type": "user" if i % 2 == 0 else "assistant",
            "uuid": f"{sid[:8]}-{i}",
            "parentUuid": f"{sid[:8]}-{i - 1}" if i else None,
            "sessionId": sid,
            "timestamp": f"2026-03-01T10:00:{i % 60:02d}.000Z",
            "cwd": "/work/proj",
            "message": {"role": "user", "content": f"prompt {i}"},
        }
        if i % 2:
            obj["requestId"] = f"req_{sid[:8]}_{i}"
            obj["message"] = {
                "role": "assistant",
                "id": f"msg_{sid[:8]}_{i}",
                "model": "claude-x",
                "content": [{"type": "text", "text": f"answer {i}"}],
                "usage": {"input_tokens": 10, "output_tokens": i},
            }
        out.append(orjson.dumps(obj) + b"\n")
    return b"".join(out)


def project(home: Path) -> Path:
    root = home / ".claude" / "projects"
    (root / "-work-proj").mkdir(parents=True, exist_ok=True)
    return root


def write(root: Path, sid: str, data: bytes, append: bool = False) -> Path:
    path = root / "-work-proj" / f"{sid}.jsonl"
    with path.open("ab" if append else "wb") as f:
        f.write(data)
    return path


def sources(root: Path) -> list[Source]:
    return list(discover([(claude.ADAPTER, root)]))


async def backfill(store: Store, found: list[Source] | Iterator[Source]) -> IngestStats:
    stats = await Ingestor(store).backfill(found)
    await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
    return stats


async def scalar(store: Store, sql: str, *args: object) -> int:
    rows = await store.db.execute(sql, args)
    row = rows[0] if rows else None
    assert row is not None
    return int(row[0] or 0)


async def events_of(store: Store, sid: str) -> int:
    return await scalar(
        store,
        "SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id WHERE s.uid = ?",
        f"claude:{sid}",
    )


async def usage_of(store: Store, sid: str) -> int:
    return await scalar(
        store,
        "SELECT count(*) FROM usage u JOIN sessions s ON s.id = u.session_id WHERE s.uid = ?",
        f"claude:{sid}",
    )


async def test_a_new_file_deleted_after_discovery_is_skipped(store: Store, home: Path) -> None:
    root = project(home)
    keep = write(root, SIDS[0], lines(SIDS[0], 6))
    doomed = write(root, SIDS[1], lines(SIDS[1], 6))
    found = sources(root)
    assert {s.path for s in found} == {str(keep), str(doomed)}
    doomed.unlink()
    stats = await backfill(store, found)
    assert stats.files_seen == 2 and stats.files_read == 1 and not stats.errors
    assert stats.bytes_read == keep.stat().st_size
    assert await events_of(store, SIDS[0]) == 6 and await usage_of(store, SIDS[0]) == 3
    assert await scalar(store, "SELECT count(*) FROM files") == 1  # no row for what never was
    assert await scalar(store, "SELECT count(*) FROM sessions") == 1


async def test_a_file_with_a_cursor_deleted_before_it_is_stat_ed(store: Store, home: Path) -> None:
    """The file was ingested, then grew, then vanished after discovery and before
    ``backfill`` looked at it: its rows stay, the run goes on, and it is recorded as gone."""
    root = project(home)
    write(root, SIDS[0], lines(SIDS[0], 4))
    doomed = write(root, SIDS[1], lines(SIDS[1], 6))
    await backfill(store, sources(root))
    assert await events_of(store, SIDS[1]) == 6
    write(root, SIDS[0], lines(SIDS[0], 4, start=4), append=True)
    write(root, SIDS[1], lines(SIDS[1], 2, start=6), append=True)
    found = sources(root)
    doomed.unlink()
    stats = await backfill(store, found)
    assert not stats.errors and stats.files_gone == 1
    assert stats.bytes_read == len(lines(SIDS[0], 4, start=4))
    assert await events_of(store, SIDS[0]) == 8
    assert await events_of(store, SIDS[1]) == 6 and await usage_of(store, SIDS[1]) == 3
    assert await scalar(store, "SELECT count(*) FROM digests") == 2
    assert await scalar(store, "SELECT count(*) FROM files WHERE gone_at IS NOT NULL") == 1
    # The next run, which no longer discovers the file, changes nothing and counts it once.
    later = await backfill(store, sources(root))
    assert later.files_read == 0 and later.files_gone == 0
    assert await scalar(store, "SELECT count(*) FROM files WHERE gone_at IS NOT NULL") == 1
    assert await events_of(store, SIDS[1]) == 6


async def test_files_gone_counts_a_cursor_file_deleted_after_discovery(
    store: Store, home: Path
) -> None:
    root = project(home)
    write(root, SIDS[0], lines(SIDS[0], 4))
    doomed = write(root, SIDS[1], lines(SIDS[1], 6))
    await backfill(store, sources(root))
    found = sources(root)
    doomed.unlink()
    stats = await backfill(store, found)
    assert stats.files_gone == 1
    assert await scalar(store, "SELECT count(*) FROM files WHERE gone_at IS NOT NULL") == 1


async def test_a_cursor_file_deleted_between_the_stat_and_the_read(
    store: Store, home: Path
) -> None:
    """``backfill`` stats every source first, then reads them in turn: a file deleted in
    between is counted in ``files_gone`` and keeps its rows."""
    root = project(home)
    write(root, SIDS[0], lines(SIDS[0], 4))
    doomed = write(root, SIDS[1], lines(SIDS[1], 6))
    await backfill(store, sources(root))
    keep = write(root, SIDS[0], lines(SIDS[0], 2, start=4), append=True)
    write(root, SIDS[1], lines(SIDS[1], 2, start=6), append=True)
    found = sources(root)

    def stat_then_delete() -> Iterator[Source]:
        yield from found  # backfill stats each one as it is yielded ...
        doomed.unlink()  # ... and reads them only after the last

    stats = await backfill(store, stat_then_delete())
    assert stats.files_gone == 1 and not stats.errors
    assert stats.files_read == 1 and stats.bytes_read == len(lines(SIDS[0], 2, start=4))
    assert await events_of(store, SIDS[0]) == 6
    assert await events_of(store, SIDS[1]) == 6 and await usage_of(store, SIDS[1]) == 3
    assert await scalar(store, "SELECT count(*) FROM files WHERE gone_at IS NOT NULL") == 1
    assert keep.exists()


async def test_a_new_file_deleted_between_the_stat_and_the_read(store: Store, home: Path) -> None:
    root = project(home)
    keep = write(root, SIDS[0], lines(SIDS[0], 4))
    doomed = write(root, SIDS[1], lines(SIDS[1], 6))
    found = sources(root)

    def stat_then_delete() -> Iterator[Source]:
        yield from found
        doomed.unlink()

    stats = await backfill(store, stat_then_delete())
    assert stats.files_gone == 0 and not stats.errors
    assert stats.files_read == 1 and stats.bytes_read == keep.stat().st_size
    assert await scalar(store, "SELECT count(*) FROM files") == 1
    assert await events_of(store, SIDS[0]) == 4


async def test_a_file_deleted_between_the_last_stat_and_open_is_reported(
    store: Store, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The narrowest gap: the reader's own stat succeeds and ``open`` fails.  The failure is
    a warning in ``errors``; every other file is still read."""
    root = project(home)
    doomed = write(root, SIDS[0], lines(SIDS[0], 4))
    keep = write(root, SIDS[1], lines(SIDS[1], 6))
    real_stat = tailer.stat_file
    calls: dict[str, int] = {}

    def flaky_stat(path: str) -> FileStat | None:
        st = real_stat(path)
        calls[path] = calls.get(path, 0) + 1
        if path == str(doomed) and calls[path] == 2:  # backfill's stat, then the reader's
            os.unlink(path)
        return st

    monkeypatch.setattr(fileplan, "stat_file", flaky_stat)  # stat_source looks it up there
    stats = await backfill(store, sources(root))
    assert calls[str(doomed)] == 2
    assert len(stats.errors) == 1 and str(doomed) in stats.errors[0]
    assert stats.files_read == 1 and stats.bytes_read == keep.stat().st_size
    assert await events_of(store, SIDS[1]) == 6
    assert await events_of(store, SIDS[0]) == 0

"""A backlog parsed by worker processes (``helixd/ingest/parsepool.py``) gives exactly the
store an inline ingest gives: real files cut into many pieces (the adapter state carried
from piece to piece inside the worker), real corpus transcripts, a planted secret masked,
a partial last line left for later; and a small read never starts a process."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
import zstandard

from helixd.adapters import Chunk, FileContext
from helixd.adapters.declared import claude
from helixd.adapters.guard import parse_total
from helixd.ingest import digest, digest_parts
from helixd.ingest.parsepool import ParsePool, PieceJob, parse_piece
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.store.batch import compress_raw, prepare_event
from helixd.store.database import Batch, Store, now_ms
from tests.db_snapshot import snapshot
from tests.secret_corpus import FAMILIES, enc
from tests.test_ingest import record, session_file

CORPUS = Path("/work/shared/corpus/claude")


def make_home(home: Path) -> list[bytes]:
    """Real transcripts, one long generated session with a secret inside, and a file whose
    last line is not finished yet; returns the secret's parts."""
    projects = home / ".claude" / "projects"
    for n, src in enumerate(sorted(CORPUS.rglob("*.jsonl"))[:12]):
        if "subagents" in src.parts:
            continue
        dest = projects / f"-corpus-{n}" / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    text, needles = FAMILIES["jwt"]
    lines = [
        record(n, "assistant" if n % 2 else "user", f"step {n} " + "x" * (n % 700))
        for n in range(1, 900)
    ]
    lines.insert(450, record(450, text="token " + enc(text).decode()))
    path = session_file(home)
    path.write_bytes(b"".join(lines))
    partial = session_file(home, "22222222-2222-4333-8444-555555555555")
    partial.write_bytes(record(1) + record(2, "assistant")[:-20])
    return [n.encode() for n in needles]


NOW = now_ms()


async def ingest(db: Path, home: Path, **kw: int) -> tuple[Ingestor, IngestStats]:
    """A backfill, then the digests, built by the parse workers when it started any (as
    ``helixctl ingest`` does)."""
    async with await Store.open(db) as store:
        ingestor = Ingestor(store, keep_pool=True, **kw)
        try:
            stats = await ingestor.backfill(discover([(claude.ADAPTER, home / ".claude/projects")]))
            ids = await store.session_ids_changed_since_analysis()
            table = digest.prices()
            builder = ingestor.digest_builder(db, table)
            await digest.analyze(store, ids, NOW, table=table, builder=builder)
        finally:
            await ingestor.close()
        assert await store.session_ids_changed_since_analysis() == []
    return ingestor, stats


def digests(db: Path) -> dict[str, tuple[int, int, bytes]]:
    """Each session's digest (provisional, schema version, JSON), by session uid."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT s.uid, d.provisional, d.schema_version, d.json FROM digests d"
            " JOIN sessions s ON s.id = d.session_id"
        )
        return {uid: (prov, version, bytes(js)) for uid, prov, version, js in rows}
    finally:
        con.close()


async def test_worker_processes_store_what_inline_parsing_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_parts, "PIPELINE_BATCH", 2)
    home = tmp_path / "home"
    needles = make_home(home)
    chunk = 16 << 10  # many pieces per file: the state travels with the file's pieces
    inline, inline_stats = await ingest(tmp_path / "inline.db", home, chunk_bytes=chunk, workers=0)
    pooled, pooled_stats = await ingest(
        tmp_path / "pool.db", home, chunk_bytes=chunk, workers=2, pool_min_bytes=0
    )
    assert inline.pieces_to_workers == 0
    assert pooled.pieces_to_workers > 20
    # the digests: built here after the inline ingest, by the workers after the pooled one
    # (in parts of 2 sessions, as far as they keep up: the rest built here meanwhile), byte for
    # byte the same
    assert inline.digest_parts_to_workers == 0
    assert pooled.digest_parts_to_workers >= 2
    built = digests(tmp_path / "pool.db")
    assert len(built) >= 5 and built == digests(tmp_path / "inline.db")
    timing = {"seconds": 0, "mb_per_s": 0}
    assert pooled_stats.as_dict() | timing == inline_stats.as_dict() | timing
    assert pooled_stats.redactions >= 1 and pooled_stats.events > 900
    got, want = snapshot(tmp_path / "pool.db"), snapshot(tmp_path / "inline.db")
    assert got == want
    stored = b"".join(got["raw"].values())
    assert not any(n in stored for n in needles)
    # the partial last line is not taken: completing it later adds it
    partial = session_file(home, "22222222-2222-4333-8444-555555555555")
    partial.write_bytes(record(1) + record(2, "assistant"))
    _, again = await ingest(tmp_path / "pool.db", home, workers=2, pool_min_bytes=0)
    assert again.events == 1


async def test_a_small_backlog_is_parsed_inline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_home(home)
    ingestor, stats = await ingest(tmp_path / "s.db", home, workers=2)  # default threshold
    assert stats.events > 900
    assert ingestor.pieces_to_workers == 0


def test_a_worker_sends_rows_not_events(tmp_path: Path) -> None:
    """The events' content travels once, as prepared rows (events and their payloads would
    cost as much again in pickling on both sides), and usage facts as plain tuples."""
    data = b"".join(record(n, "assistant" if n % 2 else "user", "y" * 500) for n in range(1, 40))
    ctx = FileContext(str(tmp_path / "s.jsonl"), "p/s.jsonl")
    done = parse_piece(PieceJob(1, "claude", data, 0, True, ctx, {}))
    assert done.rows is not None and len(done.rows) >= 39
    assert done.parsed.events == []
    inline = parse_total(claude.ADAPTER, Chunk(data, 0, True, ctx), {})
    assert done.rows == [prepare_event(ev) for ev in inline.events]
    assert done.parsed.usage == [] and len(done.usage) >= 19  # facts as plain tuples
    assert done.records().usage == inline.usage


def test_a_worker_sends_the_consumed_bytes_compressed(tmp_path: Path) -> None:
    """The raw block is compressed in the worker (the ingesting process only runs SQL):
    exactly the bytes parsed, a partial last line left out, in the form the store keeps."""
    whole = b"".join(record(n, "assistant" if n % 2 else "user", "z" * 300) for n in range(1, 30))
    data = whole + record(30)[:-15]  # the last line is not finished yet
    ctx = FileContext(str(tmp_path / "s.jsonl"), "p/s.jsonl")
    done = parse_piece(PieceJob(2, "claude", data, 0, False, ctx, {}))
    assert done.parsed.consumed == len(whole)
    assert done.raw_z is not None
    assert zstandard.ZstdDecompressor().decompress(done.raw_z) == whole
    assert done.raw_z == compress_raw(whole)
    empty = parse_piece(PieceJob(3, "claude", record(1)[:-5], 0, False, ctx, {}))
    assert empty.parsed.consumed == 0 and empty.raw_z is None


def test_a_price_table_that_cannot_be_sent_leaves_the_digests_to_this_process() -> None:
    pool = ParsePool(1)  # no process starts before a job is submitted
    try:
        assert pool.digest_builder("/nowhere.db", ("odd", {"m": lambda: 0})) is None  # type: ignore[dict-item]
        assert pool.digest_builder("/nowhere.db", digest.prices()) is not None
        assert pool.digest_parts == 0
    finally:
        pool.close()


async def test_parts_the_builder_fails_to_build_are_built_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker gone midway (the builder's part fails): that part is read and built in this
    process; every digest is saved, the same as a plain analyze saves."""
    monkeypatch.setattr(digest_parts, "PIPELINE_BATCH", 1)
    home = tmp_path / "home"
    make_home(home)
    await ingest(tmp_path / "plain.db", home, workers=0)
    db = tmp_path / "failing.db"
    calls = []

    async def builder(ids: Sequence[int], now: int, idle_ms: int) -> tuple[int, list[Any]]:
        calls.append(list(ids))
        if len(calls) % 2:
            raise RuntimeError("worker gone")
        return digest.build_from(str(db), ids, now, idle_ms, 1, digest.prices())

    async with await Store.open(db) as store:
        await Ingestor(store, workers=0).backfill(
            discover([(claude.ADAPTER, home / ".claude/projects")])
        )
        ids = await store.session_ids_changed_since_analysis()
        assert await digest.analyze(store, ids, NOW, builder=builder) == len(ids)
        assert await store.session_ids_changed_since_analysis() == []
    assert len(calls) >= 3  # every other part: some failed, some built by the builder
    assert digests(db) == digests(tmp_path / "plain.db")


@pytest.mark.parametrize("held", [False, True])
async def test_a_builder_that_keeps_up_builds_every_part_and_a_slow_one_leaves_parts_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: bool
) -> None:
    """The digests' parts go to the builder while it has fewer than ``BUILDER_AHEAD`` to
    build (not every other part whatever its pace): one that answers at once builds them
    all; one that is held builds ``BUILDER_AHEAD`` while this process builds the rest.  The
    digests are those of a plain analyze either way."""
    monkeypatch.setattr(digest_parts, "PIPELINE_BATCH", 1)
    home = tmp_path / "home"
    make_home(home)
    await ingest(tmp_path / "plain.db", home, workers=0)
    db = tmp_path / "built.db"
    calls: list[list[int]] = []
    gate = asyncio.Event()

    async def builder(ids: Sequence[int], now: int, idle_ms: int) -> tuple[int, list[Any]]:
        calls.append(list(ids))
        if held:
            await gate.wait()
        return digest.build_from(str(db), ids, now, idle_ms, 1, digest.prices())

    async with await Store.open(db) as store:
        await Ingestor(store, workers=0).backfill(
            discover([(claude.ADAPTER, home / ".claude/projects")])
        )
        ids = await store.session_ids_changed_since_analysis()
        assert len(ids) >= 5
        run = asyncio.create_task(digest.analyze(store, ids, NOW, builder=builder))
        if held:
            for _ in range(100):
                await asyncio.sleep(0.01)
            assert not run.done()  # the saves wait for the builder's parts, in order
            assert len(calls) == digest_parts.BUILDER_AHEAD  # the next parts were built here
            gate.set()
        assert await run == len(ids)
        assert await store.session_ids_changed_since_analysis() == []
    assert (len(calls) < len(ids)) if held else (len(calls) == len(ids))
    assert digests(db) == digests(tmp_path / "plain.db")


async def test_a_worker_killed_before_the_digests_leaves_them_all_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real pool with its worker dead (a broken pool refuses every part at ``submit``):
    the builder answers each part with a failed future, never an exception of its own, and
    every part is built here — the ingest does not fail in its digest phase."""
    monkeypatch.setattr(digest_parts, "PIPELINE_BATCH", 1)
    home = tmp_path / "home"
    make_home(home)
    await ingest(tmp_path / "plain.db", home, workers=0)
    db = tmp_path / "broken.db"
    pool = ParsePool(1)
    try:
        gone = pool.executors[0].submit(os._exit, 1)
        with pytest.raises(BrokenProcessPool):
            gone.result(timeout=60)
        builder = pool.digest_builder(str(db), digest.prices())
        assert builder is not None
        async with await Store.open(db) as store:
            await Ingestor(store, workers=0).backfill(
                discover([(claude.ADAPTER, home / ".claude/projects")])
            )
            ids = await store.session_ids_changed_since_analysis()
            assert await digest.analyze(store, ids, NOW, builder=builder) == len(ids)
            assert await store.session_ids_changed_since_analysis() == []
        assert pool.digest_parts >= 2  # the builder was asked (and refused) more than once
    finally:
        pool.close()
    assert digests(db) == digests(tmp_path / "plain.db")


async def test_a_workers_batch_drops_its_raw_bytes_and_reads_them_back_for_a_salvage(
    tmp_path: Path,
) -> None:
    """A backlog's batch parsed by a worker holds its compressed block and rows, not the raw
    bytes (they waited in the writer's queue and group: up to 12 MiB of the tree's peak);
    it still counts them towards the group, and a salvage's line lengths read them back
    from the block — the same lengths the raw bytes give."""
    home = tmp_path / "home"
    f = session_file(home)
    f.write_bytes(b"".join(record(i, text="r" * (50 + i)) for i in range(40)))
    data = f.read_bytes()
    src = next(iter(discover([(claude.ADAPTER, home / ".claude/projects")])))
    held: list[Batch] = []
    async with await Store.open(tmp_path / "a.db") as store:
        real = store.commit_many

        async def seen(batches: Sequence[Batch]) -> list[int]:
            held.extend(batches)
            return await real(batches)

        store.commit_many = seen  # type: ignore[method-assign]
        ingestor = Ingestor(store, workers=1, pool_min_bytes=0)
        await ingestor.backfill([src])
    assert ingestor.pieces_to_workers >= 1
    (batch,) = [b for b in held if b.parsed.consumed]
    assert batch.raw == b"" and batch.raw_dropped
    assert batch.held_bytes() == len(data)
    whole = Batch(batch.cursor, batch.start, data, batch.parsed)
    second = data.index(b"\n") + 1
    for at in (0, second, len(data) - 5):
        assert batch.line_length(at) == whole.line_length(at) > 0
    assert batch.raw == data  # read back once, from the block
    # a batch without raw bytes that is prepared while it waits (an over-long line's: its
    # block, no rows yet) holds the same count before and after: the writer's queue adds
    # and subtracts the same number
    oversized = Batch(batch.cursor, batch.start, b"", batch.parsed, raw_z=batch.raw_z)
    before = oversized.held_bytes()
    oversized.prepare()
    assert oversized.rows is not None and oversized.held_bytes() == before == 0

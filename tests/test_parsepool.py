"""A backlog parsed by worker processes (``helixd/ingest/parsepool.py``) gives exactly the
store an inline ingest gives: real files cut into many pieces (the adapter state carried
from piece to piece inside the worker), real corpus transcripts, a planted secret masked,
a partial last line left for later; and a small read never starts a process."""

from __future__ import annotations

import shutil
from pathlib import Path

import zstandard

from helixd.adapters import Chunk, FileContext
from helixd.adapters.declared import claude
from helixd.adapters.guard import parse_total
from helixd.ingest import digest
from helixd.ingest.parsepool import PieceJob, parse_piece
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.store.database import Store, now_ms
from helixd.store.writer import compress_raw, prepare_event
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


async def ingest(db: Path, home: Path, **kw: int) -> tuple[Ingestor, IngestStats]:
    async with await Store.open(db) as store:
        ingestor = Ingestor(store, **kw)
        stats = await ingestor.backfill(discover([(claude.ADAPTER, home / ".claude/projects")]))
        await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
    return ingestor, stats


async def test_worker_processes_store_what_inline_parsing_stores(tmp_path: Path) -> None:
    home = tmp_path / "home"
    needles = make_home(home)
    chunk = 16 << 10  # many pieces per file: the state travels with the file's pieces
    inline, inline_stats = await ingest(tmp_path / "inline.db", home, chunk_bytes=chunk, workers=0)
    pooled, pooled_stats = await ingest(
        tmp_path / "pool.db", home, chunk_bytes=chunk, workers=2, pool_min_bytes=0
    )
    assert inline.pieces_to_workers == 0
    assert pooled.pieces_to_workers > 20
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

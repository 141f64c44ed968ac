"""The usage summary tables always equal a GROUP BY over the per-response facts, including
when a response's credit moves to an earlier file, and after a rewrite replaces usage."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from helixd.adapters.registry import REGISTRY
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store, now_ms
from tests.conftest import FIXTURES

COUNTERS = "sum(input), sum(output), sum(cache_read), sum(cache_write_5m), sum(cache_write_1h)"


def check(db: Path) -> None:
    con = sqlite3.connect(db)
    try:
        truth = sorted(
            con.execute(
                f"SELECT coalesce(ts, 0) / 900000, session_id, model, count(*), {COUNTERS}"
                " FROM usage GROUP BY 1, 2, 3"
            )
        )
        kept = sorted(
            con.execute(
                "SELECT bucket, session_id, model, responses, input, output, cache_read,"
                " cache_write_5m, cache_write_1h FROM usage_buckets"
            )
        )
        assert kept == truth
        hours = sorted(
            con.execute(
                f"SELECT coalesce(u.ts, 0) / 3600000, s.agent, u.model, count(*), {COUNTERS}"
                " FROM usage u JOIN sessions s ON s.id = u.session_id GROUP BY 1, 2, 3"
            )
        )
        kept_h = sorted(
            con.execute(
                "SELECT hour, agent, model, responses, input, output, cache_read, cache_write_5m,"
                " cache_write_1h FROM usage_hours"
            )
        )
        assert kept_h == hours
    finally:
        con.close()


async def test_rollups_match_the_facts_across_credit_moves(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    pairs = [(a, root) for a in REGISTRY if a.name == "claude"]
    store = await Store.open(tmp_path / "s.db")
    try:
        # The replayed response sits in edge_cases.jsonl and in todowrite_examples.jsonl,
        # whose records natively belong to it: ingest the copy first, then the original.
        daaain = FIXTURES / "claude" / "daaain__claude-code-log"
        (root / "p").mkdir(parents=True)
        shutil.copy(daaain / "edge_cases.jsonl", root / "p")
        await Ingestor(store).backfill(discover(pairs))
        check(store.path)
        shutil.copy(daaain / "todowrite_examples.jsonl", root / "p")
        await Ingestor(store).backfill(discover(pairs))
        check(store.path)
        shutil.copytree(
            FIXTURES / "claude", root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("README*")
        )
        await Ingestor(store, chunk_bytes=16 * 1024).backfill(discover(pairs))
        await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
        check(store.path)
    finally:
        await store.close()


async def test_rollups_match_after_whole_file_rewrites(tmp_path: Path) -> None:
    adapters = [a for a in REGISTRY if a.name in ("gemini", "grok")]
    store = await Store.open(tmp_path / "s.db")
    try:
        for adapter in adapters:
            root = tmp_path / adapter.name
            shutil.copytree(FIXTURES / adapter.name, root, ignore=shutil.ignore_patterns("*.md"))
            await Ingestor(store).backfill(discover([(adapter, root)]))
            for f in sorted(root.rglob("*.json*"))[:3]:  # touch: re-read, usage replaced
                f.write_bytes(f.read_bytes())
            await Ingestor(store).backfill(discover([(adapter, root)]))
        check(store.path)
    finally:
        await store.close()

"""The digest phase of a first ingest alone, built in this process ("here") against built
on both cores with a warm parse worker ("workers", what `helixctl ingest` does after a big
backfill), alternating on copies of one backfilled store (issue 12, fifth pass).

Prints, per run, the wall time and the CPU of this process; the worker's CPU is the
difference in the children's. Exits 1 when the median wall of the "workers" runs is above
``--max-wall`` seconds.

    .venv/bin/python bench/digests.py /tmp/s-ingest/c200 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


async def backfill(home: Path, db: Path) -> None:
    """The corpus ingested once, no digest built (its sessions all due)."""
    from helixd.adapters import adapter_named
    from helixd.ingest.pipeline import Ingestor, discover
    from helixd.store.database import Store

    pairs = [
        (adapter_named("claude"), home / ".claude" / "projects"),
        (adapter_named("codex"), home / ".codex" / "sessions"),
    ]
    async with await Store.open(db) as store:
        await Ingestor(store).backfill(discover(pairs))


async def one(base: Path, db: Path, mode: str) -> tuple[float, float, float, int, int, int]:
    from helixd.ingest import digest
    from helixd.ingest.parsepool import ParsePool
    from helixd.store.database import Store, now_ms

    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(base, db)
    pool = ParsePool(1) if mode == "workers" else None
    if pool is not None:  # spawned and warm, as after a backfill
        await asyncio.wrap_future(pool.executors[0].submit(sum, [1]))
    kids = _children_cpu()
    async with await Store.open(db) as store:
        ids = await store.session_ids_changed_since_analysis()
        table = digest.prices()
        builder = pool.digest_builder(str(db), table) if pool is not None else None
        t, c = time.perf_counter(), time.process_time()
        n = await digest.analyze(store, ids, now_ms(), table=table, builder=builder)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    parts = 0
    if pool is not None:
        parts = pool.digest_parts
        pool.close()
    try:  # where the parts are made (an older build: in digest itself)
        from helixd.ingest.digest_parts import PIPELINE_BATCH
    except ImportError:
        PIPELINE_BATCH = digest.PIPELINE_BATCH  # type: ignore[attr-defined]
    return wall, cpu, _children_cpu() - kids, n, parts, -(-len(ids) // PIPELINE_BATCH)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("home", type=Path, help="a corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-wall", type=float, default=None, help="exit 1 above (workers, s)")
    ap.add_argument(
        "--base",
        type=Path,
        default=None,
        help="the backfilled store to copy (made there when missing; kept, so that two builds"
        " can be compared on one store)",
    )
    ap.add_argument("--only", choices=("here", "workers"), default=None, help="one mode only")
    args = ap.parse_args()
    home = args.home.resolve()
    walls: dict[str, list[float]] = {"here": [], "workers": []}
    with tempfile.TemporaryDirectory(prefix="helix-digests-") as tmp:
        base = args.base or Path(tmp) / "base.db"
        if not base.exists():
            asyncio.run(backfill(home, base))
        for _ in range(args.runs):
            for mode in [args.only] if args.only else ("here", "workers"):
                wall, cpu, kids, n, parts, of = asyncio.run(one(base, Path(tmp) / "run.db", mode))
                walls[mode].append(wall)
                print(
                    f"{mode:8s} {n} sessions  wall {wall:.2f} s  this process {cpu:.2f} s CPU"
                    f"  worker {kids:.2f} s CPU (its start included), {parts} of {of} parts",
                    flush=True,
                )
    med = {m: statistics.median(w) if w else float("nan") for m, w in walls.items()}
    print(
        f"median wall: here {med['here']:.2f} s, workers {med['workers']:.2f} s;"
        f" load average {os.getloadavg()[0]:.1f}"
    )
    if args.max_wall is not None and med["workers"] > args.max_wall:
        print(f"MISSED: digests {med['workers']:.2f} s > {args.max_wall:g} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

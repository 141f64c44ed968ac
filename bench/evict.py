"""Eviction benchmark: the real `helixctl evict` on a store built from a generated corpus.

Ingests the corpus HOME with `helixctl ingest` into a temporary store (HELIX_STORE_DB), then
runs one eviction pass with a soft cap of `--soft-cap` (default 0: every analyzed session's
Tier 1 rows go) and prints the pass's seconds (whole process and the pass alone), the Tier 1
bytes it freed, and the store file size before and after (the database plus its WAL, as
`ls` sees them).  Usage totals and digest counts are checked unchanged.

    .venv/bin/python bench/evict.py /tmp/helix-bench/c1g
    .venv/bin/python bench/evict.py /tmp/helix-bench/c13 --soft-cap 0 --expect-shrink-mb 500
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HELIXCTL = [sys.executable, "-m", "helixd.cli.main"]


def env_for(home: Path, db: Path, cfg: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELIX_")}
    env.update(HOME=str(home), HELIX_STORE_DB=str(db), XDG_CONFIG_HOME=str(cfg), **extra)
    return env


def run_json(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*HELIXCTL, *args], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"helixctl {args} failed ({proc.returncode}):\n{proc.stderr}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc, wall


def tier2(db: Path) -> tuple[Any, ...]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(
            con.execute(
                "SELECT (SELECT count(*) FROM digests), (SELECT sum(length(json)) FROM digests),"
                " (SELECT count(*) FROM usage), (SELECT sum(input + output + cache_read)"
                " FROM usage)"
            ).fetchone()
        )
    finally:
        con.close()


def size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path, help="corpus HOME (from bench/gen_corpus.py)")
    ap.add_argument("--soft-cap", default="0", help="raw_soft_cap_bytes for the pass")
    ap.add_argument("--store", type=Path, help="reuse this ingested store (copied first)")
    ap.add_argument(
        "--expect-shrink-mb",
        type=float,
        default=0.0,
        help="exit 1 unless the store file shrinks at least this much (issue #6: 500)",
    )
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="helix-evict-"))
    db = work / "helix.db"
    cfg = work / "config"
    try:
        if args.store:
            shutil.copy(args.store, db)
            print(f"store copied from {args.store}")
        else:
            ingest, wall = run_json(["ingest", "--json"], env_for(args.corpus, db, cfg))
            print(
                f"ingest: {ingest['bytes'] / 1e6:,.0f} MB, {ingest['sessions']} sessions,"
                f" {ingest['events']:,} events in {wall:.1f} s"
            )
        before = tier2(db)
        env = env_for(args.corpus, db, cfg, HELIX_RETENTION__RAW_SOFT_CAP_BYTES=args.soft_cap)
        file_before = size(db)
        out, wall = run_json(["evict", "--json"], env)
        file_after = size(db)
        assert tier2(db) == before, "Tier 2 changed"
        passes: dict[str, int] = {}
        for e in out["evictions"]:
            key = f"{e['pass']}/stage{e['stage']}"
            passes[key] = passes.get(key, 0) + 1
        print(
            f"evict: {out['applied']} evictions {passes}, Tier 1"
            f" {out['usage_before'] / 1e6:,.1f} -> {out['usage_after'] / 1e6:,.1f} MB"
            f" (freed {out['bytes_freed'] / 1e6:,.1f} MB counted)"
        )
        print(
            f"store file: {file_before / 1e6:,.1f} MB -> {file_after / 1e6:,.1f} MB"
            f" (shrank {(file_before - file_after) / 1e6:,.1f} MB);"
            f" pass {out['seconds']:.2f} s, whole process {wall:.2f} s"
        )
        print(f"digests {before[0]}, usage facts {before[2]}: unchanged")
        if (file_before - file_after) / 1e6 < args.expect_shrink_mb:
            sys.exit(f"the store shrank less than {args.expect_shrink_mb:,.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Analyze-pass and re-normalization benchmark on a store built from a generated corpus.

Ingests the corpus HOME with `helixctl ingest` into a temporary store, then:

* runs `helixctl analyze --all` (every session's digest and signals rebuilt) `--runs` times
  and prints, per run, the whole-process wall time and the raw bytes of the analyzed
  sessions per second (issue target: at least 100 MB/s), plus the pass alone as the command
  reports it;
* marks every file as produced by the previous adapter version and runs
  `helixctl renormalize` (re-parse of all stored raw lines, rows rebuilt, digests rebuilt),
  printing its seconds and MB/s, and checks that events, usage and digests are unchanged.

    .venv/bin/python bench/analyze.py /tmp/helix-bench/c1g --runs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from evict import env_for, run_json

TARGET_MB_S = 100  # issue #6: raw lines analyzed per second, whole process


def fingerprint(db: Path) -> tuple[Any, ...]:
    """What re-normalization by the same parser must leave exactly as it was."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(
            con.execute(
                "SELECT (SELECT count(*) FROM events), (SELECT sum(length(summary)) FROM events),"
                " (SELECT count(*) FROM usage), (SELECT sum(input + output + cache_read)"
                " FROM usage), (SELECT count(*) FROM digests), (SELECT count(*) FROM tool_calls),"
                " (SELECT count(*) FROM test_runs), (SELECT count(*) FROM file_operations)"
            ).fetchone()
        )
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("home", type=Path, help="corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the temporary store")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="helix-analyze-"))
    db, cfg = work / "helix.db", work / "config"
    env = env_for(args.home, db, cfg)
    try:
        ingest, wall = run_json(["ingest", "--json"], env)
        print(
            f"ingest: {ingest['bytes'] / 1e6:,.0f} MB, {ingest['sessions']} sessions, {wall:.1f} s"
        )
        rates = []
        for i in range(args.runs):
            doc, wall = run_json(["analyze", "--all", "--json"], env)
            rate = doc["raw_bytes"] / 1e6 / wall
            rates.append(rate)
            print(
                f"analyze run {i + 1}: {doc['digests']} digests over"
                f" {doc['raw_bytes'] / 1e6:,.0f} MB of raw lines: {wall:.2f} s whole process"
                f" = {rate:,.0f} MB/s (the pass alone {doc['seconds']:.2f} s ="
                f" {doc['mb_per_s']:,.0f} MB/s)"
            )
        median = statistics.median(rates)
        print(f"analyze median: {median:,.0f} MB/s (target >= {TARGET_MB_S} MB/s)")
        if median < TARGET_MB_S:
            sys.exit(f"the analyze pass is below its target ({median:,.0f} MB/s)")

        before = fingerprint(db)
        con = sqlite3.connect(db)
        con.execute("UPDATE files SET adapter_version = adapter_version - 1")
        con.commit()
        con.close()
        doc, wall = run_json(["renormalize", "--json"], env)
        print(
            f"renormalize: {doc['sessions']} sessions in {doc['groups']} groups,"
            f" {doc['bytes'] / 1e6:,.0f} MB re-parsed from stored raw lines, {wall:.1f} s whole"
            f" process = {doc['bytes'] / 1e6 / wall:,.0f} MB/s (rows {doc['seconds']:.1f} s,"
            f" then {doc['digests']} digests); skipped {len(doc['skipped'])}"
        )
        after = fingerprint(db)
        print(f"rows unchanged by a same-parser rebuild: {before == after}")
        if before != after:
            print(f"  before {before}\n  after  {after}")
            sys.exit(1)
    finally:
        if args.keep:
            print(f"store kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()

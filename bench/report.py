#!/usr/bin/env python3
"""Reports and search from the store vs ccusage's full re-read, whole process, warm.

For each corpus HOME (``bench/gen_corpus.py``): ingest it with ``helixctl ingest`` into a
temporary store (or reuse ``--store``), then time ``helixctl report daily --json`` and
``helixctl search QUERY --json`` (``--runs`` runs each, p50/p95 of wall time, python start
and imports included) and ``ccusage claude daily --json --offline`` on the same files, and
print both with the ratio.  Also checks that Helix's Claude daily totals equal ccusage's::

    python bench/report.py /tmp/helix-bench/c1g /tmp/helix-bench/c13 --runs 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ccusage_baseline import corpus_env

REPO = Path(__file__).resolve().parent.parent
HELIXCTL = REPO / ".venv" / "bin" / "helixctl"
CCUSAGE = Path("/tmp/helix-ccusage/node_modules/.bin/ccusage")


def env_for(home: Path, db: Path) -> dict[str, str]:
    return {**corpus_env(home), "HELIX_STORE_DB": str(db)}


def timed(argv: list[str], env: dict[str, str], runs: int, cwd: Path) -> tuple[list[float], str]:
    walls, out = [], ""
    subprocess.run(argv, env=env, capture_output=True, cwd=cwd, check=True)  # warm-up
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=cwd, check=True)
        walls.append(time.perf_counter() - t0)
        out = proc.stdout
    return walls, out


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(0.95 * len(s)) - 1))]


def totals(doc: dict[str, Any]) -> tuple[int, int, int, int]:
    t = doc["totals"]
    return (t["inputTokens"], t["outputTokens"], t["cacheReadTokens"], t["cacheCreationTokens"])


def bench(home: Path, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    db = Path(args.store) if args.store else tmp / f"{home.name}.db"
    env = env_for(home, db)
    row: dict[str, Any] = {"corpus": str(home)}
    size = sum(p.stat().st_size for p in home.rglob("*.jsonl"))
    row["corpus_bytes"] = size
    if not db.exists():
        t0 = time.perf_counter()
        subprocess.run(
            [str(HELIXCTL), "ingest", "--json"], env=env, capture_output=True, check=True, cwd=home
        )
        row["ingest_s"] = time.perf_counter() - t0
    row["store_bytes"] = db.stat().st_size
    report, out = timed(
        [str(HELIXCTL), "report", "daily", "--json", "-z", "UTC"], env, args.runs, home
    )
    row["report_p50"], row["report_p95"] = statistics.median(report), p95(report)
    search, hits = timed(
        [str(HELIXCTL), "search", args.query, "--json", "--limit", "20"], env, args.runs, home
    )
    row["search_p50"], row["search_p95"] = statistics.median(search), p95(search)
    row["search_hits"] = len(json.loads(hits))
    claude, claude_out = timed(
        [str(HELIXCTL), "report", "daily", "--json", "-z", "UTC", "--agent", "claude"], env, 1, home
    )
    if CCUSAGE.exists() and args.ccusage_runs:
        cc, cc_out = timed(
            [str(CCUSAGE), "claude", "daily", "--json", "--offline"], env, args.ccusage_runs, home
        )
        row["ccusage_p50"], row["ccusage_p95"] = statistics.median(cc), p95(cc)
        row["ratio_report"] = row["ccusage_p50"] / row["report_p95"]
        row["ratio_search"] = row["ccusage_p50"] / row["search_p95"]
        row["claude_totals_equal"] = totals(json.loads(claude_out)) == totals(json.loads(cc_out))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("homes", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--ccusage-runs", type=int, default=5)
    ap.add_argument("--query", default='"failing test" OR refactor*')
    ap.add_argument("--store", default=None, help="Reuse this store (one corpus only).")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="helix-report-") as tmp:
        for home in args.homes:
            rows.append(bench(home.resolve(), args, Path(tmp)))
            print(json.dumps(rows[-1]), file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        "| corpus | store | report daily p50 / p95 | search p50 / p95 | ccusage claude daily"
        " p50 | ratio (report, search) | Claude totals equal |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        cc = f"{r['ccusage_p50']:.2f} s" if "ccusage_p50" in r else "-"
        ratio = (
            f"{r['ratio_report']:.1f}×, {r['ratio_search']:.1f}×" if "ratio_report" in r else "-"
        )
        print(
            f"| {r['corpus_bytes'] / 1e9:.2f} GB | {r['store_bytes'] / 1e6:.0f} MB"
            f" | {r['report_p50'] * 1000:.0f} / {r['report_p95'] * 1000:.0f} ms"
            f" | {r['search_p50'] * 1000:.0f} / {r['search_p95'] * 1000:.0f} ms"
            f" | {cc} | {ratio} | {r.get('claude_totals_equal', '-')} |"
        )


if __name__ == "__main__":
    main()

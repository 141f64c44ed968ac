"""Redaction throughput (MB/s) and what it masks, over real and generated transcripts.

    .venv/bin/python bench/redact.py DIR [DIR ...] [--runs 5] [--show 20] [--suffix .py]

Every text file (``.json``, ``.jsonl``, ``.md``, ``.history``, ``.yaml``; or ``--suffix``)
under each DIR is read into memory once, then ``helixd.core.redact.redact`` runs over each
file's bytes ``--runs`` times; the best and median MB/s are printed per DIR.  One more
pass counts the spans masked per label and their bytes, and prints ``--show`` of them with
some context, so a person can judge what was masked (the real corpus holds no live
secrets: every mask there is either a planted example or a false positive).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

from helixd.core.redact import find_spans, redact

TEXT_SUFFIXES = (".json", ".jsonl", ".md", ".history", ".yaml")


def load(root: Path, suffixes: tuple[str, ...]) -> list[bytes]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in suffixes)
    return [p.read_bytes() for p in files]


def throughput(blobs: list[bytes], runs: int) -> list[float]:
    size = sum(map(len, blobs))
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        for blob in blobs:
            redact(blob)
        rates.append(size / (time.perf_counter() - started) / 1e6)
    return rates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument(
        "--suffix",
        action="append",
        help="file suffixes to read (default: the transcript ones); e.g. --suffix .py to "
        "count what is masked in ordinary source code",
    )
    args = ap.parse_args()
    for root in args.dirs:
        blobs = load(root, tuple(args.suffix or TEXT_SUFFIXES))
        size = sum(map(len, blobs))
        rates = throughput(blobs, args.runs)
        labels: Counter[str] = Counter()
        masked = 0
        shown = 0
        for blob in blobs:
            for start, end, label in find_spans(blob):
                labels[label.decode()] += 1
                masked += end - start
                if shown < args.show:
                    shown += 1
                    context = blob[max(start - 40, 0) : end + 10]
                    print(f"  {label.decode():>14}: {context!r}")
        print(
            f"{root}: {len(blobs)} files, {size / 1e6:.1f} MB; redact best "
            f"{max(rates):.0f} MB/s, median {statistics.median(rates):.0f} MB/s; "
            f"masked {sum(labels.values())} spans, {masked} bytes "
            f"({masked / max(size, 1) * 1e6:.1f} per MB) {dict(labels)}"
        )


if __name__ == "__main__":
    main()

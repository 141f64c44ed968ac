"""The CLI's own cost (issue 12): `helixctl --version` and `helixctl -h`, whole process, against
the bare interpreter (`python -c pass`) of the same venv, runs interleaved.

Prints wall and CPU (user + sys) p50 of each and the load; exits 1 when the CPU p50 of
`--version` is more than `--target-ms` (35 ms) above the interpreter's.  Run it with the
python of the install to measure (a wheel install in a fresh venv, as docs/performance.md
says):

    /path/to/venv/bin/python bench/cli_start.py --runs 40
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    c0, t0 = cpu_of_children(), time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True)
    return time.perf_counter() - t0, cpu_of_children() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--target-ms", type=float, default=35.0, help="--version CPU over python")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TERM")}
    probes = {
        "python -c pass": [str(BIN / "python"), "-c", "pass"],
        "helixctl --version": [str(BIN / "helixctl"), "--version"],
        "helixctl -h": [str(BIN / "helixctl"), "-h"],
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in probes}
    for argv in probes.values():
        once(argv, env)  # bytecode and page cache
    for _ in range(args.runs):
        for name, argv in probes.items():
            samples[name].append(once(argv, env))
    cpu = {name: statistics.median(c for _, c in s) for name, s in samples.items()}
    for name, s in samples.items():
        wall = statistics.median(w for w, _ in s)
        print(f"{name:20} wall p50 {wall * 1000:6.1f} ms   cpu p50 {cpu[name] * 1000:6.1f} ms")
    over = (cpu["helixctl --version"] - cpu["python -c pass"]) * 1000
    print(
        f"--version over the interpreter: {over:.1f} ms CPU (target <= {args.target_ms:.0f});"
        f" load {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )
    return 1 if over > args.target_ms else 0


if __name__ == "__main__":
    sys.exit(main())

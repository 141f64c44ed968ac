"""Hook latency: `helixctl hook claude` as an agent runs it (a fresh process, a payload on
stdin), with the daemon up and with it down (then the payload is spooled).

    .venv/bin/python bench/hook.py --runs 200
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def helixctl() -> list[str]:
    exe = shutil.which("helixctl", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "helixd.cli.main"]


def measure(env: dict[str, str], runs: int, payload: bytes) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            [*helixctl(), "hook", "claude"],
            input=payload,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)


def pct(xs: list[float], p: float) -> float:
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hx") as tmp:
        home = Path(tmp) / "h"
        (home / ".claude/projects/p").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HELIX_")}
        env.update(
            HOME=str(home),
            HELIX_STORE_DB=f"{tmp}/s.db",
            HELIX_SOCKET=f"{tmp}/s.sock",
            HELIX_STATE_DIR=f"{tmp}/state",
            PYTHONPATH=str(REPO),
        )
        payload = json.dumps(
            {
                "session_id": "s",
                "hook_event_name": "Stop",
                "transcript_path": f"{home}/.claude/projects/p/s.jsonl",
            }
        ).encode()
        down = measure(env, max(args.runs // 4, 10), payload)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "helixd.daemon.app"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not os.path.exists(f"{tmp}/s.sock"):
                time.sleep(0.05)
            up = measure(env, args.runs, payload)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
    print(
        f"hook, daemon up    p50 {pct(up, 0.5):.1f} ms, p99 {pct(up, 0.99):.1f} ms"
        f" ({len(up)} runs, whole process)"
    )
    print(
        f"hook, daemon down  p50 {pct(down, 0.5):.1f} ms, p99 {pct(down, 0.99):.1f} ms"
        f" ({len(down)} runs; spooled)"
    )


if __name__ == "__main__":
    main()

"""Read path: every read command's whole-process time, as a user runs it.

The real `helixctl` console script, default config (no HELIX_* variable: the store is found
the way a user's is, in HOME's data directory), against a corpus HOME whose store exists
(built by `helixctl ingest` when missing).  Each command runs `--runs` times with the daemon
down, then with `helixd` up on the same HOME (`--daemon both`, the default).  Prints p50 and
p95 (and the CPU p50: user + sys) per command and exits 1 when any p50 is above `--target` (0.10 s).

    .venv/bin/python bench/gen_corpus.py --out /tmp/helix-bench/c13 --size 1.3GB --agent both
    .venv/bin/python bench/readpath.py /tmp/helix-bench/c13
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def env_for(home: Path) -> dict[str, str]:
    keep = {"PATH", "LANG", "LC_ALL", "TZ", "TERM"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(home)
    return env


def store_of(home: Path) -> Path:
    return home / ".local/share/helix/helix.db"


def pick(db: Path) -> dict[str, str]:
    """A big session (for lookup/env/show), a word of its first prompt, its repo."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        uid, repo = con.execute(
            "SELECT uid, repo FROM sessions WHERE messages > 0 ORDER BY events DESC LIMIT 1"
        ).fetchone()
        prompt = con.execute(
            "SELECT json_extract(d.json, '$.first_prompt') FROM digests d"
            " JOIN sessions s ON s.id = d.session_id WHERE s.uid = ?",
            (uid,),
        ).fetchone()[0]
    finally:
        con.close()
    words = [w for w in (prompt or "").split() if w.isalpha() and len(w) > 5]
    return {"uid": uid, "repo": repo or "", "word": words[0] if words else "daemon"}


def commands(p: dict[str, str]) -> dict[str, list[str]]:
    return {
        "lookup": ["lookup", p["uid"]],
        "search": ["search", p["word"]],
        "report daily": ["report", "daily"],
        "sessions": ["sessions"],
        "status": ["status"],
        "stats": ["stats"],
        "tokens": ["tokens", "--repo", p["repo"], "--since", "30d"],
        "env": ["env", p["uid"]],
        "show": ["show", p["uid"], "--tail", "50"],
    }


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(
    args: list[str], env: dict[str, str], runs: int
) -> tuple[float, float, int, float]:
    """``(wall p50, wall p95, exit code, CPU p50)``: CPU is user + sys of the process (a
    loaded machine stretches the wall time, hardly the CPU time)."""
    samples = []
    cpu = []
    code = 0
    for _ in range(runs):
        c0 = cpu_of_children()
        t0 = time.perf_counter()
        proc = subprocess.run(
            [str(BIN / "helixctl"), *args], env=env, capture_output=True, check=False
        )
        samples.append(time.perf_counter() - t0)
        cpu.append(cpu_of_children() - c0)
        code = proc.returncode
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return statistics.median(samples), p95, code, statistics.median(cpu)


def cpu_ticks(pid: int) -> int | None:
    """The process's user + system CPU in clock ticks (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[11]) + int(fields[12])


def settle(pid: int, limit: float = 300.0) -> float:
    """Seconds until the daemon used at most one tick of CPU in each of two consecutive
    seconds (2 s flat where ``/proc`` is missing)."""
    t0 = time.time()
    last = cpu_ticks(pid)
    if last is None:
        time.sleep(2)
        return 2.0
    quiet = 0
    while quiet < 2 and time.time() - t0 < limit:
        time.sleep(1)
        now = cpu_ticks(pid)
        if now is None:
            break
        quiet = quiet + 1 if now - last <= 1 else 0
        last = now
    return time.time() - t0


def start_daemon(env: dict[str, str], db: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [str(BIN / "helixd")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        ping = subprocess.run([str(BIN / "helixctl"), "ping"], env=env, capture_output=True)
        if ping.returncode == 0:
            # let the catch-up scan and the first passes settle: the daemon's own work
            # (a migration, analysis, the first retention pass) must not share the 2 cores
            # with the timed commands
            subprocess.run([str(BIN / "helixctl"), "flush"], env=env, capture_output=True)
            settled = settle(proc.pid)
            print(f"helixd idle after {settled:.1f} s", file=sys.stderr)
            return proc
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("helixd did not come up")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("home", type=Path, help="corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--target", type=float, default=0.10, help="p50 limit, seconds")
    ap.add_argument("--daemon", choices=("both", "up", "down"), default="both")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()
    home = args.home.resolve()
    env = env_for(home)
    db = store_of(home)
    if not db.exists():
        print(f"building the store: helixctl ingest ({home})", file=sys.stderr)
        subprocess.run([str(BIN / "helixctl"), "ingest"], env=env, check=True)
    cmds = commands(pick(db))
    modes = ["down", "up"] if args.daemon == "both" else [args.daemon]
    results: dict[str, dict[str, tuple[float, float, int, float]]] = {}
    failed = False
    for mode in modes:
        daemon = start_daemon(env, db) if mode == "up" else None
        try:
            for name, argv in cmds.items():
                time_command(argv, env, 1)  # warm the page cache and the bytecode
                results.setdefault(name, {})[mode] = time_command(argv, env, args.runs)
        finally:
            if daemon is not None:
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(30)
    print(
        f"{'command':14} "
        + " ".join(f"{m + ' p50':>10} {m + ' p95':>10} {m + ' cpu':>10}" for m in modes)
    )
    for name, by in results.items():
        cells = []
        for m in modes:
            p50, p95, code, cpu = by[m]
            flag = "!" if p50 > args.target else " "
            bad = "" if code in (0, 3) else f" (exit {code})"
            failed |= p50 > args.target or bad != ""
            cells.append(f"{p50:9.3f}{flag} {p95:10.3f} {cpu:10.3f}{bad}")
        print(f"{name:14} " + " ".join(cells))
    if args.json:
        print(json.dumps(results))
    print(
        f"target: p50 <= {args.target:.2f} s per command (cpu: user + sys p50);"
        f" load {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

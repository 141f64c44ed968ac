"""Fleet dashboard benchmark: ``helixctl web --fleet`` over N machines' Tier 2 in PostgreSQL.

1. N copies of a template store (``bench/fleet.py``'s: the corpus HOME ingested, Tier 1
   evicted) pushed into a throwaway PostgreSQL (``tests/fleet/pgcluster.py``), each as its own
   ``helix_pusher`` role, then ``ANALYZE`` (what autovacuum does soon after a bulk load).
2. ``helixctl web --fleet`` started as a ``helix_reader`` role; every API endpoint and view
   asked ``--requests`` times (after one warm-up): wall p50 / p95 / max per path, and the
   server process's CPU per request (from /proc, in clock ticks).
3. Exit 1 when a path's p95 is above ``--p95-ms`` (500), printing which.

    .venv/bin/python bench/gen_corpus.py --out /tmp/helix-bench/c200 --size 200MB --agent both
    .venv/bin/python bench/fleet_web.py /tmp/helix-bench/c200 --machines 10 --work /tmp/hx-fw
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).parent))

import fleet as fleetbench

PATHS = (
    "/api/health",
    "/api/machines",
    "/api/stats",
    "/api/stats?days=30",
    "/api/reports/daily",
    "/api/reports/session",
    "/api/acceptance",
    "/api/hooks",
    "/",
    "/sessions",
    "/costs",
    "/tools",
    "/files",
    "/tests",
    "/?machine=machine-00",
    "/sessions?user=user-1",
)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("home", type=Path, help="corpus HOME made by gen_corpus.py")
    ap.add_argument("--machines", type=int, default=10)
    ap.add_argument("--work", type=Path, default=Path("/var/tmp/helix-fleet-web-bench"))
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--p95-ms", type=float, default=500.0)
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    template = fleetbench.make_template(args.home, args.work)
    c = fleetbench.counts(template)
    print(f"per machine       {c['sessions']:,} sessions, {sum(c.values()):,} Tier 2 rows")
    print(f"load              {os.getloadavg()[0]:.1f} (1 min average) before the runs")
    cluster, roles = fleetbench.setup_server(args.machines, False)
    server = None
    try:
        dbs = fleetbench.machine_stores(template, args.work, args.machines)
        fleetbench.concurrent_push(cluster, roles, dbs, 1000)
        # As autovacuum does within a minute of a bulk load: without planner statistics the
        # interventions-and-errors query of the stats runs as a nested loop (2.5 s, not 60 ms).
        cluster.sql("ANALYZE", dbname="fleet")
        pw = fleetbench.PASSWORD
        cluster.sql(f"CREATE ROLE viewer LOGIN PASSWORD '{pw}' IN ROLE helix_reader")
        env = {
            **fleetbench.machine_env(cluster, "viewer", 0, dbs[0]),
            "HELIX_FLEET__DSN": cluster.dsn("fleet", "viewer"),
        }
        server = subprocess.Popen(
            [*fleetbench.HELIXCTL, "web", "--fleet", "--port", "0", "--no-open"],
            env=env,
            cwd=fleetbench.REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        url = server.stdout.readline().strip().rstrip("/")
        if not url.startswith("http"):
            raise SystemExit("helixctl web --fleet did not start")
        tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
        misses = []
        print(f"{'path':28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'CPU/req ms':>10}")
        for path in PATHS:
            with urlopen(url + path, timeout=120) as r:  # warm-up (connections, templates)
                r.read()
            walls = []
            before = cpu_ticks(server.pid)
            for _ in range(args.requests):
                t0 = time.perf_counter()
                with urlopen(url + path, timeout=120) as r:
                    r.read()
                walls.append((time.perf_counter() - t0) * 1000)
            cpu = (cpu_ticks(server.pid) - before) * tick_ms / args.requests
            walls.sort()
            p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
            print(
                f"{path:28} {statistics.median(walls):8.1f} {p95:8.1f} {walls[-1]:8.1f} {cpu:10.1f}"
            )
            if p95 > args.p95_ms:
                misses.append(f"{path} p95 {p95:.0f} ms > {args.p95_ms:.0f} ms")
        print(f"load              {os.getloadavg()[0]:.1f} (1 min average) after the runs")
        if misses:
            print("MISS: " + "; ".join(misses))
            return 1
        print(f"ok: every path's p95 within {args.p95_ms:.0f} ms")
        return 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
            if server.stdout:
                server.stdout.close()
        cluster.remove()


if __name__ == "__main__":
    raise SystemExit(main())

"""The web face on a big store: every endpoint's latency (p50 / p95 / max over ``--runs``
sequential requests, after a warm-up), the page of the biggest session in a real browser,
and the daemon's idle CPU and RSS with the web server on and off.

    .venv/bin/python bench/api.py /tmp/helix-bench/c1g [--runs 30] [--idle-seconds 30]

The corpus HOME must hold a store already ingested (``HELIX_STORE_DB``, default
``<home>/helix.db``).  The daemon runs as a real subprocess (``helixd``) on a copy of
nothing: it opens that store; it finds nothing new to read.  Exits 1 when an endpoint's p95
is above ``--budget-ms`` (50) or the big session's page takes more than 1 s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

REPO = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def env_for(home: Path, db: Path, state: Path, web: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELIX_", "CLAUDE_", "CODEX_"))}
    env.update(
        HOME=str(home),
        HELIX_STORE_DB=str(db),
        HELIX_STATE_DIR=str(state),
        HELIX_SOCKET=str(state / "s.sock"),
        HELIX_WEB__PORT="0",
        HELIX_WEB__ENABLED="true" if web else "false",
        HELIX_DAEMON__ANALYZE_SECONDS="3600",
        XDG_CONFIG_HOME=str(state / "config"),
    )
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def ctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def start(env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.daemon.app"], env=env, cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while ctl(env, "ping").returncode != 0:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("helixd did not come up")
        time.sleep(0.2)
    ctl(env, "flush", "--timeout", "600")
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def idle(env: dict[str, str], seconds: float) -> dict[str, float]:
    """CPU % and RSS of a daemon left alone for ``seconds`` (after catching up)."""
    proc = start(env)
    try:
        time.sleep(3)
        c0, t0 = cpu_s(proc.pid), time.monotonic()
        time.sleep(seconds)
        cpu = (cpu_s(proc.pid) - c0) / (time.monotonic() - t0) * 100
        return {"cpu_pct": round(cpu, 3), "rss_mb": round(rss_mb(proc.pid), 1)}
    finally:
        stop(proc)


def timed(host: str, port: int, path: str, runs: int) -> dict[str, Any]:
    con = http.client.HTTPConnection(host, port, timeout=60)
    times: list[float] = []
    size = status = 0
    try:
        for i in range(runs + 2):
            t = time.perf_counter()
            con.request("GET", path)
            r = con.getresponse()
            body = r.read()
            if i >= 2:
                times.append((time.perf_counter() - t) * 1000)
            status, size = r.status, len(body)
    finally:
        con.close()
    times.sort()
    return {
        "path": path,
        "status": status,
        "bytes": size,
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 1),
        "max_ms": round(times[-1], 1),
    }


def biggest_session(host: str, port: int) -> dict[str, Any]:
    con = http.client.HTTPConnection(host, port, timeout=60)
    con.request("GET", "/api/sessions?range=all&limit=500&offset=0")
    doc = json.loads(con.getresponse().read())
    con.close()
    return max(doc["sessions"], key=lambda s: s["events"])


def browser_page(url: str) -> float | None:
    """Seconds until the big session's page shows its first events, in headless Chromium."""
    chromium = shutil.which("chromium")
    if not chromium:
        return None
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=args)
        page = b.new_page()
        page.goto(url)  # warm
        t = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("#events .ev")
        took = time.perf_counter() - t
        b.close()
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("home", type=Path)
    ap.add_argument("--db", type=Path)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--idle-seconds", type=float, default=30)
    ap.add_argument("--budget-ms", type=float, default=50)
    ap.add_argument("--skip-idle", action="store_true")
    a = ap.parse_args()
    db = a.db or a.home / "helix.db"
    state = Path(tempfile.mkdtemp(prefix="hx-bench-"))
    env = env_for(a.home, db, state, web=True)
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    proc = start(env)
    try:
        url = json.loads(ctl(env, "web", "--json").stdout)["url"]
        u = urlsplit(url)
        host, port = u.hostname or "127.0.0.1", u.port or 80
        big = biggest_session(host, port)
        uid = quote(big["uid"])
        paths = [
            "/api/health", "/api/status",
            "/api/sessions", "/api/sessions?range=30d&agent=claude", "/api/sessions?offset=1000",
            f"/api/sessions/{uid}", f"/api/sessions/{uid}/messages",
            f"/api/sessions/{uid}/messages?at={big['events'] // 2}",
            f"/api/sessions/{uid}/tool-calls", f"/api/sessions/{uid}/raw",
            "/api/search?q=refactor", "/api/search?q=test&prefix=1&limit=8",
            "/api/metrics/summary", "/api/metrics/summary?range=all",
            "/api/metrics/tokens?range=all&group=model", "/api/metrics/costs",
            "/api/metrics/costs?range=all&group=repo", "/api/metrics/tools?range=all",
            "/api/metrics/files?range=all", "/api/metrics/acceptance?range=all",
            "/api/metrics/tests?range=all", "/api/metrics/activity?range=1y",
            "/api/openapi.json",
            "/", "/sessions", f"/sessions/{uid}", "/search?q=refactor", "/files", "/tools",
            "/costs", "/tests",
        ]  # fmt: skip
        rows = [timed(host, port, p, a.runs) for p in paths]
        page_s = browser_page(url + f"sessions/{uid}")
    finally:
        stop(proc)
    idle_on = idle_off = None
    if not a.skip_idle:
        idle_on = idle(env, a.idle_seconds)
        idle_off = idle(env_for(a.home, db, state, web=False), a.idle_seconds)
    shutil.rmtree(state, ignore_errors=True)
    width = max(len(r["path"]) for r in rows)
    print(f"{'endpoint':<{width}}  status  p50 ms  p95 ms  max ms    bytes")
    for r in rows:
        flag = "  <-- over budget" if r["p95_ms"] > a.budget_ms else ""
        print(f"{r['path']:<{width}}  {r['status']:>6}  {r['p50_ms']:>6}  {r['p95_ms']:>6}"
              f"  {r['max_ms']:>6}  {r['bytes']:>7}{flag}")  # fmt: skip
    print(f"biggest session: {big['uid']} ({big['events']} events)")
    if page_s is not None:
        print(f"its page in headless Chromium: {page_s:.3f} s to the first events")
    if idle_on and idle_off:
        print(f"idle daemon, web on:  {idle_on}")
        print(f"idle daemon, web off: {idle_off}")
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    print(json.dumps({"endpoints": rows, "page_s": page_s, "idle_on": idle_on,
                      "idle_off": idle_off, "session": big["uid"], "events": big["events"]}),
          file=sys.stderr)  # fmt: skip
    over = [r for r in rows if r["p95_ms"] > a.budget_ms or r["status"] != 200]
    return 1 if over or (page_s is not None and page_s > 1.0) else 0


if __name__ == "__main__":
    sys.exit(main())

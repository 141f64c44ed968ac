"""Fleet benchmark: N simulated machines pushing their stores into one PostgreSQL at once.

1. A template store: the corpus HOME (``gen_corpus.py``) ingested once by ``helixctl
   ingest``, its Tier 1 then evicted (the machines' old history: Tier 2 stays whole), kept in
   ``--work`` for the next run.
2. A throwaway PostgreSQL (``tests/fleet/pgcluster.py``: initdb + pg_ctl on a Unix socket),
   its schema migrated as the owner, one login role per machine in ``helix_pusher`` (row-level
   security on, as deployed; ``--superuser`` pushes as the owner instead).
3. N copies of the template (each draws its own machine id at its first push), pushed at once
   by N ``helixctl fleet push`` processes: wall time, rows written on the server per second,
   outbox entries per second; every machine's rows on the server counted against its store.
4. End-to-end lag: N ``helixd`` daemons on those stores, ``fleet.push_seconds`` =
   ``--push-seconds``, each watching a HOME with one live session; a response line appended
   to every machine's session, ``--appends`` times, at random moments; the lag is from the
   write to its usage row being visible on the server (polled every 10 ms).
5. With ``--ingest-overhead R``: ``helixctl ingest`` of the corpus into fresh stores with the
   outbox off and on, alternating, R runs each (the triggers' cost on the write path).

    .venv/bin/python bench/gen_corpus.py --out /tmp/helix-bench/c13 --size 1.3GB --agent both
    .venv/bin/python bench/fleet.py /tmp/helix-bench/c13 --machines 10 --work /tmp/helix-fleet
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).parent))

from ccusage_baseline import corpus_env  # noqa: E402

from tests.fleet.pgcluster import Cluster, bindir  # noqa: E402

HELIXCTL = [sys.executable, "-m", "helixd.cli.main"]
PASSWORD = "bench-fleet-pw"
TIER2 = (
    "sessions",
    "digests",
    "usage",
    "usage_buckets",
    "tool_calls",
    "test_runs",
    "file_operations",
    "session_signals",
)
LIVE_SID = "be9c0000-0000-4000-8000-00000000f1ee"


def base_env() -> dict[str, str]:
    prefixes = ("HELIX_", "CLAUDE_", "CODEX_", "GEMINI_", "GROK_", "PG")
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def counts(db: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TIER2}
    finally:
        con.close()


def machine_stores(template: Path, work: Path, machines: int) -> list[Path]:
    """``machines`` copies of the template store, ``work/mNN/helix.db`` (made afresh)."""
    dbs = []
    for i in range(machines):
        d = work / f"m{i:02d}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        shutil.copyfile(template, d / "helix.db")
        dbs.append(d / "helix.db")
    return dbs


def make_template(home: Path, work: Path) -> Path:
    """The corpus ingested once, its raw lines and events then evicted."""
    db = work / "template.db"
    if db.exists():
        return db
    tmp = work / "template-building.db"
    env = {**base_env(), **corpus_env(home), "HELIX_STORE_DB": str(tmp)}
    t = time.monotonic()
    subprocess.run(
        [*HELIXCTL, "ingest", "--json"], env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL
    )
    print(f"template: ingested {home} in {time.monotonic() - t:.0f} s", flush=True)
    evict_env = {
        **env,
        "HELIX_RETENTION__RAW_SOFT_CAP_BYTES": "1",
        "HELIX_RETENTION__RAW_HARD_CAP_BYTES": "1",
        "HELIX_RETENTION__RAW_MAX_AGE_DAYS": "0",
        "HELIX_RETENTION__STAGE_PAYLOADS_FIRST": "false",
    }
    subprocess.run(
        [*HELIXCTL, "evict", "--json"],
        env=evict_env,
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    tmp.rename(db)
    print(f"template: Tier 1 evicted, {db.stat().st_size / 1e6:.0f} MB", flush=True)
    return db


def setup_server(machines: int, superuser: bool) -> tuple[Cluster, list[str]]:
    found = bindir()
    if found is None:
        raise SystemExit("PostgreSQL binaries not found (apt-get install postgresql)")
    cluster = Cluster(Cluster.make_base(), found).init()
    cluster.start()
    cluster.sql("CREATE DATABASE fleet")
    cluster.sql("CREATE ROLE helix_pusher NOLOGIN")
    cluster.sql("CREATE ROLE helix_reader NOLOGIN")
    roles = []
    for i in range(machines):
        role = "postgres" if superuser else f"m{i:02d}"
        if not superuser:
            cluster.sql(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}' IN ROLE helix_pusher")
        roles.append(role)
    env = {**base_env(), "HELIX_FLEET__DSN": cluster.dsn("fleet"), "HELIX_STORE_DB": "/nonexistent"}
    subprocess.run([*HELIXCTL, "fleet", "migrate"], env=env, cwd=REPO, check=True)
    return cluster, roles


def machine_env(cluster: Cluster, role: str, i: int, db: Path, **extra: str) -> dict[str, str]:
    return {
        **base_env(),
        "HOME": str(db.parent / "home"),
        "XDG_CONFIG_HOME": str(db.parent / "home" / ".config"),
        "HELIX_STATE_DIR": str(db.parent / "state"),
        "HELIX_SOCKET": str(Path(tempfile.gettempdir()) / f"hx-fleet-bench-{i}.sock"),
        "HELIX_STORE_DB": str(db),
        "HELIX_FLEET__DSN": cluster.dsn("fleet", role),
        "HELIX_FLEET_PASSWORD": PASSWORD,
        "HELIX_FLEET__MACHINE": f"machine-{i:02d}",
        "HELIX_FLEET__USER": f"user-{i % 4}",
        **extra,
    }


def concurrent_push(cluster: Cluster, roles: list[str], dbs: list[Path], batch_rows: int) -> None:
    procs = []
    start = time.monotonic()
    for i, db in enumerate(dbs):
        env = machine_env(cluster, roles[i], i, db, HELIX_FLEET__BATCH_ROWS=str(batch_rows))
        procs.append(
            subprocess.Popen(
                [*HELIXCTL, "fleet", "push", "--json"],
                env=env,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"push failed: {err}")
        results.append((time.monotonic() - start, json.loads(out)))
    wall = max(t for t, _ in results)
    rows = sum(r["rows"] for _, r in results)
    entries = sum(r["entries"] for _, r in results)
    per = [r["seconds"] for _, r in results]
    lags = [r["lag_ms"] / 1000 for _, r in results]
    print(f"machines          {len(dbs)} pushing at once (batch_rows {batch_rows})")
    print(f"wall              {wall:.1f} s (each push {min(per):.1f}-{max(per):.1f} s)")
    print(f"server rows       {rows:,} = {rows / wall:,.0f} rows/s")
    print(f"outbox entries    {entries:,} = {entries / wall:,.0f}/s")
    print(f"first-push lag    {max(lags):.1f} s (oldest change's age when confirmed)")
    local = counts(dbs[0])
    for table in TIER2:
        got = cluster.sql(f"SELECT count(*) FROM helix.{table} GROUP BY machine_id", dbname="fleet")
        want = [local[table]] * len(dbs) if local[table] else []
        assert sorted(r[0] for r in got) == want, (table, got, local[table])
    total = sum(local.values())
    print(f"checked           each machine's rows on the server = its store's ({total:,} each)")


def response(n: int) -> bytes:
    kind = "user" if n % 2 == 0 else "assistant"
    obj: dict[str, Any] = {
        "type": kind,
        "uuid": f"{LIVE_SID}-{n}",
        "parentUuid": f"{LIVE_SID}-{n - 1}" if n else None,
        "sessionId": LIVE_SID,
        "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}Z",
        "cwd": "/work/live",
        "message": {"role": kind, "content": "hello"},
    }
    if kind == "assistant":
        obj["message"] = {
            "id": f"msg_{n}",
            "model": "claude-sonnet-4-5",
            "role": kind,
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 100, "output_tokens": n},
        }
        obj["requestId"] = f"req_{n}"
    return (json.dumps(obj) + "\n").encode()


def live_lag(
    cluster: Cluster, roles: list[str], dbs: list[Path], every: float, appends: int
) -> None:
    import psycopg

    daemons = []
    files = []
    for i, db in enumerate(dbs):
        live = db.parent / "home" / ".claude" / "projects" / "-work-live"
        live.mkdir(parents=True, exist_ok=True)
        path = live / f"{LIVE_SID}.jsonl"
        path.write_bytes(response(0))
        files.append(path)
        env = machine_env(cluster, roles[i], i, db, HELIX_FLEET__PUSH_SECONDS=str(every))
        daemons.append(
            subprocess.Popen(
                [sys.executable, "-m", "helixd.daemon.app"],
                env=env,
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    uid = f"claude:{LIVE_SID}"
    lags: list[float] = []
    rng = random.Random(1)
    try:
        with psycopg.connect(cluster.dsn("fleet"), autocommit=True) as conn:

            def seen() -> dict[str, int]:
                rows = conn.execute(
                    "SELECT m.name, count(*) FROM helix.usage u JOIN helix.machines m"
                    " USING (machine_id) WHERE u.session_uid = %s GROUP BY 1",
                    (uid,),
                ).fetchall()
                return dict(rows)

            deadline = time.monotonic() + 120
            while len(
                conn.execute("SELECT 1 FROM helix.sessions WHERE uid = %s", (uid,)).fetchall()
            ) < len(dbs):
                if time.monotonic() > deadline:
                    raise SystemExit("the daemons did not push their live session")
                time.sleep(0.1)
            for k in range(appends):
                time.sleep(rng.uniform(0, every))
                written = {}
                for i, path in enumerate(files):
                    with path.open("ab") as f:
                        f.write(response(2 * k + 1) + response(2 * k + 2))
                    written[f"machine-{i:02d}"] = time.monotonic()
                pending = set(written)
                limit = time.monotonic() + 60
                while pending and time.monotonic() < limit:
                    now = time.monotonic()
                    got = seen()
                    for name in list(pending):
                        if got.get(name, 0) >= k + 1:
                            lags.append(now - written[name])
                            pending.discard(name)
                    time.sleep(0.01)
                if pending:
                    raise SystemExit(f"no push from {sorted(pending)} within 60 s")
    finally:
        for d in daemons:
            d.terminate()
        for d in daemons:
            d.wait(timeout=30)
    lags.sort()
    q = statistics.quantiles(lags, n=20)
    print(
        f"end-to-end lag    push_seconds {every:g}: p50 {statistics.median(lags):.2f} s,"
        f" p95 {q[18]:.2f} s, max {lags[-1]:.2f} s ({len(lags)} responses, line written ->"
        " row on the server)"
    )


def ingest_overhead(home: Path, work: Path, runs: int) -> None:
    import asyncio

    from helixd.store import outbox
    from helixd.store.database import Store, now_ms

    async def switch_on(db: Path) -> None:
        store = await Store.open(db)
        try:
            await store.call(outbox.switch_on, now_ms(), False)
        finally:
            await store.close()

    times: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    for r in range(runs):
        for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
            db = work / f"ingest-{mode}.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            if mode == "on":
                asyncio.run(switch_on(db))
            env = {**base_env(), **corpus_env(home), "HELIX_STORE_DB": str(db)}
            t = time.monotonic()
            proc = subprocess.Popen(
                [*HELIXCTL, "ingest", "--json"], env=env, cwd=REPO, stdout=subprocess.DEVNULL
            )
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = status  # reaped here
            if status != 0:
                raise SystemExit(f"helixctl ingest failed ({status})")
            times[mode].append((time.monotonic() - t, usage.ru_utime + usage.ru_stime))
    # CPU time (user + sys of the process) moves less than wall time on a shared machine.
    for mode, ts in times.items():
        wall = statistics.median(w for w, _ in ts)
        cpu = statistics.median(c for _, c in ts)
        each = ", ".join(f"{w:.1f}/{c:.1f}" for w, c in ts)
        print(f"ingest, outbox {mode:3}  median wall {wall:.2f} s, CPU {cpu:.2f} s ({each})")
    con = sqlite3.connect(work / "ingest-on.db")
    n = con.execute("SELECT count(*) FROM fleet_outbox").fetchone()[0]
    print(f"outbox entries    {n:,} after the ingest (one per Tier 2 row)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("home", type=Path, help="corpus HOME made by gen_corpus.py")
    ap.add_argument("--machines", type=int, default=10)
    ap.add_argument("--work", type=Path, default=Path("/var/tmp/helix-fleet-bench"))
    ap.add_argument("--batch-rows", type=int, default=1000)
    ap.add_argument("--push-seconds", type=float, default=1.0)
    ap.add_argument("--appends", type=int, default=10)
    ap.add_argument("--superuser", action="store_true", help="push as the owner (no RLS)")
    ap.add_argument("--ingest-overhead", type=int, default=0, metavar="RUNS")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.ingest_overhead:
        ingest_overhead(args.home, args.work, args.ingest_overhead)
        return 0
    template = make_template(args.home, args.work)
    c = counts(template)
    print(f"per machine       {c['sessions']:,} sessions, {sum(c.values()):,} Tier 2 rows ({c})")
    cluster, roles = setup_server(args.machines, args.superuser)
    try:
        dbs = machine_stores(template, args.work, args.machines)
        concurrent_push(cluster, roles, dbs, args.batch_rows)
        size = cluster.sql("SELECT pg_database_size('fleet')")[0][0]
        print(f"server database   {size / 1e6:,.0f} MB for {args.machines} machines")
        if args.appends:
            live_lag(cluster, roles, dbs, args.push_seconds, args.appends)
    finally:
        cluster.remove()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

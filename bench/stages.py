"""Where a first ingest's CPU goes: `helixctl ingest` in this process with per-stage CPU
timers (``time.thread_time`` of the thread each stage runs on, so the figures mean something
on a loaded machine, unlike the wall times).

Stages: the SQL of each group commit (the store thread; the critical path on a quiet
machine) and its parts (full-text index, usage, sessions, file rows), compression and row
preparation (executor threads), the event loop's share of the backfill, the digests.  The
parse workers' CPU is the ``children`` figure (``--workers 0``: parsed inline, every stage
in this process).  Also: each timer's number of calls (``COMMIT``'s is the number of
transactions), the kernel's share of the CPU (per thread too), and the bytes this process
wrote to storage (``/proc/self/io``: the WAL, the checkpoints' copies into the store file).
Exits 1 when the whole process (and its children) used more than ``--max-cpu`` seconds.

    .venv/bin/python bench/gen_corpus.py --size 200MB --agent both --out /tmp/x/c200
    .venv/bin/python bench/stages.py /tmp/x/c200 --workers 0
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from ccusage_baseline import corpus_env

T: dict[str, float] = {}
CALLS: dict[str, int] = {}


def timed(obj: Any, name: str, label: str) -> None:
    """Wrap a synchronous method: CPU of the calling thread, summed under ``label``."""
    fn = getattr(obj, name)
    T[label] = 0.0  # printed in the order wrapped

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            T[label] += time.thread_time() - start
            CALLS[label] = CALLS.get(label, 0) + 1

    setattr(obj, name, wrapper)


def timed_async(obj: Any, name: str, label: str) -> None:
    """Wrap a coroutine function: CPU of the event loop's thread while it ran (other tasks
    included: during an ingest there are none)."""
    fn: Callable[..., Any] = getattr(obj, name)
    T[label] = 0.0

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kw: Any) -> Any:
        start = time.thread_time()
        try:
            return await fn(*args, **kw)
        finally:
            T[label] += time.thread_time() - start

    setattr(obj, name, wrapper)


class ThreadCPU:
    """CPU per thread of this process (``/proc/self/task``, named by ``threading``), sampled
    every 0.1 s so that threads that end before the run does are counted too; summed by
    thread name (numbered pool threads under one name)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[str, float, float]] = {}  # tid -> name, CPU, of it sys
        self.stop = threading.Event()
        self.tick = 100.0 / os.sysconf("SC_CLK_TCK") / 100.0
        self.thread = threading.Thread(target=self._loop, name="stages-sampler", daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        names = {t.native_id: t.name for t in threading.enumerate()}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            known = self.seen.get(int(tid))
            name = names.get(int(tid)) or (known[0] if known else f"thread {tid}")
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) * self.tick
            self.seen[int(tid)] = (re.sub(r"_?\d+$", "", name), cpu, int(fields[12]) * self.tick)

    def _loop(self) -> None:
        while not self.stop.wait(0.1):
            self._sample()

    def totals(self) -> dict[str, tuple[float, float]]:
        """Thread name -> (CPU, of it in the kernel), the busiest first."""
        self.stop.set()
        self.thread.join()
        self._sample()
        out: dict[str, tuple[float, float]] = {}
        for name, cpu, sys_cpu in self.seen.values():
            total, kernel = out.get(name, (0.0, 0.0))
            out[name] = (total + cpu, kernel + sys_cpu)
        return dict(sorted(out.items(), key=lambda kv: -kv[1][0]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("home", type=Path, help="a corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--workers", type=int, default=None, help="parse workers (0: inline)")
    ap.add_argument("--evict", action="store_true", help="end with the retention pass")
    ap.add_argument("--max-cpu", type=float, default=None, help="exit 1 above this CPU (s)")
    args = ap.parse_args()
    home = args.home.resolve()
    tmp = tempfile.mkdtemp(prefix="helix-stages-")
    os.environ.update({**corpus_env(home), "HELIX_STORE_DB": f"{tmp}/helix.db"})
    from helixd.ingest import digest, pipeline
    from helixd.store import batch, database, search_write, usage_write, writer

    if args.workers is not None:
        pipeline.default_workers = lambda: args.workers
    timed(database.Store, "_commit_batches", "SQL (store thread)")
    timed(search_write.SearchIndexWriter, "index", "  full-text index")
    timed(usage_write.UsageWriter, "write", "  usage and summaries")
    timed(writer.Writer, "upsert_sessions", "  sessions")
    timed(writer.Writer, "write_file_part", "  raw block, file row")
    timed(writer.Writer, "_insert_session_events", "  events rows")
    timed(search_write.SearchIndexWriter, "flush", "  full-text flush (in commit)")
    timed(writer.Writer, "commit_transaction", "  COMMIT (pages to the WAL, checkpoints)")
    timed(batch.Batch, "prepare", "zstd + rows (executor threads)")
    timed_async(pipeline.Ingestor, "backfill", "backfill (event loop)")
    timed_async(digest, "analyze", "digests (event loop)")

    from helixd.cli.main import main as helixctl

    threads = ThreadCPU()
    t0 = time.perf_counter()
    argv = ["ingest", "--json"] + ([] if args.evict else ["--no-evict"])
    try:
        rc = helixctl(argv)  # (argparse since the CLI moved off click; ``.main`` is gone)
    except SystemExit as exc:
        if exc.code:
            raise
    else:
        if rc:
            print(f"helixctl ingest failed ({rc})", file=sys.stderr)
            return rc
    wall = time.perf_counter() - t0
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_self = own.ru_utime + own.ru_stime
    cpu_kids = kids.ru_utime + kids.ru_stime
    print(f"load {os.getloadavg()[0]:.1f}; wall {wall:.1f} s (not meaningful under load)")
    print(f"CPU {cpu_self + cpu_kids:.2f} s = this process {cpu_self:.2f} + workers {cpu_kids:.2f}")
    print(f"  kernel: this process {own.ru_stime:.2f} s, workers {kids.ru_stime:.2f} s")
    with open("/proc/self/io") as f:
        io = dict(line.split(": ") for line in f.read().splitlines())
    print(f"  this process wrote {int(io['write_bytes']) / 1e6:.0f} MB to storage")
    for label, seconds in T.items():
        print(f"  {label:40s} {seconds:7.2f} s CPU  ({CALLS.get(label, 0)} calls)")
    print("this process by thread (sampled every 0.1 s):")
    for name, (seconds, kernel) in threads.totals().items():
        if seconds >= 0.01:
            print(f"  {name:34s} {seconds:7.2f} s CPU (kernel {kernel:.2f})")
    if args.max_cpu is not None and cpu_self + cpu_kids > args.max_cpu:
        print(f"MISS: CPU {cpu_self + cpu_kids:.1f} s > {args.max_cpu} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

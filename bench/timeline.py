"""Where each core is busy over a first ingest: `helixctl ingest` in this process, every
thread of it and every child process (the parse workers) sampled every 50 ms from
``/proc/<pid>/task/*/stat``, and the phases of the run (start-up, the store's opening, the
backfill, the digests, the pool's end, the retention pass, the closing checkpoint) timed by
wrapping the functions that run them.

Prints each phase's wall time with the CPU each side used in it and how many cores were
busy on average, then a timeline in ``--bucket`` second steps (each column a share of one
core: the store thread, the event loop, this process's other threads, the workers), with the
writer's queue depth.  Exits 1 when the whole run's cores-busy average (CPU / wall) is below
``--min-busy`` (default 0: report only) — on two free cores a pipeline without serial parts
keeps it near 2.

    .venv/bin/python bench/timeline.py /tmp/x/c200 [--evict] [--bucket 1]
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from ccusage_baseline import corpus_env

TICK = 1.0 / os.sysconf("SC_CLK_TCK")
PHASES: list[tuple[str, float, float]] = []  # label, start, end (perf_counter)
QUEUES: list[Any] = []  # the writers made during the run (their queue depth is sampled)
INFLIGHT = [0]  # pieces submitted to the parse workers and not finished there yet
COMMITTING = [0]  # the store thread is in a backfill group's commit


def phase(obj: Any, name: str, label: str) -> None:
    """Wrap a coroutine function or a function: its wall interval is a phase."""
    fn: Callable[..., Any] = getattr(obj, name)
    import inspect

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*args, **kw)
            finally:
                PHASES.append((label, start, time.perf_counter()))

        setattr(obj, name, awrapper)
    else:

        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                PHASES.append((label, start, time.perf_counter()))

        setattr(obj, name, wrapper)


def _cpu(stat: str) -> float:
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) * TICK


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def _label(name: str) -> str:
    if name.startswith("helix-store"):
        return "store"
    if name == "MainThread":
        return "loop"
    return "other"


class Sampler:
    """Cumulative CPU per column every ``step`` seconds: this process's threads by role,
    its child processes (all their threads) as ``workers``."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.samples: list[tuple[float, dict[str, float], int, int, int, int]] = []
        self.names: dict[int, str] = {}
        self.last: dict[tuple[int, int], float] = {}  # (pid, tid) -> CPU: ended ones stay
        self.rss: dict[int, int] = {}  # pid -> peak resident KiB
        self.tree_rss = 0  # KiB, the peak of the sum over the processes
        self.page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
        self.stop = threading.Event()
        self.me = -1  # the sampler's own thread (not counted)
        self.thread = threading.Thread(target=self._loop, name="timeline-sampler", daemon=True)
        self.thread.start()

    def _read(self, pid: int) -> int:
        """Record ``pid``'s threads' CPU; its resident KiB."""
        try:
            tids = os.listdir(f"/proc/{pid}/task")
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * self.page_kib
        except OSError:
            return 0
        self.rss[pid] = max(self.rss.get(pid, 0), rss)
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    cpu = _cpu(f.read())
            except OSError:
                continue
            self.last[(pid, int(tid))] = cpu
        return rss

    def _sample(self) -> None:
        for t in threading.enumerate():
            if t.native_id is not None:
                self.names[t.native_id] = t.name
        me = os.getpid()
        rss = self._read(me) + sum(self._read(child) for child in _children(me))
        self.tree_rss = max(self.tree_rss, rss)
        cols = {"store": 0.0, "loop": 0.0, "other": 0.0, "workers": 0.0}
        for (pid, tid), cpu in self.last.items():
            if tid == self.me:
                continue
            col = _label(self.names.get(tid, "")) if pid == me else "workers"
            cols[col] += cpu
        depth = sum(q.queue.qsize() for q in QUEUES if not q.task.done())
        self.samples.append((time.perf_counter(), cols, depth, INFLIGHT[0], COMMITTING[0], rss))

    def _loop(self) -> None:
        self.me = threading.get_native_id()
        while not self.stop.wait(self.step):
            self._sample()

    def end(self) -> None:
        self.stop.set()
        self.thread.join()
        self._sample()

    def at(self, t: float) -> dict[str, float]:
        """The cumulative CPU per column at the last sample before ``t``."""
        best = self.samples[0][1]
        for when, cols, *_ in self.samples:
            if when > t:
                break
            best = cols
        return best


def main() -> int:
    tmp = tempfile.mkdtemp(prefix="helix-timeline-")
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the store (~0.5x the corpus)


def run(tmp: str) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("home", type=Path, help="a corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--evict", action="store_true", help="end with the retention pass")
    ap.add_argument("--bucket", type=float, default=1.0, help="timeline step, s")
    ap.add_argument("--step", type=float, default=0.05, help="sampling step, s")
    ap.add_argument("--min-busy", type=float, default=0.0, help="exit 1 below this average")
    args = ap.parse_args()
    home = args.home.resolve()
    os.environ.update(
        {
            **corpus_env(home),
            "HELIX_STORE_DB": f"{tmp}/helix.db",
            "HELIX_RETENTION__RAW_MAX_AGE_DAYS": "100000",
        }
    )
    sampler = Sampler(args.step)
    t0 = time.perf_counter()
    from helixd.cli import common, ingest
    from helixd.ingest import digest, eviction, groupwriter, parsepool, pipeline, plan
    from helixd.store import database

    init = groupwriter.GroupWriter.__init__

    def track(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        QUEUES.append(self)

    groupwriter.GroupWriter.__init__ = track  # type: ignore[method-assign]
    submit = parsepool.ParsePool.submit

    def counted(self: Any, job: Any) -> Any:
        INFLIGHT[0] += 1
        fut = submit(self, job)
        fut.add_done_callback(lambda _: INFLIGHT.__setitem__(0, INFLIGHT[0] - 1))
        return fut

    parsepool.ParsePool.submit = counted  # type: ignore[method-assign]
    commit = database.Store.commit_many

    async def committing(self: Any, batches: Any) -> Any:
        COMMITTING[0] = 1
        try:
            return await commit(self, batches)
        finally:
            COMMITTING[0] = 0

    database.Store.commit_many = committing  # type: ignore[method-assign]
    phase(common, "open_store", "open store")
    phase(ingest, "open_store", "open store")
    phase(plan, "plan", "plan (quick path)")
    phase(pipeline.Ingestor, "backfill", "backfill")
    phase(digest, "analyze", "digests")
    phase(pipeline.Ingestor, "close", "pool end")
    phase(eviction, "sweep_evict", "retention pass")
    phase(database.Store, "checkpoint", "closing checkpoint")
    phase(database.Store, "close", "store close")
    from helixd.cli.main import main as helixctl

    PHASES.append(("imports", t0, time.perf_counter()))
    argv = ["ingest", "--json"] + ([] if args.evict else ["--no-evict"])
    with tempfile.TemporaryFile("w+") as out:  # the summary is not what this prints
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            rc = helixctl(argv)
        except SystemExit as exc:
            rc = int(exc.code or 0)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
    t1 = time.perf_counter()
    sampler.end()
    if rc:
        print(f"helixctl ingest failed ({rc})", file=sys.stderr)
        return rc
    wall = t1 - t0
    total = sampler.samples[-1][1]
    cpu = sum(total.values())
    print(
        f"load {os.getloadavg()[0]:.1f}; wall {wall:.2f} s; CPU {cpu:.2f} s "
        f"({', '.join(f'{k} {v:.2f}' for k, v in total.items())}); "
        f"cores busy {cpu / wall:.2f} on average"
    )
    me = os.getpid()
    print(
        f"peak RSS: tree {sampler.tree_rss / 1024:.0f} MiB; this process "
        f"{sampler.rss.get(me, 0) / 1024:.0f} MiB, children "
        + ", ".join(f"{v / 1024:.0f}" for k, v in sampler.rss.items() if k != me)
        + " MiB"
    )
    print(
        f"{'phase':22s} {'from':>6s} {'wall':>6s}  {'store':>6s} {'loop':>6s} {'other':>6s}"
        f" {'workers':>7s}  cores"
    )
    marks = sorted(PHASES, key=lambda p: p[1])
    covered = 0.0
    for label, start, end in marks:
        a, b = sampler.at(start), sampler.at(end)
        d = {k: b[k] - a[k] for k in b}
        span = end - start
        covered += span if label not in ("open store", "closing checkpoint", "store close") else 0
        print(
            f"{label:22s} {start - t0:6.2f} {span:6.2f}  {d['store']:6.2f} {d['loop']:6.2f}"
            f" {d['other']:6.2f} {d['workers']:7.2f}  {sum(d.values()) / max(span, 1e-9):.2f}"
        )
    print(
        f"timeline (share of one core per {args.bucket:g} s; q: the writer's queue, mean;"
        " fly: pieces at the workers, mean; idle: share of samples with none; commit: share"
        " of samples in a group's commit; rss: the tree's peak, MiB):"
    )
    print(
        f"{'t':>6s} {'store':>5s} {'loop':>5s} {'other':>5s} {'work':>5s} {'sum':>5s}"
        f" {'q':>4s} {'fly':>4s} {'idle':>4s} {'commit':>6s} {'rss':>4s}"
    )
    prev = sampler.samples[0]
    edge = prev[0] + args.bucket
    seen: list[tuple[int, int, int, int]] = []
    for when, cols, depth, fly, comm, rss in sampler.samples[1:]:
        seen.append((depth, fly, comm, rss))
        if when < edge:
            continue
        span = when - prev[0]
        d = {k: (cols[k] - prev[1][k]) / span for k in cols}
        n = len(seen)
        idle = sum(1 for s in seen if s[1] == 0) / n
        print(
            f"{when - t0:6.1f} {d['store']:5.2f} {d['loop']:5.2f} {d['other']:5.2f}"
            f" {d['workers']:5.2f} {sum(d.values()):5.2f} {sum(s[0] for s in seen) / n:4.1f}"
            f" {sum(s[1] for s in seen) / n:4.1f} {idle:4.2f} {sum(s[2] for s in seen) / n:6.2f}"
            f" {max(s[3] for s in seen) / 1024:4.0f}"
        )
        prev, edge, seen = (when, cols, depth, fly, comm, rss), when + args.bucket, []
    back = [p for p in PHASES if p[0] == "backfill"]
    if back:
        inside = [s for s in sampler.samples if back[0][1] <= s[0] <= back[0][2]]
        idle_all = sum(1 for s in inside if s[3] == 0)
        n_all = len(inside)
        print(
            f"backfill: workers with no piece in {idle_all}/{n_all} samples"
            f" ({idle_all / max(n_all, 1):.0%}); 4 or more batches queued in"
            f" {sum(1 for s in inside if s[2] >= 4)}/{n_all}; in a commit in"
            f" {sum(1 for s in inside if s[4])}/{n_all}"
        )
    if cpu / wall < args.min_busy:
        print(f"MISS: cores busy {cpu / wall:.2f} < {args.min_busy}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

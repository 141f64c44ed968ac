"""The daemon's live ingest run in-process, without the watcher: ``--files`` files each
appended ``--lines`` lines, then read as the worker reads a group of changed paths (the
path gate's ``admit_all``, the cursors in one hop, ``Ingestor.ingest_files``), ``--runs``
times.  Prints the CPU (all threads) per 1 000 lines, its split by thread (the loop, the
store's thread, the default pool: ``/proc/self/task``) and the commits per run; exits 1
over ``--max-cpu`` seconds per 1 000 lines.

Few lines per file is the daemon's case when it keeps up (a file appended 20 times a
second, read every 50-100 ms), where the cost per file read weighs most.

    .venv/bin/python bench/liverun.py --files 200 --lines 2 --runs 30
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.live import record  # noqa: E402
from helixd.adapters.declared import claude  # noqa: E402
from helixd.core.commits import Commit  # noqa: E402
from helixd.ingest.pipeline import Ingestor, discover  # noqa: E402
from helixd.sources.gate import Gate  # noqa: E402
from helixd.store.database import Store  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> Counter[str]:
    """CPU seconds (user + system) of this process's threads by kind: the event loop
    (``MainThread``), the store's thread (``helix-store``), the default pool (``asyncio``)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: Counter[str] = Counter()
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(task.name), "other").split("_")[0]
        out[name] += (int(fields[11]) + int(fields[12])) / TICK
    return out


async def measure(
    tmp: Path, nfiles: int, lines: int, runs: int, by_thread: Counter[str] | None = None
) -> tuple[float, int, int]:
    """(CPU seconds, lines read, commits) over ``runs`` runs; ``by_thread`` gets the CPU
    of each kind of thread over the runs."""
    proj = tmp / ".claude/projects/-work-load"
    proj.mkdir(parents=True)
    files = [proj / f"{i:08d}-2222-4000-8000-000000000000.jsonl" for i in range(nfiles)]
    for f in files:
        f.write_bytes(record(f.stem, 0) + record(f.stem, 1))
    store = await Store.open(tmp / "helix.db")
    try:
        gate = Gate([(claude.ADAPTER, tmp / ".claude/projects")])
        await Ingestor(store, workers=0).backfill(discover(gate))
        commits: list[Commit] = []
        store.on_commit = commits.append
        written = dict.fromkeys(files, 2)
        cpu, read = 0.0, 0
        for _ in range(runs):
            for f in files:
                with f.open("ab") as fh:
                    fh.write(b"".join(record(f.stem, written[f] + i) for i in range(lines)))
                written[f] += lines
            c0, t0 = time.process_time(), thread_cpu()
            admitted, _ = await asyncio.to_thread(gate.admit_all, [str(f) for f in files])
            known = await store.cursors_for([s.path for s in admitted])
            stats = await Ingestor(store, workers=0).ingest_files(
                [(s, known.get(s.path)) for s in admitted], 64 << 20
            )
            cpu += time.process_time() - c0
            if by_thread is not None:
                by_thread.update(thread_cpu() - t0)
            read += stats.lines
        return cpu, read, len(commits)
    finally:
        await store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--lines", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--max-cpu", type=float, default=0.45, help="s per 1 000 lines")
    args = ap.parse_args()
    threads: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="helix-liverun-") as t:
        cpu, read, commits = asyncio.run(
            measure(Path(t), args.files, args.lines, args.runs, threads)
        )
    per = cpu * 1000 / max(read, 1)
    split = ", ".join(
        f"{name} {sec * 1000 / max(read, 1):.3f}" for name, sec in threads.most_common()
    )
    ok = read == args.files * args.lines * args.runs and per <= args.max_cpu
    print(
        f"{args.files} files x {args.lines} lines x {args.runs} runs: {read} lines read,"
        f" CPU {cpu:.2f} s = {per:.3f} s per 1 000 lines, {commits / args.runs:.1f} commits"
        f" per run {'ok' if ok else 'MISSED'} (<= {args.max_cpu:g} s per 1 000 lines);"
        f" by thread (s per 1 000 lines, clock ticks): {split}"
    )
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

"""The parse worker's work alone: ``parsepool.parse_piece`` (redact, parse, prepare rows,
compress) over every Claude and Codex transcript under a generated HOME, in the pipeline's
4 MiB reads, in this one process (no pool, no pickling, no store).  Prints the CPU seconds
(user + sys of this process, best of ``--runs``), MB/s and the pickled size of the results;
``--profile`` prints a cProfile of one run by own time; ``--hash`` prints the SHA-256 of the
``repr`` of every piece's result (parse result, rows, usage tuples, redacted bytes and the
compressed block), which must not change when an optimisation is meant to give the same
answers (the files' paths are part of the results: give both builds the same HOME path);
``--parts`` prints the CPU of each part of a piece's work (redaction, parse, rows, usage
tuples, zstd: the steps of ``parse_piece`` timed one by one, this thread's CPU).  Exits
1 when the best run used more than ``--max-cpu`` seconds.

    .venv/bin/python bench/gen_corpus.py --size 200MB --agent both --out /tmp/x/c200
    .venv/bin/python bench/parse_side.py /tmp/x/c200 --runs 3
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import resource
import sys
import time
from pathlib import Path

from helixd.adapters import Chunk, FileContext, adapter_named
from helixd.adapters.guard import parse_total
from helixd.core.redact import redact
from helixd.ingest.parsepool import _USAGE_FIELDS, PieceDone, PieceJob, parse_piece
from helixd.store.batch import compress_raw, prepare_event

READ_BYTES = 4 << 20  # the pipeline's chunk_bytes


def jobs(home: Path) -> list[tuple[str, Path, Path]]:
    """``(adapter, root, file)`` for every transcript, largest first (as a backlog runs)."""
    found: list[tuple[str, Path, Path]] = []
    for adapter, root in (
        ("claude", home / ".claude/projects"),
        ("codex", home / ".codex/sessions"),
    ):
        found += [(adapter, root, p) for p in sorted(root.rglob("*.jsonl"))]
    return found


def _context(root: Path, path: Path) -> FileContext:
    """The file's context as the pipeline gives it: path, path below its root, sidecar."""
    sidecar = path.with_suffix(".meta.json")
    return FileContext(
        str(path),
        path.relative_to(root).as_posix(),
        sidecar.read_bytes() if sidecar.exists() else None,
    )


def run_once(files: list[tuple[str, Path, Path]], keep: bool) -> tuple[int, list[PieceDone]]:
    total = 0
    results: list[PieceDone] = []
    for token, (adapter, root, path) in enumerate(files, 1):
        ctx = _context(root, path)
        state: dict[str, object] | None = {}
        carry = b""
        base = 0
        with path.open("rb") as f:
            while True:
                block = f.read(READ_BYTES)
                data = carry + block
                at_eof = len(block) < READ_BYTES
                if not data:
                    break
                done = parse_piece(PieceJob(token, adapter, data, base, at_eof, ctx, state))
                state = None
                consumed = done.parsed.consumed
                total += consumed
                base += consumed
                carry = data[consumed:]
                if keep:
                    results.append(done)
                if at_eof:
                    break
    return total, results


def parts(files: list[tuple[str, Path, Path]]) -> dict[str, float]:
    """This thread's CPU seconds in each step of ``parse_piece``, over every file."""
    spent = dict.fromkeys(("redact", "parse", "rows", "usage", "zstd"), 0.0)
    clock = time.thread_time
    for adapter, root, path in files:
        ctx = _context(root, path)
        state: dict[str, object] = {}
        carry = b""
        base = 0
        with path.open("rb") as f:
            while True:
                block = f.read(READ_BYTES)
                data = carry + block
                at_eof = len(block) < READ_BYTES
                if not data:
                    break
                t0 = clock()
                redacted, _ = redact(data)
                t1 = clock()
                parsed = parse_total(
                    adapter_named(adapter), Chunk(redacted, base, at_eof, ctx), state
                )
                t2 = clock()
                [prepare_event(ev) for ev in parsed.events]
                t3 = clock()
                [_USAGE_FIELDS(fact) for fact in parsed.usage]
                t4 = clock()
                if parsed.consumed:
                    compress_raw(redacted[: parsed.consumed])
                t5 = clock()
                for name, took in zip(
                    spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True
                ):
                    spent[name] += took
                state = parsed.state
                base += parsed.consumed
                carry = data[parsed.consumed :]
                if at_eof:
                    break
    return spent


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("home", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--max-cpu", type=float, default=float("inf"))
    ap.add_argument("--hash", action="store_true", help="print the results' SHA-256")
    ap.add_argument("--parts", action="store_true", help="print the CPU of each step")
    args = ap.parse_args()
    files = jobs(args.home)
    size, results = run_once(files[:3], keep=True)  # warm: imports, caches
    best = float("inf")
    for _ in range(args.runs):
        start = cpu()
        size, results = run_once(files, keep=False)
        best = min(best, cpu() - start)
        print(f"parse_piece: {cpu() - start:.2f} s CPU", flush=True)
    size, results = run_once(files, keep=True)
    pickled = sum(len(pickle.dumps(r, pickle.HIGHEST_PROTOCOL)) for r in results)
    if args.hash:
        digest = hashlib.sha256()
        for r in results:
            digest.update(repr(r).encode("utf-8", "surrogatepass"))
        print(f"results sha256 {digest.hexdigest()} ({len(results)} pieces)")
    print(
        f"{len(files)} files, {size / 1e6:.1f} MB parsed; best {best:.2f} s CPU = "
        f"{size / 1e6 / best:.1f} MB/s; results pickled {pickled / 1e6:.1f} MB"
    )
    if args.parts:
        spent = parts(files)
        each = ", ".join(f"{name} {took:.2f}" for name, took in spent.items())
        print(f"parts (s CPU): {each}; total {sum(spent.values()):.2f}")
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        run_once(files, keep=False)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(35)
    if best > args.max_cpu:
        print(f"MISS: {best:.2f} s > {args.max_cpu:.2f} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

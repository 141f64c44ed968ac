"""Helix and agentsview side by side, same corpus, same run, whole processes.

For each tool, on the corpus HOME made by ``bench/gen_corpus.py`` (Claude and Codex
sessions), in a fresh store each: the first ingest (agentsview: ``sync`` without its
daemon), the re-scan with nothing changed, a daily cost report and a full-text search for
a word of the corpus — wall time, CPU (user + sys of the whole process tree) and the tree's
peak RSS for the ingest, p50 over ``--runs`` for the rest.  Helix runs with the default
config (the store in HOME's data directory: a temporary HOME whose agent folders are
links to the corpus's, so nothing is written into the corpus) but for the age backstop of
the raw tier, lifted so that the generated (dated) corpus keeps its raw lines.  agentsview
keeps its data in ``AGENTSVIEW_DATA_DIR``.

Prints one table and exits 1 when Helix is slower than agentsview on any row (``--strict``)
or when a run fails.

    pip install agentsview            # into any venv; pass its binary with --agentsview
    .venv/bin/python bench/rival.py /tmp/helix-bench/c13 --agentsview /var/tmp/av/bin/agentsview
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backfill import run_tree

BIN = Path(sys.executable).parent
AGENT_DIRS = (".claude", ".codex")


def helix_home(corpus: Path, tmp: Path) -> Path:
    """A HOME whose agent folders are the corpus's (links), with its own data directory."""
    home = tmp / "helix-home"
    home.mkdir()
    for name in AGENT_DIRS:
        if (corpus / name).exists():
            (home / name).symlink_to((corpus / name).resolve())
    return home


def base_env(home: Path) -> dict[str, str]:
    keep = {"PATH", "LANG", "LC_ALL", "TZ", "TERM"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(home)
    return env


def timed(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, int]:
    """p50 wall of ``runs`` runs (after one warm-up) and the last exit code."""
    subprocess.run(argv, env=env, capture_output=True, check=False)
    samples, code = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        code = subprocess.run(argv, env=env, capture_output=True, check=False).returncode
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("corpus", type=Path, help="corpus HOME (bench/gen_corpus.py --out)")
    ap.add_argument("--agentsview", type=Path, default=shutil.which("agentsview"))
    ap.add_argument("--word", default="daemon", help="a word to search for")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--strict", action="store_true", help="exit 1 where Helix is slower")
    args = ap.parse_args()
    if args.agentsview is None or not Path(args.agentsview).exists():
        print("agentsview not found: pip install agentsview, then --agentsview PATH")
        return 1
    corpus = args.corpus.resolve()
    av = str(args.agentsview)
    rows: dict[str, dict[str, str]] = {}
    slower: list[str] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="helix-rival-") as tmp_s:
        tmp = Path(tmp_s)
        h_env = base_env(helix_home(corpus, tmp))
        # A generated corpus is dated months back: the age backstop (45 days by default) would
        # evict the raw tier the moment it is written.  Raw kept, as agentsview keeps its copy.
        h_env["HELIX_RETENTION__RAW_MAX_AGE_DAYS"] = "36500"
        a_env = {**base_env(corpus), "AGENTSVIEW_DATA_DIR": str(tmp / "av-data")}
        a_env["AGENTSVIEW_NO_DAEMON"] = "1"
        helixctl = str(BIN / "helixctl")

        first: dict[str, tuple[float, float, int, int]] = {}
        for tool, argv, env in (
            ("helix", [helixctl, "ingest", "--json"], h_env),
            ("agentsview", [av, "sync"], a_env),
        ):
            wall, cpu, peak, _, rc = run_tree(argv, env)
            first[tool] = (wall, cpu, peak, rc)
            if rc != 0:
                failed.append(f"{tool} first ingest exit {rc}")
        rows["first ingest wall / CPU / peak RSS"] = {
            t: f"{w:.1f} s / {c:.1f} s / {p / 1024:.0f} MiB" for t, (w, c, p, _) in first.items()
        }
        if first["helix"][0] > first["agentsview"][0]:
            slower.append("first ingest")

        h_re, h_rc = timed([helixctl, "ingest", "--json"], h_env, args.runs)
        a_re, a_rc = timed([av, "sync"], a_env, args.runs)  # no daemon: a one-shot sync
        rows["re-scan, nothing changed"] = {"helix": f"{h_re:.3f} s", "agentsview": f"{a_re:.3f} s"}
        if h_rc != 0 or a_rc != 0:
            failed.append(f"re-scan: exit helix {h_rc}, agentsview {a_rc}")
        if h_re > a_re:
            slower.append("re-scan")
        # agentsview answers search through its daemon (direct reads are refused): started
        # for the reads; Helix reads its store directly, no daemon.
        d_env = {k: v for k, v in a_env.items() if k != "AGENTSVIEW_NO_DAEMON"}
        subprocess.run([av, "daemon", "start"], env=d_env, capture_output=True, check=False)
        reads = {
            "daily report": (
                [helixctl, "report", "daily", "--json"],
                [av, "usage", "daily", "--no-sync", "--offline", "--all", "--json"],
            ),
            "search": (
                [helixctl, "search", args.word, "--json"],
                [av, "session", "search", args.word, "--fts"],
            ),
        }
        try:
            for name, (h_argv, a_argv) in reads.items():
                h, h_rc = timed(h_argv, h_env, args.runs)
                a, a_rc = timed(a_argv, d_env, args.runs)
                rows[name] = {"helix": f"{h:.3f} s", "agentsview": f"{a:.3f} s (daemon)"}
                if h_rc not in (0, 3) or a_rc != 0:
                    failed.append(f"{name}: exit helix {h_rc}, agentsview {a_rc}")
                if h > a:
                    slower.append(name)
        finally:
            subprocess.run([av, "daemon", "stop"], env=d_env, capture_output=True, check=False)
        store = h_env["HOME"] + "/.local/share/helix/helix.db"
        av_db = tmp / "av-data"
        helix_bytes = sum(
            p.stat().st_size for p in Path(store).parent.glob("helix.db*") if p.is_file()
        )
        av_bytes = sum(f.stat().st_size for f in av_db.rglob("*") if f.is_file())
        rows["store size"] = {
            "helix": f"{helix_bytes / 1e6:,.0f} MB (raw kept)",
            "agentsview": f"{av_bytes / 1e6:,.0f} MB",
        }
    width = max(len(k) for k in rows)
    print(f"{'':{width}}  {'helix':>30}  {'agentsview':>30}")
    for name, by in rows.items():
        print(f"{name:{width}}  {by['helix']:>30}  {by['agentsview']:>30}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    for f in failed:
        print("FAILED: " + f)
    if slower:
        print("helix slower on: " + ", ".join(slower))
    return 1 if failed or (args.strict and slower) else 0


if __name__ == "__main__":
    raise SystemExit(main())

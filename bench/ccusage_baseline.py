#!/usr/bin/env python3
"""Peer baseline: time ccusage over a corpus HOME and check its numbers against the manifest.

Installs ccusage into a scratch prefix outside the repo when it is missing (``npm install
--prefix PREFIX ccusage@VERSION @ccusage/codex``; 20.0.26 ships no linux binary, so 20.0.24 is
the default), then runs each report with
``TZ=UTC HOME=$H CLAUDE_CONFIG_DIR=$H/.claude CODEX_HOME=$H/.codex`` and prints wall seconds and
peak RSS (``/usr/bin/time -f`` when present, else ``os.wait4`` rusage). With a
``corpus-manifest.json`` in HOME (``bench/gen_corpus.py``), it compares totals, every day and
model, and every session::

    python bench/ccusage_baseline.py /tmp/helix-bench/c50 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verify_corpus

DEFAULT_PREFIX = Path("/tmp/helix-ccusage")
DEFAULT_VERSION = "20.0.24"
CLAUDE_FIELDS = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cacheCreationTokens", "cache_creation_input_tokens"),
    ("cacheReadTokens", "cache_read_input_tokens"),
)


@dataclass
class Timing:
    name: str
    argv: list[str]
    walls: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    output: str = ""
    returncode: int = 0


def corpus_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TZ": "UTC",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "NO_COLOR": "1",
    }


def ensure_ccusage(prefix: Path, version: str, reinstall: bool) -> dict[str, str]:
    bin_dir = prefix / "node_modules" / ".bin"
    if reinstall or not (bin_dir / "ccusage").exists():
        prefix.mkdir(parents=True, exist_ok=True)
        cmd = ["npm", "install", "--prefix", str(prefix), f"ccusage@{version}", "@ccusage/codex"]
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=sys.stderr)
    out = subprocess.run(
        [str(bin_dir / "ccusage"), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    versions = {"ccusage --version": out}
    for pkg in ("ccusage", "@ccusage/codex", "@ccusage/ccusage-linux-x64"):
        pj = prefix / "node_modules" / pkg / "package.json"
        if pj.exists():
            versions[pkg] = json.loads(pj.read_text())["version"]
    return versions


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, int, str, int]:
    """Run one command; return wall seconds, peak RSS in KiB (whole process tree), stdout, rc."""
    with tempfile.TemporaryFile("w+") as out:
        if Path("/usr/bin/time").exists():
            with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
                t0 = time.perf_counter()
                rc = subprocess.run(
                    ["/usr/bin/time", "-f", "%e %M", "-o", tf.name, *argv],
                    env=env,
                    stdout=out,
                    stderr=subprocess.DEVNULL,
                    check=False,
                ).returncode
                wall = time.perf_counter() - t0
                rss = int(tf.read().split()[-1])
        else:
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            rc, rss = proc.returncode, int(usage.ru_maxrss)
        out.seek(0)
        return wall, rss, out.read(), rc


def time_commands(
    cmds: list[tuple[str, list[str]]], env: dict[str, str], runs: int
) -> list[Timing]:
    timings = []
    for name, argv in cmds:
        t = Timing(name=name, argv=argv)
        run_once(argv, env)  # warm-up (page cache, pricing cache)
        for _ in range(runs):
            wall, rss, out, rc = run_once(argv, env)
            t.walls.append(wall)
            t.rss_kib.append(rss)
            t.output, t.returncode = out, rc
        timings.append(t)
    return timings


# --------------------------------------------------------------------------------------------
# comparison with the manifest


def ccusage_claude_session_key(rel: str) -> tuple[str, str]:
    """How ccusage 20.x names a Claude session: by path, not by the records' sessionId."""
    parts = rel.split("/")
    if len(parts) == 2:
        return parts[0], parts[1].removesuffix(".jsonl")
    if len(parts) >= 4 and parts[-2] == "subagents":
        return "/".join(parts[:-3]), parts[-3]
    return "/".join(parts[:-2]), parts[-2]


def claude_session_view(per_file: dict[str, list[int]]) -> dict[tuple[str, str], list[int]]:
    view: dict[tuple[str, str], list[int]] = {}
    for rel, vals in per_file.items():
        acc = view.setdefault(ccusage_claude_session_key(rel), [0, 0, 0, 0, 0])
        for i, v in enumerate(vals):
            acc[i] += v
    return {k: v[:4] for k, v in view.items() if v[4] > 0}


def compare_claude(home: Path, manifest: dict[str, Any], daily: Any, session: Any) -> list[str]:
    section = manifest["claude"]
    problems: list[str] = []
    want = section["totals"]
    for name, got_json in (("daily", daily), ("session", session)):
        got = got_json["totals"]
        for ck, mk in CLAUDE_FIELDS:
            if got[ck] != want[mk]:
                problems.append(f"claude {name} totals {ck}: ccusage {got[ck]} != {want[mk]}")
    days = {d["date"]: d for d in daily["daily"]}
    if set(days) != set(section["by_day"]):
        problems.append(f"claude daily: {len(days)} days vs {len(section['by_day'])} in manifest")
    for day, models in section["by_day_model"].items():
        row = days.get(day)
        if row is None:
            continue
        got_models = {b["modelName"]: b for b in row.get("modelBreakdowns", [])}
        for model, vals in models.items():
            b = got_models.get(model, {})
            for ck, mk in CLAUDE_FIELDS:
                if b.get(ck) != vals[mk]:
                    problems.append(f"claude daily {day} {model} {ck}: {b.get(ck)} != {vals[mk]}")
    root = home / manifest["claude_root"]
    ours = claude_session_view(verify_corpus.claude_truth(root, section["file_index"])["per_file"])
    path_order = claude_session_view(
        verify_corpus.claude_truth(root, section["file_index"], path_order=True)["per_file"]
    )
    got_sessions = {
        (s["projectPath"], s["sessionId"]): [s[ck] for ck, _ in CLAUDE_FIELDS]
        for s in session["sessions"]
    }
    diff_ours = sorted(
        k for k in got_sessions.keys() | ours.keys() if got_sessions.get(k) != ours.get(k)
    )
    diff_po = sorted(
        k
        for k in got_sessions.keys() | path_order.keys()
        if got_sessions.get(k) != path_order.get(k)
    )
    print(
        f"claude sessions: ccusage lists {len(got_sessions)}; manifest attribution (earliest "
        f"file) gives {len(ours)} non-empty, {len(diff_ours)} differ; path-order first-seen "
        f"attribution gives {len(path_order)}, {len(diff_po)} differ"
    )
    for k in diff_ours[:10]:
        print(f"  session {k}: ccusage {got_sessions.get(k)} manifest {ours.get(k)}")
    problems += [f"claude session {k} not explained by path-order attribution" for k in diff_po]
    return problems


def compare_codex(manifest: dict[str, Any], daily: Any, session: Any) -> list[str]:
    section = manifest["codex"]
    problems: list[str] = []

    def as_ccusage(m: dict[str, int]) -> dict[str, int]:
        return {
            "inputTokens": m["input_tokens"] - m["cached_input_tokens"],
            "cacheReadTokens": m["cached_input_tokens"],
            "outputTokens": m["output_tokens"],
            "reasoningOutputTokens": m["reasoning_output_tokens"],
            "totalTokens": m["total_tokens"],
        }

    def check(label: str, got: dict[str, Any] | None, want: dict[str, int]) -> None:
        exp = as_ccusage(want)
        if got is None or any(got.get(k) != v for k, v in exp.items()):
            shown = None if got is None else {k: got.get(k) for k in exp}
            problems.append(f"codex {label}: ccusage {shown} != {exp}")

    check("daily totals", daily["totals"], section["totals"])
    check("session totals", session["totals"], section["totals"])
    days = {d["date"]: d for d in daily["daily"]}
    for day, models in section["by_day_model"].items():
        for model, vals in models.items():
            check(f"daily {day} {model}", days.get(day, {}).get("models", {}).get(model), vals)
    got_sessions = {s["sessionId"]: s for s in session["sessions"]}
    expected = {
        rel.removesuffix(".jsonl"): f["tokens"]
        for rel, f in section["file_index"].items()
        if f["tokens"]["events"]
    }
    if set(got_sessions) != set(expected):
        problems.append(f"codex sessions: {len(got_sessions)} listed, {len(expected)} expected")
    for sid, toks in expected.items():
        check(f"session {sid}", got_sessions.get(sid), toks)
    print(
        f"codex sessions: ccusage lists {len(got_sessions)}, manifest has {len(expected)} "
        f"with usage ({section['sessions_without_usage']} rollouts have none)"
    )
    return problems


def compare_js_codex(manifest: dict[str, Any], session: Any) -> None:
    """@ccusage/codex 18.x reports inputTokens including cached input."""
    want = manifest["codex"]["totals"]
    got = session["totals"]
    ratio = got["inputTokens"] / max(1, want["input_tokens"])
    print(
        f"@ccusage/codex (JS) session totals: input {got['inputTokens']} vs manifest "
        f"{want['input_tokens']} ({ratio:.3f}x), output {got['outputTokens']} vs "
        f"{want['output_tokens']}"
    )


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("home", type=Path, help="corpus HOME with .claude/ and/or .codex/")
    p.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX, help="npm scratch prefix")
    p.add_argument("--version", default=DEFAULT_VERSION, help="ccusage version to install")
    p.add_argument("--reinstall", action="store_true")
    p.add_argument("--runs", type=int, default=3, help="timed runs per command (after warm-up)")
    p.add_argument("--js-codex", action="store_true", help="also time @ccusage/codex (JS 18.x)")
    p.add_argument("--no-compare", action="store_true")
    p.add_argument("--json-out", type=Path, help="write timings and comparison here")
    args = p.parse_args(argv)
    home = args.home.resolve()
    versions = ensure_ccusage(args.prefix, args.version, args.reinstall)
    print("versions:", versions)
    bin_dir = args.prefix / "node_modules" / ".bin"
    cc = str(bin_dir / "ccusage")
    cmds: list[tuple[str, list[str]]] = []
    if (home / ".claude" / "projects").is_dir():
        cmds += [
            (f"claude {r}", [cc, "claude", r, "--json", "--offline"]) for r in ("daily", "session")
        ]
    if (home / ".codex" / "sessions").is_dir():
        cmds += [
            (f"codex {r}", [cc, "codex", r, "--json", "--offline"]) for r in ("daily", "session")
        ]
        if args.js_codex:
            js = str(bin_dir / "ccusage-codex")
            cmds += [
                (f"@ccusage/codex {r}", [js, r, "--json", "--offline"])
                for r in ("daily", "session")
            ]
    size = sum(f.stat().st_size for f in home.rglob("*.jsonl"))
    print(f"corpus {home}: {size / 1e6:.1f} MB of .jsonl; {args.runs} runs + 1 warm-up each")
    timings = time_commands(cmds, corpus_env(home), args.runs)
    print(f"{'command':<24} {'wall median (min-max) s':>26} {'peak RSS MiB':>13}")
    for t in timings:
        med = statistics.median(t.walls)
        print(
            f"{t.name:<24} {med:>10.3f} ({min(t.walls):.3f}-{max(t.walls):.3f})"
            f" {max(t.rss_kib) / 1024:>13.0f}" + (f"  rc={t.returncode}" if t.returncode else "")
        )
    outputs = {t.name: json.loads(t.output) if t.returncode == 0 else None for t in timings}
    problems: list[str] = []
    manifest_path = home / "corpus-manifest.json"
    if not args.no_compare and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if "claude" in manifest and outputs.get("claude daily") and outputs.get("claude session"):
            problems += compare_claude(
                home, manifest, outputs["claude daily"], outputs["claude session"]
            )
        if "codex" in manifest and outputs.get("codex daily") and outputs.get("codex session"):
            problems += compare_codex(manifest, outputs["codex daily"], outputs["codex session"])
        if "codex" in manifest and outputs.get("@ccusage/codex session"):
            compare_js_codex(manifest, outputs["@ccusage/codex session"])
        for line in problems[:40]:
            print("MISMATCH", line)
        print(
            "ccusage agrees with the manifest: totals, every day x model, Codex sessions; Claude "
            "sessions once replayed prefixes go to the first file in path order"
            if not problems
            else f"{len(problems)} mismatches"
        )
    if args.json_out:
        args.json_out.write_text(
            json.dumps(
                {
                    "home": str(home),
                    "bytes": size,
                    "versions": versions,
                    "problems": problems,
                    "timings": [
                        {
                            "name": t.name,
                            "argv": t.argv[1:],
                            "walls": t.walls,
                            "peak_rss_kib": t.rss_kib,
                            "rc": t.returncode,
                        }
                        for t in timings
                    ],
                },
                indent=2,
            )
        )
    return 1 if problems else 0


if __name__ == "__main__":
    if shutil.which("npm") is None:
        sys.exit("npm not found")
    raise SystemExit(main())

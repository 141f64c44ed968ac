#!/usr/bin/env python3
"""Deterministic generator of a realistic synthetic agent-log corpus laid out as a HOME tree.

Claude Code sessions go to ``OUT/.claude/projects/<mangled-cwd>/<uuid>.jsonl`` (plus subagent
files under ``<uuid>/subagents/`` and a few legacy flat ``agent-<hex>.jsonl``), Codex rollouts to
``OUT/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``. ``OUT/corpus-manifest.json`` holds
the ground truth (deduplicated token totals per session, per file and per UTC day + model).

Same arguments give the same bytes and the same mtimes. Files are streamed; nothing holds the
corpus in memory. Example::

    python bench/gen_corpus.py --out /tmp/helix-bench/c1g --size 1GB --seed 20251120

Record shapes follow formats.md sections 3, 4, 9 and 11 (shared notes) and real files.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import math
import multiprocessing
import os
import random
import re
import shutil
import string
import sys
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

MANIFEST_NAME = "corpus-manifest.json"
MANIFEST_VERSION = 1
DAY_MS = 86_400_000
HUGE_LINE_BYTES = 5_200_000  # planned size of one ~5 MB tool-result line
SUBAGENT_BYTES = 150_000  # planned mean size of one subagent transcript
OVERSHOOT_BYTES = 35_000  # a session ends after the response that crosses its target

CLAUDE_MODELS = (
    ("claude-sonnet-4-5-20250929", 0.68),
    ("claude-opus-4-1-20250805", 0.20),
    ("claude-haiku-4-5-20251001", 0.12),
)
SUBAGENT_MODELS = (("claude-haiku-4-5-20251001", 0.5), ("claude-sonnet-4-5-20250929", 0.5))
CLAUDE_VERSIONS = ("2.0.8", "2.0.14", "2.0.21", "2.0.27", "2.0.31", "2.0.37", "2.0.42", "2.0.49")
CODEX_MODELS = (("gpt-5-codex", 0.7), ("gpt-5", 0.3))
CODEX_VERSIONS = ("0.42.0", "0.46.0", "0.50.0", "0.53.0", "0.58.0", "0.63.0")
AGENT_TYPES = ("general-purpose", "Explore", "Plan", "code-reviewer")
TOOLS = (("Bash", 35), ("Read", 30), ("Edit", 15), ("Grep", 12), ("Write", 5))

B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
HEX = "0123456789abcdef"


def _split(text: str) -> tuple[str, ...]:
    return tuple(text.split())


COMMON_WORDS = _split(
    "the of and to a in is it that for on with as this be are by from at or an not but can we if "
    "will use file function value test data should when code run error return new add fix check "
    "make need call type list name path line change update build config module class method "
    "import output input string number result case default option project source server client "
    "request response handle write read parse load save start stop create delete remove set get "
    "first next last all each any some other only also now then so just like into out up down "
    "because after before while where which what why how there here this those these them they "
    "you your our my its his her one two three still already again instead without within "
    "cursor offset batch commit index table query schema column row insert select migration "
    "daemon watcher tail session token usage cache budget evict digest store ingest parser"
)
NON_ASCII = (
    "café",
    "naïve",
    "→",
    "✅",
    "日本語",
    "Größe",
    "résumé",
    "…",
    "Ω",
    "über",
    "🙂",
    "données",
)
SYLLABLES = _split(
    "ka lo mi ra te su no vi pe da zu ri ga mo shi ta ne ko lu fa be xi qu ro sa di ve "
    "ar en il or un ex st tr pl gr cl br th ch sh ph"
)
IDENT_PARTS = _split(
    "user item node path key val idx buf conn ctx cfg req resp msg row col db tx lock "
    "stream chunk line size count total offset cursor state event queue task worker"
)
TYPES = ("int", "str", "bytes", "bool", "float", "Path", "dict[str, Any]", "list[str]", "None")
ERRORS = ("ValueError", "KeyError", "RuntimeError", "OSError", "TypeError", "TimeoutError")

SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
}

Usage = tuple[int, int, int, int]  # input, output, cache_creation, cache_read
# A generated line: raw bytes (with trailing newline), record type, replayable flag, and for
# assistant lines (msg key, model, day, usage, is_final_snapshot).
AsstInfo = tuple[str, str, str, Usage, bool]
Line = tuple[bytes, str, bool, AsstInfo | None]


# --------------------------------------------------------------------------------------------
# small helpers


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (use e.g. 200MB, 1GB, 512MiB)")
    return int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])


def parse_now(text: str) -> int:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def fmt_ts(ms: int) -> str:
    s, rem = divmod(ms, 1000)
    t = time.gmtime(s)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{rem:03d}Z"
    )


def fmt_day(ms: int) -> str:
    t = time.gmtime(ms // 1000)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"


def uuid4(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{HEX[8 + (int(h[16], 16) & 3)]}{h[17:20]}-{h[20:]}"


def uuid7(rng: random.Random, ms: int) -> str:
    t = f"{ms & ((1 << 48) - 1):012x}"
    r = f"{rng.getrandbits(80):020x}"
    return f"{t[:8]}-{t[8:]}-7{r[:3]}-{HEX[8 + (int(r[3], 16) & 3)]}{r[4:7]}-{r[8:20]}"


def b62(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(B62, k=n))


def hexid(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(HEX, k=n))


def weighted(rng: random.Random, items: tuple[tuple[str, float], ...]) -> str:
    return rng.choices([i[0] for i in items], weights=[i[1] for i in items])[0]


def mangle_cwd(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", cwd)


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


def lognormal_int(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(median * math.exp(rng.gauss(0.0, sigma)))))


# --------------------------------------------------------------------------------------------
# text pools (built once per run from the seed; shared with forked workers)


class Pools:
    def __init__(self, seed: str) -> None:
        rng = random.Random(f"{seed}:pools")
        pseudo: list[str] = []
        seen = set(COMMON_WORDS)
        while len(pseudo) < 6000:
            w = "".join(rng.choices(SYLLABLES, k=rng.randint(2, 4)))
            if w not in seen:
                seen.add(w)
                pseudo.append(w)
        vocab = list(COMMON_WORDS) + pseudo
        weights = [40.0] * len(COMMON_WORDS) + [1.0 / (1 + i / 300) for i in range(6000)]
        self.words = vocab
        self.prose = self._prose(rng, vocab, weights, 3_500_000)
        self.code = self._code(rng, vocab, 4_200_000)
        self.b64 = base64.b64encode(rng.randbytes(4_200_000)).decode("ascii")

    @staticmethod
    def _prose(rng: random.Random, vocab: list[str], weights: list[float], size: int) -> str:
        words = rng.choices(vocab, weights=weights, k=size // 6)
        out: list[str] = []
        n = 0
        sentence_left = rng.randint(6, 18)
        for w in words:
            if rng.random() < 0.01:
                w = rng.choice(NON_ASCII)
            sentence_left -= 1
            if sentence_left == 0:
                sentence_left = rng.randint(6, 18)
                w += "\n\n" if rng.random() < 0.15 else ". "
            else:
                w += " "
            out.append(w)
            n += len(w)
            if n >= size:
                break
        return "".join(out)

    @staticmethod
    def _code(rng: random.Random, vocab: list[str], size: int) -> str:
        def ident() -> str:
            return "_".join(rng.choices(IDENT_PARTS, k=rng.randint(1, 3)))

        def cap() -> str:
            return "".join(p.capitalize() for p in rng.choices(IDENT_PARTS, k=rng.randint(1, 3)))

        def words() -> str:
            return " ".join(rng.choices(vocab[:400], k=rng.randint(2, 8)))

        templates: list[Callable[[], str]] = [
            lambda: f"def {ident()}(self, {ident()}: {rng.choice(TYPES)}) -> {rng.choice(TYPES)}:",
            lambda: f"    return self.{ident()}.{ident()}({ident()}, {rng.randint(0, 999)})",
            lambda: f"    if {ident()} is None:",
            lambda: f'        raise {rng.choice(ERRORS)}("{words()}")',
            lambda: f"import {ident()}",
            lambda: f"from {ident()}.{ident()} import {cap()}",
            lambda: f"class {cap()}({cap()}):",
            lambda: f"    {ident()} = {rng.randint(0, 100000)}",
            lambda: f"# {words()}",
            lambda: f"const {ident()} = await {ident()}.{ident()}('{words()}');",
            lambda: f"  {ident()}: {rng.choice(TYPES)};",
            lambda: "}",
            lambda: "",
            lambda: f"    for {ident()} in {ident()}:",
            lambda: f"        {ident()}.append({ident()}[{rng.randint(0, 64)}])",
            lambda: f'logger.info("{words()}", {ident()}={ident()})',
            lambda: f"    assert {ident()} == {rng.randint(0, 9999)}, {ident()}",
            lambda: f"src/{ident()}/{ident()}.py:{rng.randint(1, 900)}: {words()}",
        ]
        out: list[str] = []
        n = 0
        while n < size:
            line = rng.choice(templates)()
            out.append(line)
            n += len(line) + 1
        return "\n".join(out) + "\n"

    def prose_slice(self, rng: random.Random, n: int) -> str:
        return _slice(self.prose, rng, n)

    def code_slice(self, rng: random.Random, n: int) -> str:
        return _slice(self.code, rng, n)

    def code_lines(self, rng: random.Random, n_chars: int) -> list[str]:
        text = _slice(self.code, rng, n_chars)
        return text.split("\n")

    def b64_slice(self, rng: random.Random, n: int) -> str:
        return _slice(self.b64, rng, n)

    def word(self, rng: random.Random) -> str:
        return rng.choice(self.words[:2500])


def _slice(pool: str, rng: random.Random, n: int) -> str:
    if n >= len(pool):
        reps = n // len(pool) + 1
        return (pool * reps)[:n]
    off = rng.randrange(0, len(pool) - n)
    return pool[off : off + n]


def number_lines(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, start))


# --------------------------------------------------------------------------------------------
# plan


@dataclass(frozen=True)
class Project:
    cwd: str
    dirname: str
    branches: tuple[str, ...]


@dataclass
class ClaudeSpec:
    index: int
    session_id: str
    project: int
    start_ms: int
    target_bytes: int
    model: str
    version: str
    seed: str
    one_hour_cache: bool
    thinking_p: float
    resume_of: int | None = None
    resume_frac: float = 0.0
    subagent_at: tuple[float, ...] = ()
    legacy_agent_at: tuple[float, ...] = ()
    huge_at: float | None = None
    summaries: int = 0


@dataclass
class CodexSpec:
    index: int
    session_id: str
    start_ms: int
    target_bytes: int
    model: str
    version: str
    cwd: str
    seed: str
    empty: bool = False
    gap_at: float | None = None


@dataclass
class Config:
    out: Path
    seed: str
    now_ms: int
    days: int
    partial_frac: float
    projects: list[Project]
    pools: Pools


def claude_version(now_ms: int, days: int, ms: int) -> str:
    span = max(1, days * DAY_MS)
    frac = min(0.999, max(0.0, (ms - (now_ms - span)) / span))
    return CLAUDE_VERSIONS[int(frac * len(CLAUDE_VERSIONS))]


def make_projects(rng: random.Random, pools: Pools, n: int) -> list[Project]:
    users = ("dev", "alex", "sam", "kim")
    projects: list[Project] = []
    seen: set[str] = set()
    while len(projects) < n:
        name = f"{pools.word(rng)}-{pools.word(rng)}"
        if rng.random() < 0.15:
            name = name.replace("-", "_") + rng.choice((".v2", ".io", "_app"))
        user = rng.choice(users)
        base = rng.choice((f"/home/{user}/src", f"/Users/{user}/code", f"/home/{user}/work"))
        cwd = f"{base}/{name}"
        if rng.random() < 0.1:
            cwd += f"/packages/{pools.word(rng)}"
        dirname = mangle_cwd(cwd)
        if dirname in seen:
            continue
        seen.add(dirname)
        branches = ("main",) + tuple(
            f"{rng.choice(('feature', 'fix', 'chore'))}/{pools.word(rng)}-{pools.word(rng)}"
            for _ in range(rng.randint(1, 4))
        )
        projects.append(Project(cwd=cwd, dirname=dirname, branches=branches))
    return projects


def plan_claude(
    rng: random.Random, budget: int, args: argparse.Namespace, now_ms: int, n_projects: int
) -> list[ClaudeSpec]:
    span = args.days * DAY_MS
    pweights = [1.0 / (1 + i) ** 0.9 for i in range(n_projects)]
    specs: list[ClaudeSpec] = []
    n_huge = max(1, round(budget / 100_000_000)) if budget >= 20_000_000 else 0
    total = n_huge * HUGE_LINE_BYTES
    while total < budget:
        start = now_ms - span + rng.randrange(0, max(1, span - 4 * DAY_MS))
        target = lognormal_int(rng, 260_000, 1.15, 6_000, 18_000_000)
        spec = ClaudeSpec(
            index=0,
            session_id=uuid4(rng),
            project=rng.choices(range(n_projects), weights=pweights)[0],
            start_ms=start,
            target_bytes=target,
            model=weighted(rng, CLAUDE_MODELS),
            version="",
            seed="",
            one_hour_cache=rng.random() < 0.7,
            thinking_p=rng.choice((0.2, 0.5, 0.7, 0.9)),
            summaries=rng.choice((0,) * 8 + (1, 3)),
        )
        if rng.random() < args.subagent_frac:
            spec.subagent_at = tuple(sorted(rng.random() * 0.9 for _ in range(rng.randint(1, 3))))
        if rng.random() < args.legacy_agent_frac:
            spec.legacy_agent_at = (rng.random() * 0.9,)
        specs.append(spec)
        agents = len(spec.subagent_at) + len(spec.legacy_agent_at)
        total += target + OVERSHOOT_BYTES + SUBAGENT_BYTES * agents
    specs.sort(key=lambda s: s.start_ms)
    for i, spec in enumerate(specs):
        spec.index = i
        spec.seed = f"{args.seed}:claude:{i}"
        spec.version = claude_version(now_ms, args.days, spec.start_ms)
    _plan_resumes(rng, specs, args.resume_frac)
    for spec in rng.sample(specs, min(n_huge, len(specs))):
        spec.huge_at = rng.random() * 0.8
    return specs


def _plan_resumes(rng: random.Random, specs: list[ClaudeSpec], frac: float) -> None:
    n = round(len(specs) * frac)
    candidates = [s for s in specs if s.index > 0]
    chosen = sorted(rng.sample(candidates, min(n, len(candidates))), key=lambda s: s.index)
    chosen_ids = {s.index for s in chosen}
    for spec in chosen:
        parents = [
            p
            for p in specs[: spec.index]
            if p.project == spec.project and p.index not in chosen_ids
        ] or [p for p in specs[: spec.index] if p.index not in chosen_ids]
        if not parents:
            continue
        parent = parents[-1] if rng.random() < 0.6 else rng.choice(parents)
        spec.project = parent.project
        spec.resume_of = parent.index
        spec.resume_frac = rng.uniform(0.3, 1.0)
        spec.target_bytes += int(parent.target_bytes * spec.resume_frac)
        spec.start_ms = max(spec.start_ms, parent.start_ms + rng.randint(600_000, 2 * DAY_MS))


def plan_codex(
    rng: random.Random, budget: int, args: argparse.Namespace, now_ms: int, cwds: list[str]
) -> list[CodexSpec]:
    span = args.days * DAY_MS
    specs: list[CodexSpec] = []
    total = 0
    while total < budget:
        start = now_ms - span + rng.randrange(0, max(1, span - 4 * DAY_MS))
        target = lognormal_int(rng, 420_000, 1.0, 4_000, 12_000_000)
        spec = CodexSpec(
            index=0,
            session_id="",
            start_ms=start,
            target_bytes=target,
            model=weighted(rng, CODEX_MODELS),
            version="",
            cwd=rng.choice(cwds),
            seed="",
            empty=rng.random() < 0.015,
            gap_at=rng.uniform(0.2, 0.8) if rng.random() < args.resume_frac else None,
        )
        specs.append(spec)
        total += 2_000 if spec.empty else target
    specs.sort(key=lambda s: s.start_ms)
    for i, spec in enumerate(specs):
        spec.index = i
        spec.seed = f"{args.seed}:codex:{i}"
        spec.session_id = uuid7(rng, spec.start_ms)
        frac = min(0.999, max(0.0, (spec.start_ms - (now_ms - span)) / span))
        spec.version = CODEX_VERSIONS[int(frac * len(CODEX_VERSIONS))]
    return specs


# --------------------------------------------------------------------------------------------
# results


@dataclass
class FileResult:
    path: str
    kind: str
    session_id: str
    bytes: int = 0
    lines: int = 0
    mtime_ns: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobResult:
    agent: str
    files: list[FileResult] = field(default_factory=list)
    sizes: array = field(default_factory=lambda: array("L"))  # type: ignore[type-arg]
    by_day_model: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    naive: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    types: dict[str, int] = field(default_factory=dict)


CLAUDE_TOKEN_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
CODEX_TOKEN_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


class FileWriter:
    """Streams lines to one file and does the per-file ground-truth bookkeeping."""

    def __init__(self, root: Path, rel: str, kind: str, session_id: str, job: JobResult) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "wb", buffering=1 << 20)  # noqa: SIM115
        self.path = path
        self.job = job
        self.res = FileResult(path=rel, kind=kind, session_id=session_id)
        self.res.tokens = {k: 0 for k in CLAUDE_TOKEN_KEYS} | {"responses": 0}
        self.last_ms = 0
        job.files.append(self.res)

    def write(self, line: Line, ms: int = 0, count_usage: bool = True) -> None:
        data, rtype, _, info = line
        self.fh.write(data)
        n = len(data)
        self.res.bytes += n
        self.res.lines += 1
        self.job.sizes.append(n - 1)
        self.job.types[rtype] = self.job.types.get(rtype, 0) + 1
        self.last_ms = max(self.last_ms, ms)
        if info is None:
            return
        _, model, day, usage, final = info
        naive = self.job.naive
        for i in range(4):
            naive[i] += usage[i]
        naive[4] += 1
        if final and count_usage:
            toks = self.res.tokens
            for key, v in zip(CLAUDE_TOKEN_KEYS, usage, strict=True):
                toks[key] += v
            toks["responses"] += 1
            acc = self.job.by_day_model.setdefault((day, model), [0, 0, 0, 0, 0])
            for i in range(4):
                acc[i] += usage[i]
            acc[4] += 1

    def close(self) -> None:
        self.fh.close()
        self.res.mtime_ns = self.last_ms * 1_000_000
        os.utime(self.path, ns=(self.res.mtime_ns, self.res.mtime_ns))


# --------------------------------------------------------------------------------------------
# Claude Code


def draw_result_chars(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.45:
        return rng.randint(40, 800)
    if r < 0.72:
        return rng.randint(800, 2_500)
    if r < 0.88:
        return rng.randint(2_500, 12_000)
    if r < 0.96:
        return rng.randint(12_000, 45_000)
    return rng.randint(45_000, 110_000)


class SideSink:
    """Where subagent files go. The replay mode (``write=False``) drops them."""

    def __init__(self, cfg: Config, job: JobResult | None, project_dir: str) -> None:
        self.cfg = cfg
        self.job = job
        self.project_dir = project_dir

    def open(self, rel: str, kind: str, session_id: str) -> FileWriter | None:
        if self.job is None:
            return None
        return FileWriter(
            self.cfg.out / ".claude" / "projects",
            f"{self.project_dir}/{rel}",
            kind,
            session_id,
            self.job,
        )


class ClaudeGen:
    """Generates the lines of one Claude Code transcript, turn by turn (pure given its seed)."""

    def __init__(
        self,
        cfg: Config,
        spec: ClaudeSpec,
        side: SideSink,
        *,
        seed: str | None = None,
        sidechain_agent: str | None = None,
        model: str | None = None,
    ) -> None:
        self.cfg = cfg
        self.pools = cfg.pools
        self.spec = spec
        self.side = side
        self.rng = random.Random(seed or spec.seed)
        project = cfg.projects[spec.project]
        self.cwd = project.cwd
        self.branch = self.rng.choice(project.branches)
        self.sid = spec.session_id
        self.version = spec.version
        self.model = model or spec.model
        self.agent_id = sidechain_agent
        self.clock = spec.start_ms
        self.parent: str | None = None
        self.ctx_tokens = self.rng.randint(9_000, 26_000)
        self.pending_tokens = 0
        self.bytes_out = 0
        self.stop_bytes = spec.target_bytes if sidechain_agent is None else 1 << 62
        self.turn_no = 0
        self.sub_done = 0
        self.legacy_done = 0
        self.huge_done = spec.huge_at is None

    # -- envelope and clock

    def tick(self, lo_ms: int, hi_ms: int) -> int:
        self.clock += self.rng.randint(lo_ms, hi_ms)
        return self.clock

    def env(self, rtype: str) -> dict[str, Any]:
        d: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": self.version,
            "gitBranch": self.branch,
        }
        if self.agent_id is not None:
            d["agentId"] = self.agent_id
        if rtype != "assistant":
            d["type"] = rtype
        return d

    def emit(
        self,
        out: list[Line],
        obj: dict[str, Any],
        rtype: str,
        *,
        replayable: bool = True,
        info: AsstInfo | None = None,
    ) -> bytes:
        data = dumps(obj)
        self.bytes_out += len(data)
        out.append((data, rtype, replayable, info))
        return data

    def finish_user(self, d: dict[str, Any], message: dict[str, Any]) -> str:
        uid = uuid4(self.rng)
        d["message"] = message
        d["uuid"] = uid
        d["timestamp"] = fmt_ts(self.clock)
        self.parent = uid
        return uid

    # -- turn

    def preamble(self) -> list[Line]:
        out: list[Line] = []
        for _ in range(self.spec.summaries):
            obj = {
                "type": "summary",
                "summary": self.pools.prose_slice(self.rng, self.rng.randint(30, 70)).strip(),
                "leafUuid": uuid4(self.rng),
            }
            self.emit(out, obj, "summary", replayable=False)
        return out

    def turn(self, max_steps: int | None = None, prompt: str | None = None) -> list[Line]:
        rng = self.rng
        out: list[Line] = []
        self.turn_no += 1
        if self.turn_no > 1:
            self.tick(20_000, 600_000)
        if self.agent_id is None and self.ctx_tokens > 150_000 and rng.random() < 0.8:
            self.compact(out)
        prompt_uuid = uuid4(rng)
        if self.agent_id is None and rng.random() < 0.85:
            self.emit(
                out,
                {
                    "type": "file-history-snapshot",
                    "messageId": prompt_uuid,
                    "snapshot": {
                        "messageId": prompt_uuid,
                        "trackedFileBackups": {},
                        "timestamp": fmt_ts(self.clock),
                    },
                    "isSnapshotUpdate": False,
                },
                "file-history-snapshot",
            )
        if prompt is None:
            n = lognormal_int(rng, 260, 1.0, 8, 6_000)
            if rng.random() < 0.03:
                n = rng.randint(6_000, 30_000)
            prompt = self.pools.prose_slice(rng, n).strip() or "continue"
        d = self.env("user")
        self.finish_user(d, {"role": "user", "content": prompt})
        d["uuid"] = prompt_uuid
        self.parent = prompt_uuid
        self.emit(out, d, "user")
        self.pending_tokens += len(prompt) // 4 + 40
        if self.agent_id is None and rng.random() < 0.05:
            self.queue_op(out)
        steps = max_steps or min(40, 1 + int(rng.expovariate(1 / 4.5)))
        turn_start = self.clock
        for step in range(steps):
            # a session that reached its size ends after this response
            last = step == steps - 1 or self.bytes_out >= self.stop_bytes
            self.step(out, last=last)
            if last:
                break
        if self.agent_id is None and rng.random() < 0.5:
            d = self.env("system")
            d.update(subtype="turn_duration", durationMs=self.clock - turn_start, isMeta=False)
            d["uuid"] = uuid4(rng)
            d["timestamp"] = fmt_ts(self.tick(5, 60))
            self.parent = d["uuid"]
            self.emit(out, d, "system")
        return out

    def compact(self, out: list[Line]) -> None:
        rng = self.rng
        d = self.env("system")
        d["parentUuid"] = None
        d.update(subtype="compact_boundary", content="Conversation compacted", isMeta=False)
        d["timestamp"] = fmt_ts(self.tick(1_000, 5_000))
        d["uuid"] = uuid4(rng)
        d["level"] = "info"
        d["logicalParentUuid"] = self.parent
        d["compactMetadata"] = {"trigger": "auto", "preTokens": self.ctx_tokens}
        self.parent = d["uuid"]
        self.emit(out, d, "system")
        u = self.env("user")
        summary = "This session is being continued from a previous conversation. " + (
            self.pools.prose_slice(rng, rng.randint(2_000, 9_000))
        )
        self.finish_user(u, {"role": "user", "content": summary})
        u["isVisibleInTranscriptOnly"] = True
        u["isCompactSummary"] = True
        self.emit(out, u, "user")
        self.ctx_tokens = rng.randint(15_000, 30_000)

    def queue_op(self, out: list[Line]) -> None:
        text = self.pools.prose_slice(self.rng, self.rng.randint(10, 200)).strip()
        for op in ("enqueue", "dequeue"):
            obj: dict[str, Any] = {
                "type": "queue-operation",
                "operation": op,
                "timestamp": fmt_ts(self.tick(200, 9_000)),
                "sessionId": self.sid,
            }
            if op == "enqueue":
                obj["content"] = text
            self.emit(out, obj, "queue-operation", replayable=False)

    # -- one API response + its tool results

    def step(self, out: list[Line], last: bool) -> None:
        rng = self.rng
        blocks: list[dict[str, Any]] = []
        out_chars = 0
        if rng.random() < self.spec.thinking_p:
            text = self.pools.prose_slice(rng, lognormal_int(rng, 500, 0.9, 20, 9_000))
            sig = "Eq" + self.pools.b64_slice(rng, rng.randint(300, 1_600))
            blocks.append({"type": "thinking", "thinking": text, "signature": sig})
            out_chars += len(text)
        if last or rng.random() < 0.55:
            n = lognormal_int(rng, 260 if not last else 600, 1.0, 10, 8_000)
            text = self.pools.prose_slice(rng, n).strip() or "Done."
            blocks.append({"type": "text", "text": text})
            out_chars += len(text)
        calls: list[dict[str, Any]] = []
        if not last:
            n_calls = 1 if rng.random() < 0.88 else rng.randint(2, 3)
            for _ in range(n_calls):
                call = self.tool_call()
                calls.append(call)
                blocks.append(call["block"])
                out_chars += len(orjson.dumps(call["block"]["input"]))
        self.response(out, blocks, out_chars, "tool_use" if calls else "end_turn")
        for call in calls:
            self.tool_result(out, call)

    def response(
        self, out: list[Line], blocks: list[dict[str, Any]], out_chars: int, stop: str
    ) -> None:
        rng = self.rng
        if rng.random() < 0.002 and self.agent_id is None:
            self.api_error(out)
        cc = max(30, self.pending_tokens + rng.randint(0, 400))
        usage_t: Usage = (
            rng.randint(1, 9) if rng.random() < 0.995 else rng.randint(10, 2_000),
            max(1, out_chars // 4 + rng.randint(5, 90)),
            cc,
            self.ctx_tokens,
        )
        self.ctx_tokens += cc + usage_t[1]
        self.pending_tokens = 0
        msg_id = "msg_01" + b62(rng, 22)
        req_id = "req_011C" + b62(rng, 20)
        partial = rng.random() < self.cfg.partial_frac and len(blocks) > 1
        snapshots = (
            sorted(rng.sample(range(1, usage_t[1]), len(blocks) - 1))
            if (partial and usage_t[1] > len(blocks))
            else []
        )
        self.tick(1_500, 25_000)
        day = fmt_day(self.clock)
        for i, block in enumerate(blocks):
            final = i == len(blocks) - 1
            out_tok = usage_t[1] if final or not snapshots else snapshots[i]
            u: Usage = (usage_t[0], out_tok, usage_t[2], usage_t[3])
            d = self.env("assistant")
            d["message"] = {
                "model": self.model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop if final else None,
                "stop_sequence": None,
                "usage": self.usage_obj(u),
            }
            d["requestId"] = req_id
            d["type"] = "assistant"
            uid = uuid4(rng)
            d["uuid"] = uid
            # keep every line of one response on the same UTC day as the first one
            if i:
                ms = self.clock + rng.randint(1, 400)
                if fmt_day(ms) == day:
                    self.clock = ms
            d["timestamp"] = fmt_ts(self.clock)
            self.parent = uid
            self.emit(out, d, "assistant", info=(f"{msg_id}:{req_id}", self.model, day, u, final))

    def usage_obj(self, u: Usage) -> dict[str, Any]:
        one_h = self.spec.one_hour_cache
        return {
            "input_tokens": u[0],
            "cache_creation_input_tokens": u[2],
            "cache_read_input_tokens": u[3],
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if one_h else u[2],
                "ephemeral_1h_input_tokens": u[2] if one_h else 0,
            },
            "output_tokens": u[1],
            "service_tier": "standard",
        }

    def api_error(self, out: list[Line]) -> None:
        d = self.env("assistant")
        d["type"] = "assistant"
        d["uuid"] = uuid4(self.rng)
        d["timestamp"] = fmt_ts(self.tick(30_000, 120_000))
        d["message"] = {
            "id": uuid4(self.rng),
            "container": None,
            "model": "<synthetic>",
            "role": "assistant",
            "stop_reason": "stop_sequence",
            "stop_sequence": "",
            "type": "message",
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": None,
                "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
            },
            "content": [{"type": "text", "text": "API Error: Request timed out"}],
        }
        d["error"] = "unknown"
        d["isApiErrorMessage"] = True
        self.parent = d["uuid"]
        self.emit(out, d, "assistant")

    # -- tools

    def want_huge(self) -> bool:
        if self.huge_done or self.spec.huge_at is None:
            return False
        if self.bytes_out >= self.spec.huge_at * self.spec.target_bytes:
            self.huge_done = True
            return True
        return False

    def want_subagent(self) -> str | None:
        if self.agent_id is not None:
            return None
        t = self.spec.target_bytes
        at = self.spec.subagent_at
        if self.sub_done < len(at) and self.bytes_out >= at[self.sub_done] * t:
            self.sub_done += 1
            return "new"
        lat = self.spec.legacy_agent_at
        if self.legacy_done < len(lat) and self.bytes_out >= lat[self.legacy_done] * t:
            self.legacy_done += 1
            return "legacy"
        return None

    def tool_call(self) -> dict[str, Any]:
        rng = self.rng
        tid = "toolu_01" + b62(rng, 22)
        layout = self.want_subagent()
        if layout is not None:
            desc = " ".join(self.pools.word(rng) for _ in range(rng.randint(2, 5)))
            prompt = self.pools.prose_slice(rng, rng.randint(200, 2_500)).strip()
            task = {"description": desc, "prompt": prompt, "subagent_type": rng.choice(AGENT_TYPES)}
            return {
                "block": {"type": "tool_use", "id": tid, "name": "Task", "input": task},
                "tool": "Task",
                "layout": layout,
            }
        tool = rng.choices([t[0] for t in TOOLS], weights=[t[1] for t in TOOLS])[0]
        inp: dict[str, Any]
        huge = self.want_huge()
        size = rng.randint(2_300_000, 2_700_000) if huge else draw_result_chars(rng)
        path = f"{self.cwd}/{self.pools.word(rng)}/{self.pools.word(rng)}.py"
        if huge and tool not in ("Read", "Bash"):
            tool = "Read"
        if tool == "Bash":
            inp = {
                "command": self.pools.code_slice(rng, rng.randint(10, 160)).strip() or "ls",
                "description": self.pools.prose_slice(rng, rng.randint(10, 60)).strip(),
            }
        elif tool == "Read":
            inp = {"file_path": path}
        elif tool == "Edit":
            inp = {
                "file_path": path,
                "old_string": self.pools.code_slice(rng, rng.randint(20, 1_500)),
                "new_string": self.pools.code_slice(rng, rng.randint(20, 2_000)),
            }
        elif tool == "Write":
            inp = {"file_path": path, "content": self.pools.code_slice(rng, size)}
        else:
            inp = {
                "pattern": self.pools.word(rng),
                "path": self.cwd,
                "output_mode": "files_with_matches",
            }
        return {
            "block": {"type": "tool_use", "id": tid, "name": tool, "input": inp},
            "tool": tool,
            "size": size,
            "huge": huge,
        }

    def tool_result(self, out: list[Line], call: dict[str, Any]) -> None:
        rng = self.rng
        tool = call["tool"]
        if tool == "Task":
            self.run_subagent(out, call)
            return
        self.tick(300, 40_000 if tool == "Bash" else 3_000)
        if self.agent_id is None and rng.random() < 0.15:
            self.hook_progress(out, call["block"]["id"], tool)
        content, result, is_error = self.result_payload(call)
        d = self.env("user")
        assistant_uuid = self.parent
        self.finish_user(
            d,
            {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": call["block"]["id"],
                        "type": "tool_result",
                        "content": content,
                        "is_error": is_error,
                    }
                ],
            },
        )
        d["toolUseResult"] = result
        d["sourceToolAssistantUUID"] = assistant_uuid
        self.emit(out, d, "user")
        self.pending_tokens += len(content) // 4 + 30 if isinstance(content, str) else 1_600

    def result_payload(self, call: dict[str, Any]) -> tuple[Any, Any, bool]:
        rng = self.rng
        tool, size, inp = call["tool"], call["size"], call["block"]["input"]
        if call["huge"] and rng.random() < 0.5:
            data = self.pools.b64_slice(rng, size)
            content = [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": data},
                }
            ]
            result = {
                "type": "image",
                "file": {"base64": data, "type": "image/png", "originalSize": size * 3 // 4},
            }
            return content, result, False
        if tool != "Write" and rng.random() < 0.06:
            err = "Exit code 1\n" + self.pools.code_slice(rng, min(size, 2_000))
            return err, "Error: " + err, True
        if tool == "Bash":
            text = self.pools.code_slice(rng, size)
            return (
                text,
                {"stdout": text, "stderr": "", "interrupted": False, "isImage": False},
                False,
            )
        if tool == "Read":
            lines = self.pools.code_lines(rng, max(1, size - size // 9))
            raw = "\n".join(lines)
            return (
                number_lines(lines),
                {
                    "type": "text",
                    "file": {
                        "filePath": inp["file_path"],
                        "content": raw,
                        "numLines": len(lines),
                        "startLine": 1,
                        "totalLines": len(lines),
                    },
                },
                False,
            )
        if tool == "Edit":
            snippet = self.pools.code_lines(rng, rng.randint(200, 1_200))
            msg = (
                f"The file {inp['file_path']} has been updated. Here's the result of running "
                f"`cat -n` on a snippet of the edited file:\n{number_lines(snippet, 40)}"
            )
            patch = [
                {
                    "oldStart": 40,
                    "oldLines": len(snippet),
                    "newStart": 40,
                    "newLines": len(snippet),
                    "lines": [" " + s for s in snippet],
                }
            ]
            return (
                msg,
                {
                    "filePath": inp["file_path"],
                    "oldString": inp["old_string"],
                    "newString": inp["new_string"],
                    "originalFile": self.pools.code_slice(rng, size),
                    "structuredPatch": patch,
                    "userModified": False,
                    "replaceAll": False,
                },
                False,
            )
        if tool == "Write":
            msg = f"File created successfully at: {inp['file_path']}"
            return (
                msg,
                {
                    "type": "create",
                    "filePath": inp["file_path"],
                    "content": inp["content"],
                    "structuredPatch": [],
                },
                False,
            )
        names = [
            f"{self.cwd}/{self.pools.word(rng)}/{self.pools.word(rng)}.py"
            for _ in range(max(1, min(400, size // 60)))
        ]
        return (
            f"Found {len(names)} files\n" + "\n".join(names),
            {"mode": "files_with_matches", "filenames": names, "numFiles": len(names)},
            False,
        )

    def hook_progress(self, out: list[Line], tool_id: str, tool: str) -> None:
        d = self.env("progress")
        d["data"] = {
            "type": "hook_progress",
            "hookEvent": "PostToolUse",
            "hookName": f"PostToolUse:{tool}",
            "command": "callback",
        }
        d["parentToolUseID"] = tool_id
        d["toolUseID"] = tool_id
        d["timestamp"] = fmt_ts(self.clock)
        d["uuid"] = uuid4(self.rng)
        self.emit(out, d, "progress")

    # -- subagents

    def run_subagent(self, out: list[Line], call: dict[str, Any]) -> None:
        rng = self.rng
        layout = call["layout"]
        inp = call["block"]["input"]
        agent_id = ("a" + hexid(rng, 16)) if layout == "new" else hexid(rng, 8)
        sub_seed = f"{self.spec.seed}:agent:{agent_id}"
        sub_model = weighted(random.Random(sub_seed), SUBAGENT_MODELS)
        sub = ClaudeGen(
            self.cfg, self.spec, self.side, seed=sub_seed, sidechain_agent=agent_id, model=sub_model
        )
        sub.clock = sub_start = self.clock + rng.randint(200, 3_000)
        sub.ctx_tokens = rng.randint(5_000, 14_000)
        sub.branch = self.branch
        sub.huge_done = True
        sub_lines = sub.turn(max_steps=rng.randint(3, 14), prompt=inp["prompt"])
        if layout == "new":
            rel = f"{self.sid}/subagents/agent-{agent_id}.jsonl"
        else:
            rel = f"agent-{agent_id}.jsonl"
        writer = self.side.open(rel, f"subagent_{layout}", self.sid)
        if writer is not None:
            for line in sub_lines:
                writer.write(line)
            writer.last_ms = sub.clock
            writer.close()
            if layout == "new":
                meta = writer.path.with_name(f"agent-{agent_id}.meta.json")
                meta.write_bytes(orjson.dumps({"agentType": inp["subagent_type"]}))
                os.utime(meta, ns=(writer.res.mtime_ns, writer.res.mtime_ns))
                writer.res.extra["meta"] = meta.name
        totals = [0, 0, 0, 0]
        seen_final = 0
        progress_keys: set[str] = set()
        for data, _, _, info in sub_lines:
            if info is None:
                continue
            # one agent_progress copy per API response (its first line), like Claude Code 2.x
            if layout == "new" and info[0] not in progress_keys:
                progress_keys.add(info[0])
                self.agent_progress(out, data, call["block"]["id"], agent_id, inp["prompt"])
            if info[4]:
                seen_final += 1
                for i in range(4):
                    totals[i] += info[3][i]
        self.clock = max(self.clock, sub.clock) + rng.randint(100, 2_000)
        summary = self.pools.prose_slice(rng, rng.randint(300, 3_000)).strip()
        d = self.env("user")
        assistant_uuid = self.parent
        self.finish_user(
            d,
            {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": call["block"]["id"],
                        "type": "tool_result",
                        "content": [{"type": "text", "text": summary}],
                    }
                ],
            },
        )
        d["toolUseResult"] = {
            "status": "completed",
            "prompt": inp["prompt"],
            "agentId": agent_id,
            "content": [{"type": "text", "text": summary}],
            "totalDurationMs": sub.clock - sub_start,
            "totalTokens": sum(totals),
            "totalToolUseCount": max(0, seen_final - 1),
            "usage": {
                "input_tokens": totals[0],
                "output_tokens": totals[1],
                "cache_creation_input_tokens": totals[2],
                "cache_read_input_tokens": totals[3],
            },
        }
        d["sourceToolAssistantUUID"] = assistant_uuid
        self.emit(out, d, "user")
        self.pending_tokens += len(summary) // 4 + 30

    def agent_progress(
        self, out: list[Line], line: bytes, tool_id: str, agent_id: str, prompt: str
    ) -> None:
        rec = orjson.loads(line)
        d = self.env("progress")
        d["data"] = {
            "message": {
                "type": "assistant",
                "timestamp": rec["timestamp"],
                "message": rec["message"],
                "requestId": rec["requestId"],
                "uuid": rec["uuid"],
            },
            "normalizedMessages": [],
            "type": "agent_progress",
            "prompt": prompt[:200],
            "agentId": agent_id,
        }
        d["toolUseID"] = f"agent_msg_{rec['message']['id']}"
        d["parentToolUseID"] = tool_id
        d["uuid"] = uuid4(self.rng)
        d["timestamp"] = rec["timestamp"]
        self.emit(out, d, "progress")


def claude_turns(gen: ClaudeGen) -> Iterator[list[Line]]:
    pre = gen.preamble()
    first = True
    while True:
        lines = gen.turn()
        if first:
            lines = pre + lines
            first = False
        yield lines


def run_claude_job(cfg: Config, specs: list[ClaudeSpec], index: int) -> JobResult:
    spec = specs[index]
    job = JobResult(agent="claude")
    project = cfg.projects[spec.project]
    root = cfg.out / ".claude" / "projects"
    side = SideSink(cfg, job, project.dirname)
    main = FileWriter(
        root,
        f"{project.dirname}/{spec.session_id}.jsonl",
        "resumed" if spec.resume_of is not None else "session",
        spec.session_id,
        job,
    )
    gen = ClaudeGen(cfg, spec, side)
    for line in gen.preamble():
        main.write(line, spec.start_ms)
    if spec.resume_of is not None:
        gen = _replay_prefix(cfg, specs[spec.resume_of], spec, main, gen)
    while True:
        for line in gen.turn():
            main.write(line, gen.clock)
        if main.res.bytes >= spec.target_bytes:
            break
    main.close()
    return job


def _replay_prefix(
    cfg: Config, parent: ClaudeSpec, spec: ClaudeSpec, main: FileWriter, own: ClaudeGen
) -> ClaudeGen:
    """Copy a prefix of the parent's transcript (sessionId rewritten), then continue it."""
    pgen = ClaudeGen(cfg, parent, SideSink(cfg, None, ""))
    old = f'"sessionId":"{parent.session_id}"'.encode()
    new = f'"sessionId":"{spec.session_id}"'.encode()
    goal = spec.resume_frac * parent.target_bytes
    copied_lines = 0
    copied_bytes = 0
    for turn in claude_turns(pgen):
        for data, rtype, replayable, info in turn:
            if not replayable:
                continue
            main.write(
                (data.replace(old, new), rtype, replayable, info), pgen.clock, count_usage=False
            )
            copied_lines += 1
            copied_bytes += len(data)
        if pgen.bytes_out >= goal or pgen.bytes_out >= parent.target_bytes:
            break
    main.res.extra.update(
        replayed_from=parent.session_id, replayed_lines=copied_lines, replayed_bytes=copied_bytes
    )
    own.clock = max(own.clock, pgen.clock + own.rng.randint(60_000, 3_600_000))
    own.parent = pgen.parent
    own.ctx_tokens = pgen.ctx_tokens
    own.turn_no = 1
    own.stop_bytes = spec.target_bytes - copied_bytes
    return own


# --------------------------------------------------------------------------------------------
# Codex


class CodexGen:
    def __init__(self, cfg: Config, spec: CodexSpec, writer: CodexWriter) -> None:
        self.cfg = cfg
        self.pools = cfg.pools
        self.spec = spec
        self.w = writer
        self.rng = random.Random(spec.seed)
        self.clock = spec.start_ms
        self.model = spec.model
        self.total = [0, 0, 0, 0, 0]
        self.ctx = self.rng.randint(6_000, 14_000)
        self.prev_input = 0
        self.prev_last = [0, 0, 0, 0, 0]
        self.turn_id = ""

    def tick(self, lo: int, hi: int) -> str:
        self.clock += self.rng.randint(lo, hi)
        return fmt_ts(self.clock)

    def rec(
        self,
        rtype: str,
        payload: dict[str, Any],
        ts: str | None = None,
        tokens: list[int] | None = None,
    ) -> None:
        obj = {"timestamp": ts or fmt_ts(self.clock), "type": rtype, "payload": payload}
        self.w.write(
            dumps(obj),
            rtype if rtype != "event_msg" else f"event_msg:{payload['type']}",
            self.clock,
            tokens,
            self.model,
        )

    def run(self) -> None:
        rng = self.rng
        spec = self.spec
        self.rec(
            "session_meta",
            {
                "id": spec.session_id,
                "timestamp": fmt_ts(self.clock),
                "cwd": spec.cwd,
                "originator": rng.choice(("codex_cli_rs",) * 4 + ("codex_vscode",)),
                "cli_version": spec.version,
                "instructions": None,
                "source": "cli",
                "model_provider": "openai",
                "git": {
                    "commit_hash": hexid(rng, 40),
                    "branch": "main",
                    "repository_url": f"git@example.invalid:{self.pools.word(rng)}.git",
                },
            },
        )
        self.message("developer", self.pools.prose_slice(rng, rng.randint(2_000, 6_000)))
        self.message(
            "user",
            "<environment_context>\n  <cwd>" + spec.cwd + "</cwd>\n"
            "  <approval_policy>on-request</approval_policy>\n"
            "  <sandbox_mode>workspace-write</sandbox_mode>\n</environment_context>",
        )
        if spec.empty:
            self.user_prompt()
            self.turn_context()
            return
        gapped = spec.gap_at is None
        while self.w.bytes < spec.target_bytes:
            if not gapped and self.w.bytes >= (spec.gap_at or 0) * spec.target_bytes:
                gapped = True
                self.clock += rng.randint(3 * 3_600_000, 3 * DAY_MS)
            self.turn()

    def message(self, role: str, text: str) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        self.rec(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
        )

    def user_prompt(self) -> None:
        text = self.pools.prose_slice(self.rng, lognormal_int(self.rng, 220, 1.0, 5, 8_000))
        self.turn_id = uuid7(self.rng, self.clock)
        self.rec(
            "event_msg",
            {"type": "task_started", "turn_id": self.turn_id, "model_context_window": 272_000},
        )
        self.message("user", text)
        self.rec(
            "event_msg",
            {
                "type": "user_message",
                "message": text,
                "images": [],
                "local_images": [],
                "text_elements": [],
            },
        )
        self.ctx += len(text) // 4

    def turn_context(self) -> None:
        self.rec(
            "turn_context",
            {
                "turn_id": self.turn_id,
                "cwd": self.spec.cwd,
                "approval_policy": "on-request",
                "sandbox_policy": {
                    "type": "workspace-write",
                    "writable_roots": [self.spec.cwd],
                    "network_access": False,
                    "exclude_tmpdir_env_var": False,
                    "exclude_slash_tmp": False,
                },
                "model": self.model,
                "effort": "medium",
                "summary": "auto",
            },
        )

    def turn(self) -> None:
        rng = self.rng
        self.tick(30_000, 900_000)
        if rng.random() < 0.04:
            self.model = weighted(rng, CODEX_MODELS)
        self.user_prompt()
        self.turn_context()
        if rng.random() < 0.5:
            self.token_count(None)
        steps = min(30, 1 + int(rng.expovariate(1 / 5)))
        for step in range(steps):
            last = step == steps - 1 or self.w.bytes >= self.spec.target_bytes
            self.tick(1_000, 20_000)
            summary = self.pools.prose_slice(rng, rng.randint(20, 300)).strip()
            self.rec("event_msg", {"type": "agent_reasoning", "text": summary})
            self.rec(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}],
                    "content": None,
                    "encrypted_content": "gAAAAA"
                    + self.pools.b64_slice(rng, rng.randint(600, 4_000)),
                },
            )
            if last or rng.random() < 0.4:
                n = lognormal_int(rng, 300 if not last else 900, 0.9, 10, 8_000)
                text = self.pools.prose_slice(rng, n).strip() or "Done."
                self.rec("event_msg", {"type": "agent_message", "message": text})
                self.rec(
                    "response_item",
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    },
                )
            call_id = "call_" + b62(rng, 24)
            if not last:
                cmd = self.pools.code_slice(rng, rng.randint(8, 200)).strip() or "ls"
                self.rec(
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "shell",
                        "arguments": orjson.dumps(
                            {"command": ["bash", "-lc", cmd], "workdir": self.spec.cwd}
                        ).decode(),
                        "call_id": call_id,
                    },
                )
            self.token_count(self.advance())
            if last:
                break
            self.tick(200, 30_000)
            out = self.pools.code_slice(rng, draw_result_chars(rng))
            self.rec(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": orjson.dumps(
                        {
                            "output": out,
                            "metadata": {
                                "exit_code": 0 if rng.random() < 0.93 else 1,
                                "duration_seconds": round(rng.random() * 5, 1),
                            },
                        }
                    ).decode(),
                },
            )
            self.ctx += len(out) // 4
            self.turn_context()
            if rng.random() < 0.6:
                self.token_count(None, reemit=True)
        self.rec(
            "event_msg",
            {"type": "task_complete", "turn_id": self.turn_id, "last_agent_message": None},
        )

    def advance(self) -> list[int]:
        """One model call: the previous call's prompt is the cached prefix (sometimes missed)."""
        rng = self.rng
        inp = self.ctx + rng.randint(50, 600)
        cached = 0 if rng.random() < 0.04 else min(inp, (self.prev_input // 256) * 256)
        out = rng.randint(20, 1_800)
        reasoning = int(out * rng.uniform(0.0, 0.8))
        last = [inp, cached, out, reasoning, inp + out]
        self.ctx = inp + out
        self.prev_input = inp
        return last

    def token_count(self, last: list[int] | None, reemit: bool = False) -> None:
        limits = {
            "primary": {
                "used_percent": round(self.rng.random() * 60, 1),
                "window_minutes": 300,
                "resets_in_seconds": 9_000,
            },
            "secondary": {
                "used_percent": round(self.rng.random() * 40, 1),
                "window_minutes": 10_080,
                "resets_in_seconds": 400_000,
            },
        }
        if last is None and not reemit:
            self.rec("event_msg", {"type": "token_count", "info": None, "rate_limits": limits})
            return
        tokens: list[int] | None = None
        if last is None:
            last = self.prev_last
        else:
            self.total = [a + b for a, b in zip(self.total, last, strict=True)]
            self.prev_last = last
            tokens = last
        info = {
            "total_token_usage": dict(zip(CODEX_TOKEN_KEYS, self.total, strict=True)),
            "last_token_usage": dict(zip(CODEX_TOKEN_KEYS, last, strict=True)),
            "model_context_window": 272_000,
        }
        self.rec(
            "event_msg", {"type": "token_count", "info": info, "rate_limits": limits}, tokens=tokens
        )


class CodexWriter:
    def __init__(self, root: Path, rel: str, session_id: str, job: JobResult) -> None:
        self.path = root / rel
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.path, "wb", buffering=1 << 20)  # noqa: SIM115
        self.job = job
        self.res = FileResult(path=rel, kind="rollout", session_id=session_id)
        self.res.tokens = {k: 0 for k in CODEX_TOKEN_KEYS} | {"events": 0}
        self.bytes = 0
        self.last_ms = 0
        job.files.append(self.res)

    def write(self, data: bytes, rtype: str, ms: int, tokens: list[int] | None, model: str) -> None:
        self.fh.write(data)
        self.bytes += len(data)
        self.res.lines += 1
        self.job.sizes.append(len(data) - 1)
        self.job.types[rtype] = self.job.types.get(rtype, 0) + 1
        self.last_ms = max(self.last_ms, ms)
        if rtype == "event_msg:token_count":
            self.job.naive[4] += 1
        if tokens is None:
            return
        for key, v in zip(CODEX_TOKEN_KEYS, tokens, strict=True):
            self.res.tokens[key] += v
        self.res.tokens["events"] += 1
        acc = self.job.by_day_model.setdefault((fmt_day(ms), model), [0, 0, 0, 0, 0, 0])
        for i, v in enumerate(tokens):
            acc[i] += v
        acc[5] += 1

    def close(self) -> None:
        self.fh.close()
        self.res.bytes = self.bytes
        self.res.mtime_ns = self.last_ms * 1_000_000
        os.utime(self.path, ns=(self.res.mtime_ns, self.res.mtime_ns))


def run_codex_job(cfg: Config, specs: list[CodexSpec], index: int) -> JobResult:
    spec = specs[index]
    job = JobResult(agent="codex")
    t = time.gmtime(spec.start_ms // 1000)
    rel = (
        f"{t.tm_year:04d}/{t.tm_mon:02d}/{t.tm_mday:02d}/rollout-"
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}-{t.tm_min:02d}-"
        f"{t.tm_sec:02d}-{spec.session_id}.jsonl"
    )
    writer = CodexWriter(cfg.out / ".codex" / "sessions", rel, spec.session_id, job)
    CodexGen(cfg, spec, writer).run()
    writer.close()
    return job


# --------------------------------------------------------------------------------------------
# driver

_WORKER: dict[str, Any] = {}


def _work(task: tuple[str, int]) -> JobResult:
    agent, index = task
    cfg: Config = _WORKER["cfg"]
    if agent == "claude":
        return run_claude_job(cfg, _WORKER["claude"], index)
    return run_codex_job(cfg, _WORKER["codex"], index)


def percentiles(sizes: list[int]) -> dict[str, int]:
    if not sizes:
        return {}
    sizes.sort()
    n = len(sizes)

    def p(q: float) -> int:
        return sizes[min(n - 1, int(q * n))]

    return {
        "p50": p(0.5),
        "p90": p(0.9),
        "p99": p(0.99),
        "p999": p(0.999),
        "max": sizes[-1],
        "over_50kb": n - bisect.bisect_right(sizes, 50_000),
        "over_1mb": n - bisect.bisect_right(sizes, 1_000_000),
    }


class Aggregate:
    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.files: list[FileResult] = []
        self.sizes: list[int] = []
        self.by_day_model: dict[tuple[str, str], list[int]] = {}
        self.naive = [0, 0, 0, 0, 0]
        self.types: dict[str, int] = {}

    def add(self, job: JobResult) -> None:
        self.files.extend(job.files)
        self.sizes.extend(job.sizes)
        for key, vals in job.by_day_model.items():
            acc = self.by_day_model.setdefault(key, [0] * len(vals))
            for i, v in enumerate(vals):
                acc[i] += v
        for i, v in enumerate(job.naive):
            self.naive[i] += v
        for k, v in job.types.items():
            self.types[k] = self.types.get(k, 0) + v

    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def manifest(self) -> dict[str, Any]:
        keys = CLAUDE_TOKEN_KEYS if self.agent == "claude" else CODEX_TOKEN_KEYS
        count_key = "responses" if self.agent == "claude" else "events"
        by_day: dict[str, dict[str, int]] = {}
        by_day_model: dict[str, dict[str, dict[str, int]]] = {}
        totals = {k: 0 for k in keys} | {count_key: 0}
        for (day, model), vals in sorted(self.by_day_model.items()):
            row = dict(zip(keys, vals, strict=False)) | {count_key: vals[-1]}
            by_day_model.setdefault(day, {})[model] = row
            agg = by_day.setdefault(day, {k: 0 for k in row})
            for k, v in row.items():
                agg[k] += v
                totals[k] += v
        sessions: dict[str, dict[str, Any]] = {}
        for f in self.files:
            s = sessions.setdefault(f.session_id, {"files": []} | {k: 0 for k in f.tokens})
            s["files"].append(f.path)
            for k, v in f.tokens.items():
                s[k] += v
        out: dict[str, Any] = {
            "files": len(self.files),
            "bytes": sum(f.bytes for f in self.files),
            "lines": len(self.sizes),
            "line_size": percentiles(self.sizes),
            "file_size": percentiles([f.bytes for f in self.files]),
            "record_types": dict(sorted(self.types.items())),
            "totals": totals,
            "by_day": by_day,
            "by_day_model": by_day_model,
            "sessions": sessions,
            "file_index": {
                f.path: {
                    "kind": f.kind,
                    "session_id": f.session_id,
                    "bytes": f.bytes,
                    "lines": f.lines,
                    "mtime_ns": f.mtime_ns,
                    "tokens": f.tokens,
                }
                | f.extra
                for f in self.files
            },
        }
        if self.agent == "claude":
            out["naive_per_line"] = dict(zip(keys, self.naive[:4], strict=True)) | {
                "assistant_lines_with_usage": self.naive[4]
            }
            out["project_dirs"] = len({f.path.split("/")[0] for f in self.files})
        else:
            out["token_count_events"] = self.naive[4]
            out["sessions_without_usage"] = sum(1 for f in self.files if not f.tokens["events"])
        return out


def fix_dir_mtimes(root: Path) -> None:
    """Set every directory's mtime to the newest mtime below it (bottom-up), for byte-stable
    trees."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        newest = 0
        for name in dirnames + filenames:
            newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
        if newest:
            os.utime(dirpath, ns=(newest, newest))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="HOME-like output directory")
    p.add_argument(
        "--size",
        type=parse_size,
        default=parse_size("1GB"),
        help="approximate total bytes, e.g. 200MB, 1GB (decimal) or 512MiB",
    )
    p.add_argument("--seed", default="20251120")
    p.add_argument("--agent", choices=("claude", "codex", "both"), default="both")
    p.add_argument("--now", default="2025-11-20T00:00:00Z", help="end of the time window (UTC)")
    p.add_argument("--days", type=int, default=90)
    p.add_argument(
        "--resume-frac",
        type=float,
        default=0.05,
        help="share of Claude sessions that replay an older session's prefix "
        "(and of Codex rollouts resumed later in the same file)",
    )
    p.add_argument(
        "--partial-usage-frac",
        type=float,
        default=0.0,
        help="share of multi-line responses whose earlier lines carry a smaller "
        "output_tokens than the final line",
    )
    p.add_argument("--subagent-frac", type=float, default=0.05)
    p.add_argument("--legacy-agent-frac", type=float, default=0.01)
    p.add_argument(
        "--codex-share",
        type=float,
        default=0.16,
        help="share of --size given to Codex when --agent both",
    )
    p.add_argument("--projects", type=int, default=0, help="0 = scale with size")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument(
        "--force",
        action="store_true",
        help="delete an existing .claude/.codex/manifest under --out first",
    )
    return p


def prepare_out(out: Path, force: bool) -> None:
    targets = [out / ".claude", out / ".codex", out / MANIFEST_NAME]
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        sys.exit(f"{out} already holds a corpus ({existing[0].name}); use --force or a new dir")
    for t in existing:
        if t.is_dir():
            shutil.rmtree(t)
        else:
            t.unlink()
    out.mkdir(parents=True, exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t0 = time.perf_counter()
    now_ms = parse_now(args.now)
    out: Path = args.out.resolve()
    prepare_out(out, args.force)
    pools = Pools(args.seed)
    rng = random.Random(f"{args.seed}:plan")
    codex_budget = {"claude": 0, "codex": args.size, "both": int(args.size * args.codex_share)}
    codex_bytes = codex_budget[args.agent]
    claude_bytes = args.size - codex_bytes
    n_projects = args.projects or max(3, min(60, round(claude_bytes / 22_000_000)))
    projects = make_projects(rng, pools, n_projects)
    cfg = Config(
        out=out,
        seed=args.seed,
        now_ms=now_ms,
        days=args.days,
        partial_frac=args.partial_usage_frac,
        projects=projects,
        pools=pools,
    )
    claude_specs = plan_claude(rng, claude_bytes, args, now_ms, n_projects) if claude_bytes else []
    codex_specs = (
        plan_codex(rng, codex_bytes, args, now_ms, [p.cwd for p in projects]) if codex_bytes else []
    )
    _WORKER.update(cfg=cfg, claude=claude_specs, codex=codex_specs)
    tasks = [("claude", i) for i in range(len(claude_specs))]
    tasks += [("codex", i) for i in range(len(codex_specs))]
    # big jobs first keeps both workers busy; results are re-ordered by task below
    order = sorted(range(len(tasks)), key=lambda i: -_task_weight(tasks[i]))
    results: list[JobResult | None] = [None] * len(tasks)
    if args.jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(args.jobs) as pool:
            for i, res in zip(order, pool.imap(_work, [tasks[i] for i in order]), strict=True):
                results[i] = res
    else:
        for i in order:
            results[i] = _work(tasks[i])
    aggs = {"claude": Aggregate("claude"), "codex": Aggregate("codex")}
    for maybe in results:
        assert maybe is not None
        aggs[maybe.agent].add(maybe)
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "generator": "bench/gen_corpus.py",
        "args": {
            "size": args.size,
            "seed": args.seed,
            "agent": args.agent,
            "now": args.now,
            "days": args.days,
            "resume_frac": args.resume_frac,
            "partial_usage_frac": args.partial_usage_frac,
            "subagent_frac": args.subagent_frac,
            "legacy_agent_frac": args.legacy_agent_frac,
            "codex_share": args.codex_share,
            "projects": n_projects,
        },
        "rules": {
            "claude": "dedup by (message.id, requestId), keep the max output snapshot; replayed "
            "prefixes credited to the file that first wrote them; subagent files "
            "credited to their own file, sessionId = parent's; day = UTC day of the "
            "response; <synthetic> API-error lines carry zero usage and are skipped",
            "codex": "sum of last_token_usage over token_count events whose cumulative total "
            "advanced (info:null and re-emits skipped); model = latest turn_context; "
            "input_tokens includes cached_input_tokens, output_tokens includes "
            "reasoning_output_tokens",
        },
        "claude_root": ".claude/projects",
        "codex_root": ".codex/sessions",
    }
    if claude_specs:
        manifest["claude"] = aggs["claude"].manifest()
    if codex_specs:
        manifest["codex"] = aggs["codex"].manifest()
    for sub in (".claude", ".codex"):
        if (out / sub).exists():
            fix_dir_mtimes(out / sub)
    mpath = out / MANIFEST_NAME
    mpath.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.utime(mpath, ns=(now_ms * 1_000_000, now_ms * 1_000_000))
    os.utime(out, ns=(now_ms * 1_000_000, now_ms * 1_000_000))
    dt = time.perf_counter() - t0
    total = sum(a.bytes() for a in aggs.values())
    print(
        f"wrote {total / 1e6:.1f} MB in {len(results)} jobs to {out} in {dt:.1f}s "
        f"({total / 1e6 / dt:.0f} MB/s)",
        file=sys.stderr,
    )
    return 0


def _task_weight(task: tuple[str, int]) -> int:
    agent, index = task
    spec = _WORKER[agent][index]
    return int(spec.target_bytes)


if __name__ == "__main__":
    raise SystemExit(main())

"""Crash safety: SIGKILL the real ``helixctl ingest`` at random moments, resume, and the
store equals one clean run (records and cursor commit in one transaction)."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import orjson

from tests.conftest import cli_env
from tests.db_snapshot import snapshot
from tests.fault_helpers import ingest_killed_after


def write_corpus(root: Path, files: int = 40, lines: int = 600) -> None:
    rng = random.Random(7)
    for f in range(files):
        sid = f"00000000-0000-4000-8000-{f:012d}"
        project = root / f"-work-p{f % 4}"
        project.mkdir(parents=True, exist_ok=True)
        out = []
        for n in range(lines):
            kind = "user" if n % 2 == 0 else "assistant"
            obj: dict[str, object] = {
                "type": kind,
                "uuid": f"{sid}-{n}",
                "parentUuid": f"{sid}-{n - 1}" if n else None,
                "sessionId": sid,
                "cwd": f"/work/p{f % 4}",
                "timestamp": f"2026-01-{1 + f % 28:02d}T00:{n // 60 % 60:02d}:{n % 60:02d}Z",
                "message": {"role": kind, "content": "w" * rng.randint(10, 3000)},
            }
            if kind == "assistant":
                obj["message"] = {
                    "id": f"msg_{f}_{n // 4}",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": "a" * rng.randint(5, 900)}],
                    "usage": {"input_tokens": n, "output_tokens": n % 7 + 1},
                }
                obj["requestId"] = f"req_{f}_{n // 4}"
            out.append(orjson.dumps(obj) + b"\n")
        (project / f"{sid}.jsonl").write_bytes(b"".join(out))


def run_ingest(home: Path, db: Path, kill_after: float | None) -> int:
    env = cli_env(home, db, HELIX_INGEST__CHUNK_BYTES="32KiB")
    return ingest_killed_after([], env, kill_after)


def test_sigkill_at_random_moments_then_resume_equals_a_clean_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_corpus(home / ".claude" / "projects")
    clean_db = tmp_path / "clean.db"
    run_ingest(home, clean_db, None)
    crashed_db = tmp_path / "crashed.db"
    rng = random.Random(11)
    kills = 0
    for _ in range(6):
        if run_ingest(home, crashed_db, rng.uniform(0.25, 0.9)) == -signal.SIGKILL:
            kills += 1
    run_ingest(home, crashed_db, None)
    assert kills >= 2, "the ingest finished before it could be killed: grow the corpus"
    assert snapshot(crashed_db) == snapshot(clean_db)

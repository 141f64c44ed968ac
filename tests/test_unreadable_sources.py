"""FIFOs never block and files Helix cannot read are never skipped in silence (issue 11,
items 4 and 10): a FIFO, socket or directory named like any file Helix reads — transcripts,
sidecars, Grok's summary and updates, Gemini's documents — is counted and shown; so are a
file without read permission and a directory that cannot be listed.  The real CLI in a
subprocess (a FIFO opened the blocking way would hang it: the timeout fails the test)."""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  (the unprivileged child cannot import it later)
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.adapters.declared import claude
from helixd.ingest.pipeline import Ingestor
from helixd.sources.discover import Discovery, discover, survey
from helixd.store.database import Store
from tests.conftest import FIXTURES, REPO, RunCli, cli_env

SID = "0badf00d-0000-4000-8000-000000000002"
AGENT = "agent-a0000000000000001"


def claude_line(n: int, sid: str = SID, sidechain: bool = False) -> bytes:
    return (
        orjson.dumps(
            {
                "type": "user",
                "uuid": f"{sid}-{n}",
                "sessionId": sid,
                "isSidechain": sidechain,
                "timestamp": f"2026-01-01T00:00:{n:02d}Z",
                "cwd": "/work/p",
                "message": {"role": "user", "content": f"line {n}"},
            }
        )
        + b"\n"
    )


def plant_fifos(home: Path) -> list[Path]:
    """Real sessions of every agent, and a FIFO beside them named like each kind of file
    Helix reads; returns the FIFOs."""
    fifos: list[Path] = []

    def fifo(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        fifos.append(path)

    proj = home / ".claude/projects/-work-p"
    (proj / SID / "subagents").mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_bytes(claude_line(0) + claude_line(1))
    (proj / SID / "subagents" / f"{AGENT}.jsonl").write_bytes(claude_line(2, sidechain=True))
    fifo(proj / SID / "subagents" / f"{AGENT}.meta.json")  # the subagent's sidecar
    fifo(proj / "0badf00d-0000-4000-8000-00000000ffff.jsonl")  # a transcript
    day = home / ".codex/sessions/2026/02/23"
    day.mkdir(parents=True)
    rollout = next((FIXTURES / "codex" / "sessions").rglob("rollout-*.jsonl"))
    shutil.copy(rollout, day / rollout.name)
    fifo(day / "rollout-2026-02-23T00-00-00-0000-fifo.jsonl")
    chats = home / ".gemini/tmp/abc/chats"
    chats.mkdir(parents=True)
    gem = next((FIXTURES / "gemini").rglob("session-*.json"))
    shutil.copy(gem, chats / gem.name)
    fifo(chats / "session-2026-01-01T00-00-fifo.json")
    fifo(chats / "session-2026-01-01T00-00-fifo.jsonl")
    grok_src = next(p for p in (FIXTURES / "grok" / "constructed").iterdir() if p.is_dir())
    grok_root = home / ".grok/sessions" / grok_src.name
    shutil.copytree(grok_src, grok_root)
    session = next(p for p in grok_root.iterdir() if (p / "chat_history.jsonl").exists())
    for name in ("updates.jsonl", "summary.json"):  # chat_history's and updates' sidecars
        (session / name).unlink(missing_ok=True)
        fifo(session / name)
    for name in ("events.jsonl", "chat_history.jsonl", "summary.json", "updates.jsonl"):
        fifo(grok_root / "019f7000-0000-7000-8000-0000000ffff0" / name)
    return fifos


def test_a_fifo_named_like_any_file_helix_reads_is_counted_and_never_blocks(
    home: Path, helixctl: RunCli
) -> None:
    fifos = plant_fifos(home)
    proc = helixctl("ingest", "--json")  # the fixture's 120 s subprocess timeout fails a hang
    doc = orjson.loads(proc.stdout)
    assert doc["skipped"] == {"not_regular": len(fifos)}
    named = "\n".join(doc["errors"])
    assert all(str(f) in named for f in fifos) and "FIFO" in named
    agents = {s["agent"] for s in orjson.loads(helixctl("sessions", "--json").stdout)}
    assert agents == {"claude", "codex", "gemini", "grok"}  # the real files were all read
    human = helixctl("ingest")
    assert f"skipped {len(fifos)} files Helix cannot read (not a regular file" in human.stderr
    status = orjson.loads(helixctl("status", "--json", check=False).stdout)
    assert status["sources"]["unreadable"]["by_reason"] == {"not_regular": len(fifos)}


def test_a_socket_device_and_directory_named_like_transcripts_are_counted(
    home: Path, helixctl: RunCli
) -> None:
    import stat

    proj = home / ".claude/projects/-work-p"
    proj.mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_bytes(claude_line(0))
    (proj / "dir.jsonl").mkdir()
    (proj / "dir.jsonl" / "inner.jsonl").write_bytes(claude_line(0, "0badf00d-0000-4000-8000-3"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(proj / "sock.jsonl"))
    expected = 2
    try:
        os.mknod(proj / "zero.jsonl", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        expected += 1
    except PermissionError:
        pass  # no CAP_MKNOD here
    try:
        doc = orjson.loads(helixctl("ingest", "--json").stdout)
    finally:
        sock.close()
    assert doc["skipped"] == {"not_regular": expected}
    assert doc["files"] == 2  # the session and the file inside the odd directory are read
    status = helixctl("status", check=False)
    assert f"cannot be read (not a regular file {expected})" in status.stdout
    assert "dir.jsonl: not a regular file" in status.stdout


def as_unprivileged(fn: Callable[[], Any]) -> Any:
    """``fn()`` without the right to read every file: as is when not root, else in a forked
    child running as nobody (root reads through any mode)."""
    if os.getuid() != 0:
        return fn()
    r, w = os.pipe()
    with warnings.catch_warnings():  # 3.12+: "multi-threaded, fork() may deadlock" (the
        warnings.simplefilter("ignore", DeprecationWarning)  # child only runs fn, then exits)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        code = 0
        try:
            os.setgid(65534)
            os.setuid(65534)
            out = orjson.dumps(fn())
        except BaseException as exc:
            out, code = orjson.dumps({"child_error": repr(exc)}), 1
        os.write(w, out)
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    result = orjson.loads(data)
    assert not (isinstance(result, dict) and "child_error" in result), result
    return result


@pytest.fixture
def shared_tmp() -> Any:
    """A temp dir an unprivileged child can use (pytest's own is private to root)."""
    bases = [tempfile.gettempdir(), "/var/tmp", "/dev/shm"]
    base = next((b for b in bases if _traversable(Path(b))), None)
    if base is None:
        pytest.skip("no temp directory other users can reach")
    d = Path(tempfile.mkdtemp(prefix="hx-unreadable-", dir=base))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _traversable(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in (path, *path.parents))


def test_a_file_without_read_permission_and_an_unlistable_directory_are_counted(
    shared_tmp: Path,
) -> None:
    root = shared_tmp / "projects"
    (root / "-work-p").mkdir(parents=True)
    (root / "-work-p" / f"{SID}.jsonl").write_bytes(claude_line(0))
    locked = root / "-work-p" / "0badf00d-0000-4000-8000-00000000aaaa.jsonl"
    locked.write_bytes(claude_line(0, "0badf00d-0000-4000-8000-00000000aaaa"))
    (root / "-closed").mkdir()
    (root / "-closed" / "x.jsonl").write_bytes(claude_line(0, "0badf00d-0000-4000-8000-4"))
    if os.getuid() == 0:
        for p in [shared_tmp, *shared_tmp.rglob("*")]:
            os.chown(p, 65534, 65534)
    locked.chmod(0)
    (root / "-closed").chmod(0)

    def run() -> dict[str, Any]:
        async def main() -> dict[str, Any]:
            store = await Store.open(shared_tmp / "store" / "helix.db")
            try:
                stats = await Ingestor(store).backfill(discover([(claude.ADAPTER, root)]))
            finally:
                await store.close()
            return {**stats.as_dict(), "survey": survey([(claude.ADAPTER, root)])}

        return asyncio.run(main())

    try:
        doc = as_unprivileged(run)
    finally:
        (root / "-closed").chmod(0o755)
    assert doc["skipped"] == {"permission_denied": 2}
    assert doc["files_read"] == 1 and doc["events"] == 1
    errors = "\n".join(doc["errors"])
    assert str(locked) in errors and str(root / "-closed") in errors
    assert doc["survey"]["unreadable"]["by_reason"] == {"permission_denied": 2}
    assert doc["survey"]["files"] == 1


def test_discovery_reports_nothing_for_an_ordinary_tree(home: Path) -> None:
    root = home / ".claude/projects"
    shutil.copytree(FIXTURES / "claude", root, dirs_exist_ok=True)
    found = Discovery([(claude.ADAPTER, root)], check_access=True)
    assert len(list(found)) > 5 and found.skipped == []


def test_doctor_names_what_cannot_be_read(home: Path, tmp_path: Path) -> None:
    proj = home / ".claude/projects/-work-p"
    proj.mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_bytes(claude_line(0))
    (proj / "out.jsonl").symlink_to("/etc/passwd")
    env = cli_env(home, tmp_path / "store" / "helix.db")
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "doctor", "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    checks = {c["name"]: c for c in orjson.loads(proc.stdout)["checks"]}
    assert checks["sources"]["level"] == "warn"
    assert (
        "1 files under the roots cannot be read (outside roots 1)" in checks["sources"]["message"]
    )
    assert "out.jsonl" in checks["sources"]["message"]


def test_the_first_step_of_ingest_steps_aside_while_something_cannot_be_read(
    home: Path, helixctl: RunCli
) -> None:
    from helixd.adapters.registry import REGISTRY
    from helixd.ingest.plan import plan

    proj = home / ".claude/projects/-work-p"
    proj.mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_bytes(claude_line(0))
    helixctl("ingest")
    env = cli_env(home, helixctl.db)  # type: ignore[attr-defined]
    pairs = [(a, r) for a in REGISTRY for r in a.default_roots(env, home)]
    versions = {a.name: a.version for a in REGISTRY}
    assert plan(helixctl.db, pairs, versions).idle  # type: ignore[attr-defined]
    os.mkfifo(proj / "0badf00d-0000-4000-8000-00000000bbbb.jsonl")
    step = plan(helixctl.db, pairs, versions)  # type: ignore[attr-defined]
    assert not step.idle and "cannot be read" in step.reason  # the full ingest names it
    entry = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "skipped 1 files Helix cannot read (not a regular file 1)" in entry.stderr


def test_a_fifo_in_place_of_an_agents_settings_file_is_refused_not_waited_on(
    home: Path, helixctl: RunCli
) -> None:
    os.mkfifo(home / ".claude" / "settings.json")
    proc = helixctl("hooks", "install", "claude", "--helixctl", "/opt/x/helixctl", check=False)
    assert proc.returncode == 2
    assert "not a regular file (a FIFO)" in proc.stderr and "left untouched" in proc.stderr
    status = helixctl("hooks", "status", "claude", check=False)
    assert status.returncode in (0, 2) and "FIFO" in status.stdout + status.stderr


def test_a_directory_that_vanishes_during_the_walk_is_counted(tmp_path: Path) -> None:
    """Discovery is lazy: a project directory removed after the walk started (an agent's
    own cleanup) is recorded, and the walk goes on."""
    root = tmp_path / "projects"
    for name in ("-a", "-b", "-c"):
        (root / name).mkdir(parents=True)
        (root / name / f"{SID}.jsonl").write_bytes(claude_line(0))
    walk = Discovery([(claude.ADAPTER, root)])
    it = iter(walk)
    first = next(it)
    assert first.rel == f"-a/{SID}.jsonl"
    shutil.rmtree(root / "-b")
    rest = [s.rel for s in it]
    assert rest == [f"-c/{SID}.jsonl"]
    assert [(s.path, s.reason) for s in walk.skipped] == [(str(root / "-b"), "vanished")]

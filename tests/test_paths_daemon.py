"""The path gate in the running daemon (issue 11, items 3 and 4): hook payloads and watcher
events naming files outside the roots are refused and nothing of them is stored; a FIFO
planted where Helix reads never stalls the daemon.  The real ``helixd`` as a subprocess,
its real socket, real files, links and FIFOs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.conftest import FIXTURES, REPO
from tests.daemon_helpers import SID, Helixd, exchange, line, project, wait_for

if TYPE_CHECKING:
    from helixd.daemon.app import Daemon

SECRET = "HISTORY-OUTSIDE-THE-ROOTS"


def talk(d: Helixd, obj: object, timeout: float = 5.0) -> dict[str, object]:
    return exchange(d.env["HELIX_SOCKET"], json.dumps(obj).encode() + b"\n", timeout)[0]


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def secret_in_store(db: Path) -> bool:
    rows = stored(db, f"SELECT count(*) FROM events WHERE body LIKE '%{SECRET}%'")
    return bool(rows[0][0])


def flush(d: Helixd) -> None:
    assert d.ctl("flush", "--timeout", "20").returncode == 0


def test_hook_paths_that_leave_the_roots_are_refused(daemon: Helixd, home: Path) -> None:
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0))
    history = home / ".claude" / "history.jsonl"  # beside the root, not under it
    history.write_bytes(line(0, text=SECRET, sid="5ec2e700-0000-4000-8000-00000000000a"))
    day = home / ".codex/sessions/2026/02/23"
    day.mkdir(parents=True)
    rollout = next((FIXTURES / "codex" / "sessions").rglob("rollout-*.jsonl"))
    shutil.copy(rollout, day / rollout.name)
    daemon.start()
    root = home / ".claude" / "projects"
    refused = {
        f"{root}/x/../../history.jsonl": "outside the configured roots",  # the case
        f"{root}/-work-live/../../history.jsonl": "outside the configured roots",
        "/etc/passwd": "outside the configured roots",
        "history.jsonl": "not an absolute path",
        str(day / rollout.name): "in codex's root, not claude's",  # another agent's root
    }
    for path, why in refused.items():
        payload = {"session_id": SID, "transcript_path": path, "hook_event_name": "Stop"}
        reply = talk(daemon, {"v": 1, "op": "hook", "agent": "claude", "payload": payload})
        assert reply["ok"] is True and reply["queued"] == ["reconcile"], (path, reply)
        assert why in str(reply["refused"]), (path, reply)
    # the same escape sent verbatim (no envelope, agent taken from the path) and by the CLI
    reply = talk(
        daemon, {"hook_event_name": "Stop", "transcript_path": f"{root}/x/../../history.jsonl"}
    )
    assert "refused" in reply and reply["queued"] == ["reconcile"]
    payload = {"session_id": SID, "transcript_path": f"{root}/x/../../history.jsonl"}
    hook = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "hook", "claude"],
        env=daemon.env,
        cwd=REPO,
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=30,
    )
    assert hook.returncode == 0
    # a path inside the roots spelled with `..` and `//` is read under its one name
    alias = f"{root}//-work-live/../-work-live/{SID}.jsonl"
    reply = talk(daemon, {"hook_event_name": "Stop", "session_id": SID, "transcript_path": alias})
    assert reply["queued"] == [str(f)] and "refused" not in reply
    flush(daemon)
    assert not secret_in_store(daemon.db)
    paths = [r[0] for r in stored(daemon.db, "SELECT path FROM files")]
    assert str(history) not in paths and "/etc/passwd" not in paths
    assert all(p.startswith(str(home / ".claude/projects")) or ".codex" in p for p in paths)
    assert str(f) in paths
    assert daemon.stop() == 0


def test_a_link_out_of_the_roots_made_while_watching_is_never_read(
    daemon: Helixd, home: Path, tmp_path: Path
) -> None:
    proj = project(home)
    (proj / f"{SID}.jsonl").write_bytes(line(0))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(line(0, text=SECRET, sid="5ec2e700-0000-4000-8000-b"))
    daemon.start()
    flush(daemon)
    (proj / "linked.jsonl").symlink_to(outside / "secret.jsonl")
    (proj.parent / "-linked-dir").symlink_to(outside, target_is_directory=True)
    time.sleep(0.3)  # the watcher's events
    flush(daemon)

    def counted() -> bool:
        doc = orjson.loads(daemon.ctl("status", "--json").stdout)
        return (doc["daemon"].get("ingest") or {}).get("unreadable", {}).get("files") == 1

    wait_for(counted, 10, "the daemon to show the refused link")
    doc = orjson.loads(daemon.ctl("status", "--json").stdout)
    assert doc["daemon"]["ingest"]["unreadable"]["by_reason"] == {"outside_roots": 1}
    assert doc["sources"]["unreadable"]["by_reason"] == {"outside_roots": 2}  # + the dir
    assert daemon.ctl("rescan").returncode == 0
    flush(daemon)
    assert not secret_in_store(daemon.db)
    assert "cannot be read (outside the configured roots 2)" in daemon.ctl("status").stdout
    assert daemon.stop() == 0


def test_fifos_named_like_sidecars_and_transcripts_never_stall_the_daemon(
    daemon: Helixd, home: Path
) -> None:
    daemon.start()
    proj = project(home)
    sub = proj / SID / "subagents"
    sub.mkdir(parents=True)
    os.mkfifo(sub / "agent-a00000000000000ff.meta.json")  # the case
    (sub / "agent-a00000000000000ff.jsonl").write_bytes(line(0, sid=SID))
    os.mkfifo(proj / "5e55e55e-0000-4000-8000-0000000000ff.jsonl")
    grok = home / ".grok/sessions/%2Fwork%2Fp/019f7000-0000-7000-8000-0000000fff01"
    grok.mkdir(parents=True)
    os.mkfifo(grok / "summary.json")
    chats = home / ".gemini/tmp/abc/chats"
    chats.mkdir(parents=True)
    os.mkfifo(chats / "session-2026-01-01T00-00-fifo.json")
    (proj / f"{SID}.jsonl").write_bytes(line(0) + line(1, "assistant"))
    slowest = 0.0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # the daemon keeps answering while it meets them
        t0 = time.monotonic()
        assert talk(daemon, {"v": 1, "op": "ping"}, timeout=2)["ok"] is True
        slowest = max(slowest, time.monotonic() - t0)
        time.sleep(0.05)
    assert slowest < 1.0
    flush(daemon)
    assert daemon.lookup(SID) is not None  # the real transcripts beside them were read
    assert daemon.ctl("rescan").returncode == 0
    flush(daemon)
    doc = orjson.loads(daemon.ctl("status", "--json").stdout)
    assert doc["daemon"]["ingest"]["unreadable"]["by_reason"] == {"not_regular": 4}
    ingest = daemon.ctl("ingest", "--json")  # a second reader, beside the daemon, finishes too
    assert ingest.returncode == 0
    assert orjson.loads(ingest.stdout)["skipped"] == {"not_regular": 4}
    assert daemon.stop() == 0


def test_a_fifo_in_place_of_the_hook_spool_does_not_stall_the_start(
    daemon: Helixd, home: Path
) -> None:
    spool = home / ".local/state/helix/hook-spool.ndjson"
    spool.parent.mkdir(parents=True)
    os.mkfifo(spool)
    daemon.start()  # comes up (and answers) within its 10 s
    assert talk(daemon, {"v": 1, "op": "ping"})["ok"] is True
    assert not spool.exists()  # taken aside and dropped
    assert daemon.stop() == 0
    assert "spool_unreadable" in daemon.stderr


def _daemon_in_process(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Daemon:
    """A ``Daemon`` built (not run) in this process for ``home`` and a temp store, the
    agents' and Helix's environment variables of the outer run taken away."""
    from helixd import config
    from helixd.daemon.app import Daemon

    for key in [k for k in os.environ if k.startswith(("CLAUDE_", "CODEX_", "HELIX_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("HELIX_STORE_DB", str(tmp_path / "s" / "helix.db"))
    return Daemon(config.load(None), None)


def test_a_new_directory_is_scanned_without_walking_through_links(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the worker queues for a directory that appeared (in a thread): the claimed
    files below it, never those behind a link — whether the new directory itself or a
    directory inside it is the link (a polling observer reports linked directories as
    directories)."""

    d = _daemon_in_process(home, tmp_path, monkeypatch)
    outside = tmp_path / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / "secret.jsonl").write_bytes(line(0))
    (outside / "deeper" / "more.jsonl").write_bytes(line(0))
    proj = project(home, "-new")
    (proj / f"{SID}.jsonl").write_bytes(line(0))
    (proj / "sub").symlink_to(outside, target_is_directory=True)
    linked = home / ".claude/projects/-linked"
    linked.symlink_to(outside, target_is_directory=True)
    assert d.worker._claimed_below(str(proj)) == [str(proj / f"{SID}.jsonl")]
    assert d.worker._claimed_below(str(linked)) == []


def test_a_reconcile_with_the_same_roots_builds_no_gate_and_a_new_project_swaps_it(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12, the no-change rescan: with hundreds of known projects a gate is thousands
    of roots; the reconcile's roots refresh builds one only when the roots changed."""
    import asyncio

    from helixd.adapters import adapter_named
    from helixd.daemon import app
    from helixd.sources.gate import Gate

    d = _daemon_in_process(home, tmp_path, monkeypatch)
    first = d.index
    built: list[object] = []

    class Counted(Gate):
        def __init__(self, pairs: Any) -> None:
            built.append(pairs)
            super().__init__(pairs)

    monkeypatch.setattr(app, "Gate", Counted)
    asyncio.run(d._refresh_roots())
    asyncio.run(d._refresh_roots())
    assert built == [] and d.index is first
    learned = tmp_path / "work" / "p1"
    learned.mkdir(parents=True)
    pairs = d._pairs()
    monkeypatch.setattr(d, "_pairs", lambda: [*pairs, (adapter_named("aider"), learned)])
    asyncio.run(d._refresh_roots())
    assert len(built) == 1 and d.index is not first
    assert str(learned) in d.index.roots()

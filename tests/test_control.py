"""The control socket end to end: the real daemon, a real Unix socket, real hook payloads."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import FIXTURES, REPO
from tests.daemon_helpers import (
    CODEX,
    SID,
    Helixd,
    exchange,
    line,
    project,
    stored_digest,
    wait_for,
)


def sock_of(d: Helixd) -> str:
    return d.env["HELIX_SOCKET"]


def hook(d: Helixd, agent: str, payload: dict[str, object], argv: bool = False) -> float:
    args = ["hook", agent] + ([json.dumps(payload)] if argv else [])
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", *args],
        env=d.env,
        cwd=REPO,
        input=b"" if argv else json.dumps(payload).encode(),
        capture_output=True,
        timeout=30,
    )
    took = time.monotonic() - started
    assert proc.returncode == 0 and proc.stdout == b""
    return took


def test_ping_and_commands_over_the_socket(daemon: Helixd) -> None:
    daemon.start()
    replies = exchange(
        sock_of(daemon),
        b'{"v":1,"op":"ping"}\n{"v":1,"op":"rescan"}\n'
        b'{"v":1,"op":"flush","timeout":10}\n{"v":1,"op":"status"}\n',
    )
    assert [r["ok"] for r in replies] == [True] * 4
    assert replies[0]["pid"] == daemon.proc.pid  # type: ignore[union-attr]
    assert replies[2]["idle"] is True and "queue" in replies[3]["status"]  # type: ignore[operator]
    assert daemon.ctl("ping").returncode == 0
    assert oct(os.stat(sock_of(daemon)).st_mode & 0o777) == "0o600"
    assert daemon.stop() == 0


def test_each_agents_hook_payload_queues_its_session(daemon: Helixd, home: Path) -> None:
    daemon.start()
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0) + line(1, "assistant"))
    # Claude Code SessionEnd: the transcript is read and the session closed at once.
    took = hook(
        daemon,
        "claude",
        {
            "session_id": SID,
            "transcript_path": str(f),
            "hook_event_name": "SessionEnd",
            "reason": "other",
        },
    )
    assert took < 1.5

    def closed(d: dict[str, object] | None) -> bool:
        return d is not None and d["provisional"] is False

    uid = f"claude:{SID}"
    took = wait_for(lambda: closed(stored_digest(daemon.db, uid)), 5, "the session to close")
    assert took < 1.0
    assert closed(daemon.lookup(SID))  # and `helixctl lookup` shows it
    # Codex notify passes its JSON as the last argument; no path: a scan finds the rollout.
    day = home / ".codex/sessions/2026/02/23"
    day.mkdir(parents=True)
    shutil.copy(CODEX, day / CODEX.name)
    hook(
        daemon,
        "codex-notify",
        {
            "type": "agent-turn-complete",
            "thread-id": "x",
            "turn-id": "1",
            "last-assistant-message": "done",
        },
        argv=True,
    )
    codex = lambda: json.loads(daemon.ctl("sessions", "--agent", "codex", "--json").stdout)  # noqa: E731
    wait_for(lambda: len(codex()) == 1, 5, "the Codex rollout")
    # Gemini and Grok hooks carry a transcript path.
    chats = home / ".gemini/tmp/abc/chats"
    chats.mkdir(parents=True)
    gem = next((FIXTURES / "gemini").rglob("session-*.json"))
    shutil.copy(gem, chats / gem.name)
    hook(
        daemon,
        "gemini",
        {
            "session_id": "g",
            "transcript_path": str(chats / gem.name),
            "hook_event_name": "AfterAgent",
        },
    )
    gemini = lambda: json.loads(daemon.ctl("sessions", "--agent", "gemini", "--json").stdout)  # noqa: E731
    wait_for(lambda: len(gemini()) == 1, 5, "the Gemini session")
    # Grok: camelCase payload, no transcript path; a scan finds the session directory.
    grok_src = FIXTURES / "grok" / "constructed"
    grok_dir = next(p for p in grok_src.iterdir() if p.is_dir())
    shutil.copytree(grok_dir, home / ".grok" / "sessions" / grok_dir.name)
    grok_sid = next(p.name for p in (home / ".grok/sessions" / grok_dir.name).iterdir())
    env = {**daemon.env, "GROK_HOOK_EVENT": "SessionEnd", "GROK_SESSION_ID": grok_sid}
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "hook", "claude"],
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=30,
        input=json.dumps({"hookEventName": "SessionEnd", "sessionId": grok_sid}).encode(),
    )
    assert proc.returncode == 0

    def grok_closed() -> bool:
        d = daemon.lookup(f"grok:{grok_sid}")
        return d is not None and d["provisional"] is False  # type: ignore[index]

    wait_for(grok_closed, 5, "the Grok session (relabelled from the Claude entry) to close")
    replies = exchange(
        sock_of(daemon),
        json.dumps(
            {"hook_event_name": "Stop", "session_id": SID, "transcript_path": str(f)}
        ).encode()
        + b"\n",
    )
    assert replies[0]["ok"] is True and replies[0]["queued"] == [str(f)]
    assert daemon.stop() == 0


def test_bad_input_gets_a_reply_and_good_clients_are_still_served(daemon: Helixd) -> None:
    daemon.start()
    path = sock_of(daemon)
    served: list[float] = []
    failures: list[str] = []
    stop = threading.Event()

    def good_client() -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                ok = exchange(path, b'{"v":1,"op":"ping"}\n')[0]["ok"] is True
            except BlockingIOError:  # backlog momentarily full (1000 clients): retry
                continue
            except Exception as exc:
                failures.append(repr(exc))
                return
            if ok:
                served.append(time.monotonic() - t0)
            time.sleep(0.02)

    t = threading.Thread(target=good_client)
    t.start()
    try:
        garbage = exchange(
            path,
            b'\x00\xff garbage\n{not json}\n[1,2]\n{"op":"nope"}\n'
            b'{"v":9,"op":"ping"}\n{"v":1,"op":"ping"}\n',
        )
        assert [r["ok"] for r in garbage] == [False] * 5 + [True]
        assert "not JSON" in str(garbage[0]["error"])
        half = exchange(path, b'{"v":1,"op":"pi')
        assert half == [{"v": 1, "ok": False, "error": "incomplete line"}]
        big = exchange(
            path, b'{"x":"' + b"a" * (2 << 20) + b'"}\n{"v":1,"op":"ping"}\n', timeout=20
        )
        assert [r["ok"] for r in big] == [False, True] and "longer" in str(big[0]["error"])
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.connect(path)  # connects and says nothing: timed out by the server, no harm
        many = []
        for _ in range(1000):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(30)
            for _attempt in range(200):  # a full backlog says EAGAIN: a real client retries
                try:
                    c.connect(path)
                    break
                except BlockingIOError:
                    time.sleep(0.01)
            many.append(c)
        for c in many:
            c.sendall(b'{"v":1,"op":"ping"}\n')
        answered = sum(b'"ok":true' in c.recv(4096) for c in many)
        for c in many:
            c.close()
        silent.close()
        assert answered == 1000
        # the good client keeps being served (with the backlog at 1024 the flood above no
        # longer waits on EAGAIN retries, so it can be over before three pings were made)
        wait_for(lambda: len(served) >= 3 or bool(failures), 10, "the good client")
    finally:
        stop.set()
        t.join()
    assert not failures and len(served) >= 3 and max(served) < 5
    assert exchange(path, b'{"v":1,"op":"ping"}\n')[0]["ok"] is True
    assert daemon.stop() == 0


@pytest.mark.skipif(os.getuid() != 0, reason="switching uid needs root")
def test_a_connection_from_another_uid_is_refused(daemon: Helixd) -> None:
    daemon.start()
    path = sock_of(daemon)
    os.chmod(Path(path).parent, 0o755) if Path(path).parent != Path("/tmp") else None
    os.chmod(path, 0o666)  # let the other user reach the socket so the uid check is what stops it
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become nobody and try
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            reply = exchange(path, b'{"v":1,"op":"ping"}\n')
            os.write(w, json.dumps(reply).encode())
        except Exception as exc:  # a refused connection may also just be closed
            os.write(w, json.dumps([{"error": repr(exc)}]).encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r) as fh:
        reply = json.loads(fh.read())
    assert reply and reply[0].get("ok") is not True and "denied" in str(reply[0])
    assert exchange(path, b'{"v":1,"op":"ping"}\n')[0]["ok"] is True  # the owner still gets in
    assert daemon.stop() == 0


def test_hook_spools_while_the_daemon_is_down_and_the_spool_is_drained_at_start(
    daemon: Helixd, home: Path
) -> None:
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0))
    took = hook(
        daemon,
        "claude",
        {"session_id": SID, "transcript_path": str(f), "hook_event_name": "SessionEnd"},
    )
    assert took < 1.5
    spool = home / ".local/state/helix/hook-spool.ndjson"
    assert spool.exists() and b"SessionEnd" in spool.read_bytes()
    daemon.start()

    def closed() -> bool:
        d = daemon.lookup(SID)
        return d is not None and d["provisional"] is False  # type: ignore[index]

    wait_for(closed, 5, "the spooled SessionEnd to close the session")
    assert not spool.exists()
    assert daemon.stop() == 0


def test_socket_activation_uses_the_socket_it_is_given(daemon: Helixd, tmp_path: Path) -> None:
    path = daemon.env["HELIX_SOCKET"] + ".act"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    fd = listener.fileno()
    env = {**daemon.env, "LISTEN_FDS": "1"}
    script = f'LISTEN_PID=$$ exec "{sys.executable}" -m helixd.daemon.app'  # $$ survives exec
    daemon.proc = subprocess.Popen(
        ["sh", "-c", script],
        env=env,
        cwd=REPO,
        pass_fds=(3,),
        preexec_fn=lambda: os.dup2(fd, 3),  # the listening socket becomes fd 3
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    listener.close()
    try:
        wait_for(lambda: _ping(path), 10, "the activated socket to answer")
        assert not os.path.exists(daemon.env["HELIX_SOCKET"])  # it did not bind its own
    finally:
        assert daemon.stop() == 0
        os.unlink(path)


def _ping(path: str) -> bool:
    try:
        return bool(exchange(path, b'{"v":1,"op":"ping"}\n', timeout=1)[0]["ok"])
    except OSError:
        return False


def test_hook_never_fails_the_agent(tmp_path: Path, daemon: Helixd) -> None:
    """Garbage on stdin, no daemon, an unwritable spool: still exit 0, nothing on stdout."""
    env = {**daemon.env, "HELIX_STATE_DIR": "/proc/helix-cannot-write-here"}
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "hook", "claude"],
        env=env,
        cwd=REPO,
        input=b"\xff not json",
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b""


def test_hook_payload_shapes_decode() -> None:
    from helixd.core import protocol

    assert protocol.decode(orjson.dumps({"type": "agent-turn-complete"})).op == "hook"
    r = protocol.decode(orjson.dumps({"hook_event_name": "SessionEnd", "transcript_path": "/x"}))
    assert (r.op, r.agent) == ("hook", None)  # the daemon attributes it by the path's root
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(b'{"hello": 1}')
    _ = signal  # (imported for parity with the daemon tests)


def test_codex_notify_chains_the_users_own_program(daemon: Helixd, tmp_path: Path) -> None:
    """`hooks install` keeps a notify program the user had: the hook forwards the payload."""
    out = tmp_path / "forwarded.json"
    payload = json.dumps({"type": "agent-turn-complete", "turn-id": "7"})
    args = [
        "hook",
        "codex-notify",
        "--then",
        "/bin/sh",
        "-c",
        f'printf %s "$1" > {out}',
        "sh",
        payload,
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", *args],
        env=daemon.env,
        cwd=REPO,
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b""
    wait_for(out.exists, 5, "the user's notify program to run")
    wait_for(lambda: out.read_text() == payload, 5, "the payload to be forwarded")


def test_hook_activity_is_kept_redacted_and_counted_per_phase(
    daemon: Helixd, home: Path, tmp_path: Path
) -> None:
    """Hegel's hook activity: a PostToolUse hook's shell command or edit is kept (Tier 2,
    redacted) and counted in its phase by `helixctl tokens --phases`; a call the transcript
    also holds is counted once."""
    daemon.start()
    f = project(home) / f"{SID}.jsonl"
    edit_call = {
        "type": "assistant",
        "uuid": f"{SID}-2",
        "parentUuid": f"{SID}-1",
        "sessionId": SID,
        "timestamp": "2026-01-01T00:00:02Z",
        "cwd": "/work/live",
        "requestId": "req_2",
        "message": {
            "id": f"msg_{SID}_2",
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "Edit",
                    "input": {
                        "file_path": "/work/live/app.py",
                        "old_string": "a",
                        "new_string": "b",
                    },
                }
            ],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }
    f.write_bytes(line(0) + line(1, "assistant") + orjson.dumps(edit_call) + b"\n")
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    base = {"session_id": SID, "transcript_path": str(f), "hook_event_name": "PostToolUse"}
    bash = {"tool_name": "Bash", "tool_input": {"command": f"GH_TOKEN={token} make deploy"}}
    hook(daemon, "claude", {**base, **bash, "tool_use_id": "toolu_1"})
    edit = {"tool_name": "Edit", "tool_input": {"file_path": "/work/live/app.py"}}
    hook(daemon, "claude", {**base, **edit, "tool_use_id": "toolu_2"})
    hook(daemon, "claude", {**base, "hook_event_name": "PreToolUse", **bash})  # not run yet

    def kept() -> list[tuple[str, str]]:
        import sqlite3

        con = sqlite3.connect(daemon.db)
        try:
            return con.execute("SELECT what, target FROM hook_events ORDER BY id").fetchall()
        finally:
            con.close()

    wait_for(lambda: len(kept()) == 2 and daemon.lookup(SID) is not None, 10, "hook activity")
    rows = kept()
    assert [w for w, _ in rows] == ["bash", "edit"] and rows[1][1] == "/work/live/app.py"
    assert token not in rows[0][1] and rows[0][1].endswith("make deploy")
    assert daemon.stop() == 0
    recent = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    phases = tmp_path / "states.jsonl"
    phases.write_text(
        json.dumps({"timestamp": "2026-01-01T00:00:00Z", "phase": "code"})
        + "\n"
        + json.dumps({"timestamp": recent, "phase": "deploy"})
        + "\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "tokens", "--repo", "/work/live",
         "--phases", str(phases), "--json"],
        env=daemon.env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    by = {p["phase"]: p for p in doc["phases"]}
    assert (by["code"]["turns"], by["code"]["bash_commands"]) == (2, 0)
    # the edit is in the transcript too (same call id): counted once, at its own time
    assert (by["code"]["file_edits"], by["code"]["edited_files"]) == (1, ["/work/live/app.py"])
    assert (by["deploy"]["bash_commands"], by["deploy"]["file_edits"]) == (1, 0)
    assert by["deploy"]["commands"][0].endswith("make deploy")
    assert token not in out.stdout


def test_hook_activity_masks_a_secret_at_the_cut_and_keeps_nothing_of_a_disabled_agent(
    daemon: Helixd, home: Path
) -> None:
    """The command is masked whole before it is cut to its summary (a token across the cut
    is still masked), and an agent Helix does not read leaves no activity behind."""
    daemon.start(HELIX_AGENTS__GEMINI__ENABLED="false")
    f = project(home) / f"{SID}.jsonl"
    f.write_bytes(line(0) + line(1, "assistant"))
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    command = "echo " + "x" * 150 + " && git push https://" + token + "@github.com/o/r"
    ran = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "session_id": SID}
    gemini = {**ran, "hook_event_name": "AfterTool", "tool_name": "run_shell_command"}
    hook(daemon, "gemini", {**gemini, "tool_input": {"command": "make secret-gemini"}})
    hook(daemon, "claude", {**ran, "transcript_path": str(f), "tool_input": {"command": command}})

    def kept() -> list[tuple[str, str]]:
        import sqlite3

        con = sqlite3.connect(daemon.db)
        try:
            return con.execute("SELECT agent, target FROM hook_events ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            con.close()

    wait_for(lambda: len(kept()) >= 1, 10, "hook activity")
    rows = kept()
    assert [a for a, _ in rows] == ["claude"]
    stored = rows[0][1]
    assert len(stored) <= 200 and "[REDACTED" in stored
    assert not any(token[:n] in stored for n in range(8, len(token) + 1))
    assert daemon.stop() == 0

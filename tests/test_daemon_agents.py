"""Issue 16 part B: the daemon (a real subprocess, real watchdog observer) watches the new
agents' default roots: a Copilot session directory created and appended to while it runs,
and a Pi session file and a Continue document written, reach ``lookup``."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from tests.daemon_helpers import Helixd, stored_digest, wait_for

FIX = Path(__file__).parent / "fixtures"
COPILOT = "aaaabbbb-1111-2222-3333-ccccddddeeee"
PI_DIR = "--tmp-agent-history-real-agent-pi-workspace--"
PI = "019e963d-6bd6-7ade-8a49-256ac3391bdd"
CONTINUE = "28fdaafd-5b3a-4342-90db-c3581e27b607"


def _output(d: dict[str, object] | None) -> int | None:
    return None if d is None else d["cost"]["output_tokens"]  # type: ignore[index]


def test_new_agents_roots_are_watched(daemon: Helixd, home: Path) -> None:
    state = home / ".copilot" / "session-state"
    pi_root = home / ".pi" / "agent" / "sessions"
    cont = home / ".continue" / "sessions"
    for root in (state, pi_root, cont):
        root.mkdir(parents=True)
    daemon.start()
    # a Copilot session directory appears, its log written in two parts
    lines = (FIX / "copilot" / COPILOT / "events.jsonl").read_bytes().splitlines(keepends=True)
    session = state / COPILOT
    session.mkdir()
    (session / "events.jsonl").write_bytes(b"".join(lines[:4]))  # up to msg-0001 (12 out)
    uid = f"copilot:{COPILOT}"
    wait_for(lambda: _output(stored_digest(daemon.db, uid)) == 12, 10, "copilot first part")
    with (session / "events.jsonl").open("ab") as fh:
        fh.write(b"".join(lines[4:]))  # msg-0002 adds 14
    wait_for(lambda: _output(stored_digest(daemon.db, uid)) == 26, 10, "copilot second part")
    # a Pi session in a new project directory, a Continue document with its index
    (pi_root / PI_DIR).mkdir()
    pi_name = f"2026-06-05T05-24-28-246Z_{PI}.jsonl"
    shutil.copy(FIX / "pi" / PI_DIR / pi_name, pi_root / PI_DIR / pi_name)
    wait_for(lambda: _output(stored_digest(daemon.db, f"pi:{PI}")) == 9, 10, "pi session")
    shutil.copy(FIX / "continue" / "sessions.json", cont / "sessions.json")
    shutil.copy(FIX / "continue" / f"{CONTINUE}.json", cont / f"{CONTINUE}.json")
    wait_for(lambda: daemon.lookup(f"continue:{CONTINUE}") is not None, 10, "continue doc")
    digest = daemon.lookup(f"continue:{CONTINUE}")
    assert digest is not None and digest["usage_recorded"] is False
    assert daemon.stop() == 0


def test_opencode_database_is_watched_and_a_write_to_its_wal_is_read(
    daemon: Helixd, home: Path
) -> None:
    """OpenCode's ``opencode.db`` (WAL mode) under ``$XDG_DATA_HOME/opencode`` reaches
    ``lookup``; OpenCode then rewrites an assistant message's row with its final tokens
    (only the ``-wal`` changes, and the row adds no event): the digest shows them."""
    root = home / ".local" / "share" / "opencode"
    root.mkdir(parents=True)
    daemon.start()
    wal = home / "opencode.db"  # OpenCode's database is in WAL mode (set once, kept in it)
    shutil.copy(FIX / "opencode" / "opencode.db", wal)
    sqlite3.connect(wal).execute("PRAGMA journal_mode=WAL").connection.close()
    shutil.copy(wal, root / "opencode.db")
    uid = "opencode:ses_helix_usage"
    wait_for(lambda: _output(stored_digest(daemon.db, uid)) == 340 + 45, 15, "opencode db")
    writer = sqlite3.connect(root / "opencode.db")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    (raw,) = writer.execute("SELECT data FROM message WHERE id = 'msg_a1'").fetchone()
    data = json.loads(raw)
    data["tokens"]["output"] = 400
    writer.execute(
        "UPDATE message SET data = ?, time_updated = 1760000100000 WHERE id = 'msg_a1'",
        (json.dumps(data),),
    )
    writer.commit()
    wait_for(lambda: _output(stored_digest(daemon.db, uid)) == 400 + 45, 15, "opencode wal")
    writer.close()
    assert daemon.stop() == 0


def test_opencode_storage_tree_is_watched(daemon: Helixd, home: Path) -> None:
    """OpenCode's JSON tree under ``~/.local/share/opencode/storage``: the parts written,
    then the session and message files (as a reply ends: its message is rewritten last)
    reach ``lookup``; the message file rewritten in place with its final tokens re-reads
    that message with its parts, and the digest shows them."""
    storage = home / ".local" / "share" / "opencode" / "storage"
    storage.mkdir(parents=True)
    daemon.start()
    tree = FIX / "opencode_tree"
    shutil.copytree(tree / "part", storage / "part")
    shutil.copytree(tree / "session", storage / "session")
    shutil.copytree(tree / "message", storage / "message")
    uid = "opencode:ses_helix_usage"
    wait_for(lambda: _output(stored_digest(daemon.db, uid)) == 340 + 45, 15, "opencode tree")
    msg = storage / "message" / "ses_helix_usage" / "msg_a1.json"
    data = json.loads(msg.read_text())
    data["tokens"]["output"] = 400
    msg.write_text(json.dumps(data, indent=2))
    wait_for(lambda: _output(stored_digest(daemon.db, uid)) == 400 + 45, 15, "rewritten message")
    assert daemon.stop() == 0


def test_kiro_cli_session_files_are_watched(daemon: Helixd, home: Path) -> None:
    """A Kiro CLI V2 session (``~/.kiro/sessions/cli/<id>.jsonl`` with its header) appears
    and grows; a V3 session directory appears under a workspace directory."""
    root = home / ".kiro" / "sessions"
    (root / "cli").mkdir(parents=True)
    daemon.start()
    fix = FIX / "kiro_sessions"
    v2 = "cli/3c9d5e2f-8a41-4b6c-9e07-d1f2a3b4c5d6"
    shutil.copy(fix / f"{v2}.json", root / f"{v2}.json")
    lines = (fix / f"{v2}.jsonl").read_bytes().splitlines(keepends=True)
    (root / f"{v2}.jsonl").write_bytes(b"".join(lines[:3]))
    uid = "kiro_sessions:3c9d5e2f-8a41-4b6c-9e07-d1f2a3b4c5d6"
    con_events = "SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id"

    def events(uid: str) -> int:
        con = sqlite3.connect(f"file:{daemon.db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute(f"{con_events} WHERE s.uid = ?", (uid,)).fetchone()[0])
        finally:
            con.close()

    wait_for(lambda: events(uid) == 7, 15, "kiro v2 first lines")  # prompt, reply, call…
    with (root / f"{v2}.jsonl").open("ab") as fh:
        fh.write(b"".join(lines[3:]))
    wait_for(lambda: events(uid) == 13, 15, "kiro v2 appended lines")
    shutil.copytree(fix / "9f2c4e1a7b3d", root / "9f2c4e1a7b3d")
    v3 = "kiro_sessions:sess_5b0e7c2a-1d3f-4e8a-9c6b-2f7a1e4d8c30"
    wait_for(lambda: events(v3) == 15, 15, "kiro v3 session directory")
    digest = daemon.lookup(uid)
    assert digest is not None and digest["usage_recorded"] is False
    assert daemon.stop() == 0


def test_kiro_workspace_sessions_are_watched(daemon: Helixd, home: Path) -> None:
    """A Kiro workspace directory and session document appearing under the default root
    (``$XDG_CONFIG_HOME/Kiro/User/globalStorage/kiro.kiroagent/workspace-sessions``)."""
    root = home / ".config" / "Kiro" / "User" / "globalStorage" / "kiro.kiroagent"
    root = root / "workspace-sessions"
    root.mkdir(parents=True)
    daemon.start()
    (root / "test-workspace").mkdir()
    src = FIX / "kiro" / "test-workspace" / "test-session-1.json"
    shutil.copy(src, root / "test-workspace" / "test-session-1.json")
    uid = "kiro:test-session-1"
    wait_for(lambda: daemon.lookup(uid) is not None, 15, "kiro session")
    digest = daemon.lookup(uid)
    assert digest is not None and digest["usage_recorded"] is False
    assert daemon.stop() == 0


def test_cursor_agent_transcripts_are_watched(daemon: Helixd, home: Path) -> None:
    """A transcript directory appearing under ``~/.cursor/projects/<slug>/agent-transcripts``
    and a line appended to it reach ``lookup``."""
    root = home / ".cursor" / "projects"
    root.mkdir(parents=True)
    daemon.start()
    src = FIX / "cursor_agent" / "Users-dev-proj" / "agent-transcripts" / "small0001.jsonl"
    session = root / "home-dev-app" / "agent-transcripts" / "abc123"
    session.mkdir(parents=True)
    lines = src.read_bytes().splitlines(keepends=True)
    (session / "abc123.jsonl").write_bytes(b"".join(lines[:2]))
    uid = "cursor_agent:abc123"
    wait_for(lambda: daemon.lookup(uid) is not None, 15, "cursor agent transcript")
    with (session / "abc123.jsonl").open("ab") as fh:
        fh.write(b"".join(lines[2:]))
    con_events = "SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id"

    def events() -> int:
        con = sqlite3.connect(f"file:{daemon.db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute(f"{con_events} WHERE s.uid = ?", (uid,)).fetchone()[0])
        finally:
            con.close()

    wait_for(lambda: events() == 5, 15, "appended lines")
    assert daemon.stop() == 0


def _tree_part(root: Path, text: str, part: str = "prt_1") -> None:
    doc = {"id": part, "sessionID": "ses_t", "messageID": "msg_t", "type": "text", "text": text}
    (root / "part" / "msg_t").mkdir(parents=True, exist_ok=True)
    (root / "part" / "msg_t" / f"{part}.json").write_text(json.dumps(doc, indent=2))


def _bodies(db: Path) -> set[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {b for (b,) in con.execute("SELECT body FROM events WHERE body LIKE 'part %'")}
    except sqlite3.OperationalError:  # the store being created
        return set()
    finally:
        con.close()


def test_an_opencode_part_that_changes_alone_is_read_at_once(daemon: Helixd, home: Path) -> None:
    """Issue 16: a part file of OpenCode's JSON tree is no source but a member of its
    message's bundle; an event on it alone (a part rewritten, a part added) re-reads that
    message at once, not at the next reconcile (an hour here)."""
    root = home / ".local" / "share" / "opencode" / "storage"
    message = {"id": "msg_t", "sessionID": "ses_t", "role": "assistant"}
    (root / "message" / "ses_t").mkdir(parents=True)
    (root / "message" / "ses_t" / "msg_t.json").write_text(json.dumps(message))
    _tree_part(root, "part one")
    daemon.start()
    wait_for(lambda: _bodies(daemon.db) == {"part one"}, 10, "the message and its part")
    _tree_part(root, "part 1ne")  # rewritten in place, same size
    wait_for(lambda: _bodies(daemon.db) == {"part 1ne"}, 10, "the part rewritten")
    _tree_part(root, "part two", part="prt_2")
    wait_for(lambda: _bodies(daemon.db) == {"part 1ne", "part two"}, 10, "a part added")
    assert daemon.stop() == 0

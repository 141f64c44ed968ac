"""No secret is stored (issue 11), end to end: every secret family of
``tests/secret_corpus.py`` is planted in real transcripts of each agent (Claude Code with a
subagent and its ``.meta.json`` companion, Codex, Gemini, Grok with its ``summary.json``), in
every position a JSON string offers, plus one line longer than the line cap with a key
across its 4 MiB piece boundary.  The real ``helixctl ingest`` reads them; then no planted
secret may appear in the store file's bytes (with its WAL, before and after a checkpoint),
the decompressed raw lines, the events, the full-text index (its vocabulary and
``helixctl search``), digests, session rows, stored companion files, or the hook spool —
while the marker words planted beside them, and ordinary text that merely looks like a
token (a git SHA, a UUID, base64 image data, "token counts"), are all still there.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from itertools import cycle
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.core import protocol
from tests.conftest import FIXTURES, REPO, cli_env
from tests.db_snapshot import snapshot
from tests.secret_corpus import FAMILIES, enc, rand

MARK = "zqxplant"
ORDINARY = [
    "commit 3f2a9c1e0b7d4e5f6a8b9c0d1e2f3a4b5c6d7e8f",
    "uuid 550e8400-e29b-41d4-a716-446655440000",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ",
    "token counts: 2048 tokens in, max_tokens=4096",
    "password = os.environ['DB_PASSWORD']",
]

# Where a planted text goes in a string (the JSON writer then escapes it as the agent's would).
STRING_POSITIONS: dict[str, Callable[[str], str]] = {
    "after \\n": lambda t: "\n" + t,
    "after \\t": lambda t: "\t" + t,
    "after \\r\\n": lambda t: "\r\n" + t,
    'after \\"': lambda t: ' "' + t + '"',
    "after \\\\": lambda t: " C:\\tmp\\" + t,
    "after =": lambda t: " VALUE=" + t,
    "after :": lambda t: " value: " + t,
    "after %20": lambda t: " q=%20" + t,
    "in a URL": lambda t: " https://example.com/cb?code=" + t + "&state=1",
    "in a header": lambda t: ' -H "X-Custom: ' + t + '"',
    "JSON in the string": lambda t: " " + json.dumps({"cmd": "echo " + t}),
    "JSON in JSON in the string": lambda t: " " + json.dumps({"b": json.dumps({"c": t})}),
    "end of the string": lambda t: " " + t,
}


def _plants() -> list[str]:
    """Every family in every position (the first fragment of a string starts it)."""
    out = []
    for family, (text, _) in FAMILIES.items():
        out.extend(f" {MARK}" + place(text) for place in STRING_POSITIONS.values())
        out.append(f" {MARK} {family!r}")
    return out


PLANTS = _plants()
NEEDLES = sorted({n for _, needles in FAMILIES.values() for n in needles})


def _planted(value: Any, plants: Iterator[str], per_string: int) -> Any:
    """``value`` with planted fragments appended to each text string (one with a space),
    and the first one of each string also put at its very start."""
    if isinstance(value, dict):
        return {k: _planted(v, plants, per_string) for k, v in value.items()}
    if isinstance(value, list):
        return [_planted(v, plants, per_string) for v in value]
    if not isinstance(value, str) or " " not in value or value.startswith("/"):
        return value
    if value.lstrip().startswith("{"):  # JSON kept in a string (Codex arguments)
        try:
            inner = json.loads(value)
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            return json.dumps(_planted(inner, plants, per_string))
    first = next(plants)
    extra = "".join(next(plants) for _ in range(per_string - 1))
    return first.lstrip() + " " + value + extra + " " + " | ".join(ORDINARY)


def _text_strings(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_text_strings(v) for v in value.values())
    if isinstance(value, list):
        return sum(_text_strings(v) for v in value)
    return int(isinstance(value, str) and " " in value and not value.startswith("/"))


def plant_file(path: Path) -> None:
    """Rewrite a JSONL or JSON transcript with every plant in it, spread over its strings."""
    data = path.read_bytes()
    lines = data.splitlines() if path.suffix == ".jsonl" else [data]
    records = [_json_or_bytes(x) for x in lines]
    strings = sum(_text_strings(r) for r in records)
    per_string = -(-len(PLANTS) // max(strings, 1)) + 1
    plants = cycle(PLANTS)
    planted = [_planted(r, plants, per_string) for r in records]
    if path.suffix == ".jsonl":  # a malformed line of the fixture stays as it was
        out = [r if isinstance(r, bytes) else orjson.dumps(r) for r in planted]
        path.write_bytes(b"".join(x + b"\n" for x in out))
    else:
        path.write_bytes(orjson.dumps(planted[0], option=orjson.OPT_INDENT_2))


def _json_or_bytes(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return line


def overlong_line(session: str) -> bytes:
    """A Claude user record of ~4.3 MB whose text holds a key across the 4 MiB piece
    boundary (the line itself starts at its file offset; pieces count from there)."""
    key = FAMILIES["anthropic api key"][0]
    head = orjson.dumps(
        {
            "type": "user",
            "uuid": "0a1b2c3d-0000-4000-8000-00000000beef",
            "sessionId": session,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "@@"},
        }
    )
    before, after = head.split(b"@@")
    filler = (1 << 22) - len(before) - 40
    return before + b"y" * (filler - 1) + b" " + key.encode() + b" " + b"z" * 200_000 + after


CLAUDE_SID = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
SUB_PARENT = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
CODEX_FILE = "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
GEMINI_FILE = "session-2025-12-31T01-49-1593ed60.json"
GROK = "%2Fhome%2Fdev%2Fshop/019f7000-0000-7000-8000-00000000a001"


def build_home(home: Path) -> list[Path]:
    """Real transcripts of each agent where the agent writes them, every plant in each."""
    claude = home / ".claude/projects/-home-dev-viewer"
    claude.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude/d-kimuson__claude-code-viewer" / f"{CLAUDE_SID}.jsonl", claude)
    sub = FIXTURES / "claude/jazzyalex__agent-sessions/subagent"
    shutil.copytree(sub, home / ".claude/projects/-home-dev-sub")
    codex = home / ".codex/sessions/2026/02/23"
    codex.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex/sessions/2026/02/23" / CODEX_FILE, codex)
    gemini = home / ".gemini/tmp/86bc0e27f2bad5ee/chats"
    gemini.mkdir(parents=True)
    shutil.copy(FIXTURES / "gemini/mischa-thisness__M-Gemini/chats" / GEMINI_FILE, gemini)
    shutil.copytree(FIXTURES / "grok/constructed" / GROK, home / ".grok/sessions" / GROK)
    files = [p for p in home.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    for path in files:
        plant_file(path)
    with (claude / f"{CLAUDE_SID}.jsonl").open("ab") as f:
        f.write(overlong_line(CLAUDE_SID) + b"\n")
    return files


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("secrets")
    home = base / "home"
    files = build_home(home)
    db = base / "store" / "helix.db"
    env = cli_env(home, db, HELIX_INGEST__CHUNK_BYTES="1MiB", HELIX_INGEST__MAX_LINE_BYTES="1MiB")

    def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        proc = subprocess.run(
            [sys.executable, "-m", "helixd.cli.main", *args],
            env=env,
            cwd=REPO,
            input=stdin,
            capture_output=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        return proc

    summary = orjson.loads(run("ingest", "--json").stdout)
    return {"home": home, "files": files, "db": db, "run": run, "summary": summary, "env": env}


def _leaks(blob: bytes) -> list[str]:
    return [n for n in NEEDLES if n.encode() in blob or enc(n) in blob]


def test_the_plants_are_in_the_transcripts_and_were_all_read(world: dict[str, Any]) -> None:
    every = b"".join(p.read_bytes() for p in world["files"])
    assert not [n for n in NEEDLES if enc(n) not in every]  # each secret really is planted
    s = world["summary"]
    transcripts = [p for p in world["files"] if not p.name.endswith(".meta.json")]
    assert s["files_read"] == len(transcripts) and s["malformed_lines"] >= 1  # the long line
    assert s["redactions"] >= len(PLANTS)
    agents = {a for (a,) in _rows(world["db"], "SELECT DISTINCT agent FROM sessions")}
    assert agents == {"claude", "codex", "gemini", "grok"}


def test_no_secret_in_the_store_file_or_its_wal(world: dict[str, Any]) -> None:
    db: Path = world["db"]
    before = db.read_bytes() + (
        Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b""
    )
    assert _leaks(before) == []
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    assert _leaks(db.read_bytes()) == []


def test_no_secret_in_the_raw_lines_and_the_readable_text_is_kept(world: dict[str, Any]) -> None:
    raw = b"".join(snapshot(world["db"])["raw"].values())
    assert _leaks(raw) == []
    assert raw.count(MARK.encode()) >= len(PLANTS)  # the planted lines are stored, masked
    for text in ORDINARY:
        assert enc(text) in raw, text
    assert raw.count(b"y" * 1000) >= 1 and b"[REDACTED:api-key]" in raw  # the long line


def _rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def test_no_secret_in_events_sessions_digests_or_stored_companions(world: dict[str, Any]) -> None:
    db = world["db"]
    world["run"]("analyze", "--all")
    for table in ("events", "sessions", "digests", "files", "tool_calls", "test_runs"):
        text = repr(_rows(db, f"SELECT * FROM {table}")).encode()
        assert _leaks(text) == [], table
    bodies = " ".join(str(r[0]) for r in _rows(db, "SELECT body FROM events")).encode()
    assert bodies.count(MARK.encode()) >= len(PLANTS) // 2  # the text reached the events
    assert all(t.encode() in bodies for t in ORDINARY[:3])
    sidecars = [r[0] for r in _rows(db, "SELECT sidecar FROM files WHERE sidecar IS NOT NULL")]
    assert sidecars and all(MARK.encode() in s or b"agentType" in s for s in sidecars)
    uids = [uid for (uid,) in _rows(db, "SELECT uid FROM sessions")]
    assert len(uids) >= 6
    digest = world["run"]("lookup", f"claude:{CLAUDE_SID}", "--json").stdout
    assert MARK.encode() in digest and _leaks(digest) == []  # first prompt and title


def test_no_secret_in_the_full_text_index(world: dict[str, Any]) -> None:
    db = world["db"]
    con = sqlite3.connect(db)
    try:
        con.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, search, 'row')")
        terms = {row[0] for row in con.execute("SELECT term FROM temp.vocab")}
    finally:
        con.close()
    assert MARK in terms and "3f2a9c1e0b7d4e5f6a8b9c0d1e2f3a4b5c6d7e8f" in terms
    words = {w for n in NEEDLES for w in _words(n) if len(w) >= 8}
    assert sorted(words & terms) == []
    found = orjson.loads(world["run"]("search", MARK, "--json", "--limit", "10000").stdout)
    assert len(found) >= 10 and _leaks(orjson.dumps(found)) == []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        phrases = ['"' + " ".join(_words(n)) + '"' for n in NEEDLES]
        hits = {
            p: con.execute("SELECT count(*) FROM search WHERE search MATCH ?", (p,)).fetchone()[0]
            for p in phrases
        }
    finally:
        con.close()
    assert {p: n for p, n in hits.items() if n} == {}


def _words(text: str) -> list[str]:
    """The terms the index's unicode61 tokenizer makes of ``text``."""
    out, word = [], []
    for c in text.lower():
        if c.isalnum():
            word.append(c)
        elif word:
            out.append("".join(word))
            word = []
    return out + (["".join(word)] if word else [])


def test_the_hook_spool_holds_no_secret(world: dict[str, Any], tmp_path: Path) -> None:
    """The daemon is down: ``helixctl hook`` spools the payload, masked, still a request."""
    run = world["run"]
    prompt = " ".join(
        place(text) for text, _ in FAMILIES.values() for place in STRING_POSITIONS.values()
    )
    transcript = str(world["home"] / ".claude/projects/-home-dev-viewer" / f"{CLAUDE_SID}.jsonl")
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": CLAUDE_SID,
        "transcript_path": transcript,
        "prompt": prompt,
    }
    run("hook", "claude", stdin=json.dumps(payload).encode())
    notify = {"type": "agent-turn-complete", "input-messages": [prompt[:20_000]]}
    run("hook", "codex-notify", json.dumps(notify))
    spool = Path(world["env"]["HELIX_STATE_DIR"]) / "hook-spool.ndjson"
    data = spool.read_bytes()
    assert _leaks(data) == [] and data.count(b"[REDACTED:") >= len(FAMILIES)
    first, second = (protocol.decode(x) for x in data.splitlines())
    assert first.payload["transcript_path"] == transcript
    assert first.payload["session_id"] == CLAUDE_SID and second.agent == "codex"
    assert oct(spool.stat().st_mode & 0o777) == "0o600"


def test_a_secret_planted_later_is_masked_by_the_next_ingest(world: dict[str, Any]) -> None:
    """Appended lines (the live path reads only new bytes) go through the same masks."""
    path = world["home"] / ".codex/sessions/2026/02/23" / CODEX_FILE
    token = "ghp_" + rand(36)
    line = {"timestamp": "2026-02-23T13:00:00.000Z", "type": "event_msg"}
    line["payload"] = {"type": "user_message", "message": "later:\n" + token}  # after \\n
    with path.open("ab") as f:
        f.write(orjson.dumps(line) + b"\n")
    world["run"]("ingest", "--json")
    db: Path = world["db"]
    blob = db.read_bytes() + (Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b"")
    raw = b"".join(snapshot(db)["raw"].values())
    assert b"later:\\n[REDACTED:github-token]" in raw  # the appended line was read, masked
    assert token.encode() not in blob and token.encode() not in raw


def test_log_lines_mask_secrets_in_messages_and_tracebacks() -> None:
    """The daemon's structlog output (JSON off a TTY) never carries a secret."""
    token, password = FAMILIES["github oauth (gho_)"][0], rand(14)
    script = (
        "import structlog\n"
        "from helixd.logs import configure\n"
        "configure(json=True)\n"
        "log = structlog.get_logger()\n"
        f"log.error('ingest_failed', error='bad line: token {token}')\n"
        "try:\n"
        f"    raise ValueError('connect postgres://app:{password}@db failed')\n"
        "except ValueError:\n"
        "    log.error('handler_failed', exc_info=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, timeout=60, check=True
    )
    lines = [orjson.loads(x) for x in proc.stderr.splitlines()]
    assert [x["event"] for x in lines] == ["ingest_failed", "handler_failed"]
    assert "ValueError" in lines[1]["exception"] and "[REDACTED:" in lines[0]["error"]
    assert token.encode() not in proc.stderr and password.encode() not in proc.stderr


def test_a_payload_that_is_not_json_is_cut_between_words_not_inside_a_secret(
    world: dict[str, Any],
) -> None:
    token = FAMILIES["github classic pat (ghp_)"][0]
    text = "x " * 2040 + "after \\n" + token + " tail"  # the token crosses character 4096
    assert text.index(token) < 4096 < text.index(token) + len(token)
    spool = Path(world["env"]["HELIX_STATE_DIR"]) / "hook-spool.ndjson"
    spool.unlink(missing_ok=True)
    world["run"]("hook", "claude", stdin=text.encode())
    raw = protocol.decode(spool.read_bytes()).payload["raw"]
    assert raw.startswith("x x") and len(raw) <= 4096 and token[:6] not in raw

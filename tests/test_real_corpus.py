"""Golden tests on every real file of every agent, in one place (issue 16, "Shown by").

``tests/fixtures/REAL_FILES.tsv`` lists each real file of ``../shared/corpus`` (its
``PROVENANCE.tsv`` rows whose description starts with "real"): the agent (the adapter's
name), where the corpus staged it and its sha256, its copy under ``tests/fixtures/`` (whole,
or trimmed with the copy's own sha256), where the agent writes it (``placed_at``, relative to
HOME), and what Helix does with it: ``read`` (the file has its own ``files`` row), ``sidecar:
<what>`` (read only beside a file that is read, no row of its own) or ``not read: <why>``.

One ``helixctl ingest --json`` (a subprocess, a temporary HOME) runs over a HOME where every
listed fixture sits at its ``placed_at``; the per-project agents (Aider, Crush, the legacy
Go OpenCode) get their project directories as configured roots. Then:

* every fixture exists with the recorded sha256;
* the ingest claims exactly the ``read`` files, with no error;
* each ``read`` file's summary read back from the store (events by kind, usage sums per
  counter of its sessions, lines, bad lines and their reasons, unknown records, each
  session's uid and title) equals ``tests/fixtures/real_files_golden.json``;
* a ``sidecar`` or ``not read`` file has no ``files`` row.

``HELIX_REGEN_GOLDEN=1`` rewrites the golden file (and fails, so a regeneration never
passes unseen: check the diff, then run again without it).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, REPO, cli_env

TABLE = FIXTURES / "REAL_FILES.tsv"
GOLDEN = FIXTURES / "real_files_golden.json"
# ``../shared/corpus`` beside a clone (or beside the directory of its worktrees); not in CI
CORPUS = next(
    (
        d
        for d in (REPO.parent / "shared/corpus", REPO.parent.parent / "shared/corpus")
        if d.is_dir()
    ),
    REPO.parent / "shared/corpus",
)
REGEN = os.environ.get("HELIX_REGEN_GOLDEN") == "1"
PROJECT_AGENTS = ("aider", "crush", "opencode_go")  # no global root: a project dir each
SESSIONS = "(every session in the store)"  # the golden's key for store_sessions
USAGE = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "reasoning")


@dataclass(frozen=True)
class Row:
    agent: str
    staged_as: str
    sha256: str
    fixture: str
    fixture_sha256: str
    copy: str
    placed_at: str
    read: str

    @property
    def status(self) -> str:
        return self.read.partition(":")[0]


def load_rows() -> list[Row]:
    with TABLE.open(newline="") as f:
        return [Row(**r) for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


ROWS = load_rows()
READ = [r for r in ROWS if r.status == "read"]
UNREAD = [r for r in ROWS if r.status != "read"]


def project_dir(row: Row) -> str:
    """``work/<agent>/<repo>`` of a per-project agent's file."""
    return "/".join(row.placed_at.split("/")[:3])


def build_home(home: Path) -> dict[str, str]:
    """Every fixture at its ``placed_at``; the configured roots of the per-project agents."""
    for row in ROWS:
        dest = home / row.placed_at
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / row.fixture, dest)
    roots = {
        agent: sorted({str(home / project_dir(r)) for r in ROWS if r.agent == agent})
        for agent in PROJECT_AGENTS
    }
    return {f"HELIX_AGENTS__{a.upper()}__ROOTS": json.dumps(dirs) for a, dirs in roots.items()}


@dataclass(frozen=True)
class World:
    home: Path
    db: Path
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    base = tmp_path_factory.mktemp("real-corpus")
    home, db = base / "home", base / "store" / "helix.db"
    extra = build_home(home)
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest", "--json"],
        env=cli_env(home, db, **extra),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return World(home, db, json.loads(proc.stdout))


SESSION_FACTS = ("model", "cwd", "git_branch", "agent_type", "version", "started_at", "ended_at")


def events_digest(con: sqlite3.Connection, where: str, arg: object) -> str:
    """A digest of the events ``where`` holds — kind, role, time, tool, summary, body and
    flags of each — independent of their order (a wrong time, role or text changes it)."""
    rows = con.execute(
        "SELECT kind, role, ts, tool, call_id, summary, body, is_error, is_sidechain, status"
        " FROM events WHERE " + where,
        (arg,),
    ).fetchall()
    h = hashlib.sha256()
    for line in sorted(repr(tuple(r)) for r in rows):
        h.update(line.encode() + b"\n")
    return h.hexdigest()[:16]


def session_summary(con: sqlite3.Connection, sid: int, home: str) -> dict[str, Any]:
    """A session's uid, title, facts (model, cwd with the test's HOME as ``~``, branch,
    times…) and usage sums per counter (with the number of facts)."""
    uid, title, *facts = con.execute(
        "SELECT uid, title, " + ", ".join(SESSION_FACTS) + " FROM sessions WHERE id = ?", (sid,)
    ).fetchone()
    known = dict(zip(SESSION_FACTS, facts, strict=True))
    if isinstance(known["cwd"], str) and known["cwd"].startswith(home):
        known["cwd"] = "~" + known["cwd"][len(home) :]
    sums = con.execute(
        "SELECT count(*), " + ", ".join(f"coalesce(sum({c}), 0)" for c in USAGE)
        + " FROM usage WHERE session_id = ?",
        (sid,),
    ).fetchone()  # fmt: skip
    usage = dict(zip(("facts", *USAGE), sums, strict=True))
    return {"uid": uid, "title": title, **known, "usage": usage}


def store_sessions(con: sqlite3.Connection, home: str) -> dict[str, Any]:
    """Every session in the store by uid, with its parent and events by kind: this also shows
    the sessions no file is linked to (a database's session without messages, a parent that
    is only named)."""
    out = {}
    for sid, parent in con.execute("SELECT id, parent_uid FROM sessions ORDER BY uid").fetchall():
        s = session_summary(con, sid, home)
        kinds = con.execute(
            "SELECT kind, count(*) FROM events WHERE session_id = ? GROUP BY kind ORDER BY kind",
            (sid,),
        ).fetchall()
        digest = events_digest(con, "session_id = ?", sid)
        out[s.pop("uid")] = {**s, "parent_uid": parent, "events": dict(kinds), "digest": digest}
    return out


def file_summary(con: sqlite3.Connection, path: str, home: str) -> dict[str, Any] | None:
    """What the store holds from the file at ``path``, or None when it has no ``files`` row."""
    row = con.execute(
        "SELECT id, session_id, lines, bad_lines, unknown_records FROM files WHERE path = ?",
        (path,),
    ).fetchone()
    if row is None:
        return None
    file_id, session_id, lines, bad, unknown = row
    events = dict(
        con.execute(
            "SELECT kind, count(*) FROM events WHERE file_id = ? GROUP BY kind ORDER BY kind",
            (file_id,),
        ).fetchall()
    )
    reasons = dict(
        con.execute(
            "SELECT reason, count(*) FROM bad_lines WHERE file_id = ? GROUP BY reason"
            " ORDER BY reason",
            (file_id,),
        ).fetchall()
    )
    ids = {sid for (sid,) in con.execute(
        "SELECT DISTINCT session_id FROM events WHERE file_id = ?"
        " UNION SELECT id FROM sessions WHERE source_path = ?",
        (file_id, path),
    )}  # fmt: skip
    if session_id is not None:
        ids.add(session_id)
    sessions = sorted((session_summary(con, i, home) for i in ids), key=lambda s: str(s["uid"]))
    return {
        "lines": lines,
        "bad_lines": bad,
        "bad_line_reasons": reasons,
        "unknown_records": unknown,
        "events": events,
        "events_digest": events_digest(con, "file_id = ?", file_id),
        "sessions": sessions,
    }


@pytest.fixture(scope="module")
def summaries(world: World) -> dict[str, Any]:
    """Every row's summary by fixture path (None: no ``files`` row), and under ``SESSIONS``
    every session of the store, read back through a read-only connection."""
    con = sqlite3.connect(f"file:{world.db}?mode=ro", uri=True)
    try:
        got: dict[str, Any] = {
            r.fixture: file_summary(con, str(world.home / r.placed_at), str(world.home))
            for r in ROWS
        }
        got[SESSIONS] = store_sessions(con, str(world.home))
        return got
    finally:
        con.close()


@pytest.fixture(scope="module")
def golden(summaries: dict[str, Any]) -> dict[str, Any]:
    if REGEN:
        data = {r.fixture: summaries[r.fixture] for r in READ} | {SESSIONS: summaries[SESSIONS]}
        GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        pytest.fail(f"HELIX_REGEN_GOLDEN=1: wrote {GOLDEN}; check its diff, run again without it")
    if not GOLDEN.is_file():
        pytest.fail(f"{GOLDEN} is missing: run with HELIX_REGEN_GOLDEN=1 to write it")
    loaded: dict[str, Any] = json.loads(GOLDEN.read_text())
    return loaded


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_table_lists_each_real_file_once_with_a_known_status() -> None:
    assert len(ROWS) == len({r.staged_as for r in ROWS}) == len({r.fixture for r in ROWS})
    assert len({r.placed_at for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r.status in ("read", "sidecar", "not read"), r
        assert r.status == "read" or r.read.partition(": ")[2], f"{r.fixture}: no reason given"
        assert r.copy == "whole" or r.copy.startswith("trimmed: "), r


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.fixture)
def test_fixture_is_there_with_its_recorded_sha256(row: Row) -> None:
    path = FIXTURES / row.fixture
    assert path.is_file(), f"{row.fixture} is listed in REAL_FILES.tsv but not in tests/fixtures"
    assert sha256(path) == row.fixture_sha256
    if row.copy == "whole":
        assert row.fixture_sha256 == row.sha256, f"{row.fixture}: not the corpus file"
    else:
        assert row.fixture_sha256 != row.sha256


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside this clone")
def test_the_table_covers_every_real_file_of_the_corpus() -> None:
    with (CORPUS / "PROVENANCE.tsv").open(newline="") as f:
        real = {
            p["staged_as"]: p["sha256"]
            for p in csv.DictReader(f, delimiter="\t")
            if p["description"].startswith("real")
        }
    assert {r.staged_as: r.sha256 for r in ROWS} == real
    for r in ROWS:
        assert sha256(CORPUS / r.staged_as) == r.sha256


def test_one_ingest_claims_exactly_the_read_files(world: World, summaries: dict[str, Any]) -> None:
    s = world.summary
    assert s["errors"] == []
    assert s["files"] == len(READ), sorted(r.fixture for r in READ if summaries[r.fixture] is None)
    con = sqlite3.connect(f"file:{world.db}?mode=ro", uri=True)
    try:
        stored = {(a, p) for a, p in con.execute("SELECT agent, path FROM files")}
    finally:
        con.close()
    assert stored == {(r.agent, str(world.home / r.placed_at)) for r in READ}


@pytest.mark.parametrize("row", READ, ids=lambda r: r.fixture)
def test_read_file_matches_its_golden_summary(
    row: Row, summaries: dict[str, Any], golden: dict[str, Any]
) -> None:
    assert row.fixture in golden, f"no golden for {row.fixture}: HELIX_REGEN_GOLDEN=1 writes it"
    assert summaries[row.fixture] == golden[row.fixture]


def test_golden_has_no_entry_for_a_file_no_longer_read(golden: dict[str, Any]) -> None:
    assert set(golden) == {r.fixture for r in READ} | {SESSIONS}


def test_every_session_in_the_store_matches_the_golden(
    summaries: dict[str, Any], golden: dict[str, Any]
) -> None:
    assert summaries[SESSIONS] == golden[SESSIONS]


@pytest.mark.parametrize("row", UNREAD, ids=lambda r: r.fixture)
def test_unread_file_placed_where_its_agent_writes_it_has_no_files_row(
    row: Row, world: World, summaries: dict[str, Any]
) -> None:
    assert (world.home / row.placed_at).is_file()
    assert summaries[row.fixture] is None, f"{row.fixture} was claimed: {row.read}"


@pytest.mark.parametrize("row", [r for r in ROWS if r.status == "sidecar"], ids=lambda r: r.fixture)
def test_a_sidecar_sits_beside_a_file_that_is_read(row: Row) -> None:
    beside = {str(Path(r.placed_at).parent) for r in READ}
    assert str(Path(row.placed_at).parent) in beside, f"{row.fixture}: read beside what?"

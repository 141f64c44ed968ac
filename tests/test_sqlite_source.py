"""SQLite databases as a source (helixd/sources/sqlite.py, helixd/store/agentdb.py): the
contract's guarantees for rows instead of lines, on real databases in real directories.

"Split anywhere" becomes: the watermark is saved with the records, a read sees one
snapshot, a row updated in place is read again and replaces its events, a replay adds
nothing, a kill at any moment and a restart give what one clean run gives.  Helix never
writes to, locks or checkpoints an agent's database."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import sqlite3
import tempfile
import time
from functools import partial
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.adapters import Adapter, Chunk, FileContext, adapter_named
from helixd.adapters.guard import parse_total
from helixd.adapters.registry import REGISTRY
from helixd.ingest.pipeline import Ingestor, discover
from helixd.ingest.stats import IngestStats
from helixd.sources import sqlite as dbsource
from helixd.store import agentdb
from helixd.store.database import Store
from tests.conftest import cli_env
from tests.contract_helpers import FIXTURES, sample_bytes, samples
from tests.db_snapshot import snapshot
from tests.fault_helpers import count_rows, ingest_killed_after, ingest_killed_mid_write

CRUSH = adapter_named("crush")
WAL_ONLY = FIXTURES / "crush" / "tuliopc23__LiqUIdify" / ".crush"
EMPTY_V8 = FIXTURES / "crush" / "LarsArtmann__go-filewatcher" / ".crush" / "crush.db"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def project_with(tmp: Path, name: str, source_dir: Path) -> Path:
    """A project directory holding a copy of ``source_dir`` (a ``.crush`` directory)."""
    project = tmp / name
    shutil.copytree(source_dir, project / ".crush")
    for f in (project / ".crush").iterdir():
        f.chmod(0o644)
    return project


async def ingest(db: Path, *pairs: tuple[Adapter, Path]) -> IngestStats:
    async with await Store.open(db) as store:
        return await Ingestor(store).backfill(discover(list(pairs)))


def events(db: Path) -> list[tuple[str, str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT s.uid, e.kind, coalesce(e.body, '') FROM events e"
            " JOIN sessions s ON s.id = e.session_id ORDER BY s.uid, e.seq"
        ).fetchall()
    finally:
        con.close()


# -- an agent's database, written the way the agent writes it --------------------------------


class Agent:
    """A Crush database in WAL mode written through its own connection (the agent)."""

    def __init__(self, project: Path) -> None:
        (project / ".crush").mkdir(parents=True)
        self.path = project / ".crush" / "crush.db"
        shutil.copyfile(EMPTY_V8, self.path)  # the real schema (goose_db_version 8)
        self.con = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA wal_autocheckpoint=0")  # the data stays in the WAL

    def session(self, sid: str, t: int, prompt: int = 0, completion: int = 0) -> None:
        """Insert or update (as Crush does: an UPDATE, whose trigger sets ``updated_at`` to
        now, in seconds)."""
        self.con.execute(
            "INSERT INTO sessions (id, title, message_count, prompt_tokens, completion_tokens,"
            " cost, updated_at, created_at) VALUES (?, 't', 0, ?, ?, 0, ?, ?) ON CONFLICT (id)"
            " DO UPDATE SET prompt_tokens = excluded.prompt_tokens,"
            " completion_tokens = excluded.completion_tokens",
            (sid, prompt, completion, t, t),
        )

    def message(self, mid: str, sid: str, role: str, parts: list[object], t: int) -> None:
        done = any(isinstance(p, dict) and p.get("type") == "finish" for p in parts)
        self.con.execute(
            "INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at,"
            " finished_at) VALUES (?, ?, ?, ?, 'm1', ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
            " parts = excluded.parts, finished_at = excluded.finished_at",
            (mid, sid, role, orjson.dumps(parts).decode(), 1_754_000_000, t, t if done else None),
        )

    def close(self) -> None:
        self.con.close()


def text(s: str) -> dict[str, object]:
    return {"type": "text", "data": {"text": s}}


FINISH = {"type": "finish", "data": {"reason": "end_turn", "time": 1_754_000_100}}


# -- the tests ---------------------------------------------------------------------------------


async def test_a_database_whose_data_lives_only_in_its_wal_is_read_and_left_untouched(
    tmp_path: Path,
) -> None:
    project = project_with(tmp_path, "p", WAL_ONLY)
    db_file, wal = project / ".crush" / "crush.db", project / ".crush" / "crush.db-wal"
    before = (sha(db_file), sha(wal), db_file.stat().st_mtime_ns, wal.stat().st_mtime_ns)
    assert db_file.stat().st_size == 4096  # the main file holds no row: all are in the WAL
    stats = await ingest(tmp_path / "h.db", (CRUSH, project))
    assert (stats.files_read, stats.bad_lines, stats.errors) == (1, 0, [])
    # 2 sessions, 10 messages in the WAL (sqlite3 over a copy); 17 events (test_crush.py)
    assert len({uid for uid, _, _ in events(tmp_path / "h.db")}) == 2
    assert len(events(tmp_path / "h.db")) == 17
    after = (sha(db_file), sha(wal), db_file.stat().st_mtime_ns, wal.stat().st_mtime_ns)
    assert after == before, "Helix changed the agent's database or its WAL"


async def test_nothing_new_opens_nothing_and_a_touch_reads_no_row(tmp_path: Path) -> None:
    project = project_with(tmp_path, "p", WAL_ONLY)
    db = tmp_path / "h.db"
    await ingest(db, (CRUSH, project))
    again = await ingest(db, (CRUSH, project))
    assert (again.files_read, again.bytes_read) == (0, 0)
    wal = project / ".crush" / "crush.db-wal"
    os.utime(wal, ns=(time.time_ns(), time.time_ns()))  # the agent opened it, wrote nothing
    touched = await ingest(db, (CRUSH, project))
    assert (touched.files_read, touched.bytes_read, touched.events) == (1, 0, 0)


async def test_new_rows_only_are_read_and_a_row_updated_in_place_replaces_its_events(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path / "p")
    agent.session("s1", 100)
    agent.message("m1", "s1", "user", [text("hello"), FINISH], 100)
    agent.message("m2", "s1", "assistant", [text("I'll lo")], 101)  # still streaming
    db = tmp_path / "h.db"
    first = await ingest(db, (CRUSH, tmp_path / "p"))
    assert [k for _, k, _ in events(db)] == ["user_msg", "assistant_msg"]
    assert events(db)[1][2] == "I'll lo"

    agent.message("m2", "s1", "assistant", [text("I'll look at it."), FINISH], 105)
    agent.session("s1", 105, prompt=1200, completion=80)
    second = await ingest(db, (CRUSH, tmp_path / "p"))
    # only the two changed rows were read: the updated message and its session
    assert second.lines == 2 and 0 < second.bytes_read < first.bytes_read + 200
    rows = events(db)
    assert [k for _, k, _ in rows] == ["user_msg", "assistant_msg"], rows
    assert rows[1][2] == "I'll look at it."
    con = sqlite3.connect(db)
    usage = con.execute("SELECT input, output FROM usage").fetchall()
    con.close()
    assert usage == [(1200, 80)]
    third = await ingest(db, (CRUSH, tmp_path / "p"))
    assert third.bytes_read == 0
    agent.close()


async def test_reading_never_blocks_the_agent_and_sees_one_snapshot(tmp_path: Path) -> None:
    agent = Agent(tmp_path / "p")
    agent.session("s1", 100)
    for i in range(50):
        agent.message(f"m{i:03d}", "s1", "user", [text("x" * 200), FINISH], 100 + i)
    tables = CRUSH.tables
    with agentdb.snapshot(str(agent.path)) as conn:
        rows = partial(agentdb.rows, conn)
        pieces = dbsource.read_rows(rows, tables, {}, 0, 1024)
        first = next(pieces)  # the read is under way, its transaction open
        # the agent writes and commits meanwhile, without waiting (busy timeout 0)
        agent.message("m999", "s1", "user", [text("later"), FINISH], 999)
        rest = list(pieces)
    seen = b"".join(p.data for p in [first, *rest])
    assert b"later" not in seen and seen.count(b'"table":"messages"') == 50
    marks = rest[-1].marks
    assert marks is not None
    with agentdb.snapshot(str(agent.path)) as conn:
        more = list(dbsource.read_rows(partial(agentdb.rows, conn), tables, marks, len(seen), 1024))
    new = b"".join(p.data for p in more)
    # the new message, and its session (Crush's trigger counted the message there)
    assert new.count(b'"table":"messages"') == 1 and b"later" in new
    assert new.count(b'"table":"sessions"') == 1 and b'"message_count":51' in new
    agent.close()


async def test_a_copy_of_a_database_elsewhere_adds_nothing(tmp_path: Path) -> None:
    """A replay: the same rows read again (another project holding a copy, a restored
    backup) add no event and no usage."""
    db = tmp_path / "h.db"
    big = FIXTURES / "crush" / "Starmel__OpenSuperWhisper" / ".crush"
    await ingest(db, (CRUSH, project_with(tmp_path, "a", big)))
    once = events(db)
    again = await ingest(db, (CRUSH, project_with(tmp_path, "b", big)))
    assert again.files_read == 1 and again.events > 0  # read, and every event known
    assert events(db) == once
    con = sqlite3.connect(db)
    usage = con.execute("SELECT count(*) FROM usage").fetchone()[0]
    con.close()
    assert usage == 2  # 2 of its 3 sessions carry tokens (prompt + completion > 0)


async def test_a_linked_database_is_not_read(tmp_path: Path) -> None:
    elsewhere = project_with(tmp_path, "elsewhere", WAL_ONLY)
    project = tmp_path / "p"
    (project / ".crush").mkdir(parents=True)
    (project / ".crush" / "crush.db").symlink_to(elsewhere / ".crush" / "crush.db")
    stats = await ingest(tmp_path / "h.db", (CRUSH, project))
    assert stats.files_read == 0 and stats.events == 0
    assert stats.skipped_paths, "the link is counted as not read"


def write_big_db(project: Path, sessions: int = 12, messages: int = 150) -> None:
    agent = Agent(project)
    rng = random.Random(5)
    agent.con.execute("BEGIN")
    for s in range(sessions):
        sid = f"s{s:03d}"
        agent.session(sid, 1_754_000_000 + s, prompt=1000 + s, completion=10 + s)
        for m in range(messages):
            role = "user" if m % 2 == 0 else "assistant"
            body = "w" * rng.randint(100, 4000)
            agent.message(f"{sid}-m{m:04d}", sid, role, [text(body), FINISH], 1_754_000_000 + m)
    agent.con.execute("COMMIT")
    agent.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    agent.close()


def run_ingest(home: Path, db: Path, project: Path) -> int:
    env = cli_env(home, db, HELIX_INGEST__CHUNK_BYTES="32KiB")
    return ingest_killed_after(["--agent", "crush", "--root", str(project)], env, None)


def test_sigkill_while_reading_a_database_then_resume_equals_a_clean_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    write_big_db(project)
    before = sha(project / ".crush" / "crush.db")
    clean = tmp_path / "clean.db"
    run_ingest(home, clean, project)
    rng = random.Random(3)
    # A fresh store each time, killed just after the ingest's first commit (this database's
    # rows commit in one group: the kill lands in what follows it — digests, the retention
    # pass, the close), then resumed: the same rows as the clean run.
    for n in range(2):
        crashed = tmp_path / f"crashed{n}.db"
        env = cli_env(home, crashed, HELIX_INGEST__CHUNK_BYTES="32KiB")
        args = ["--agent", "crush", "--root", str(project)]
        code = ingest_killed_mid_write(args, env, crashed, rng.uniform(0, 0.01))
        assert code == -signal.SIGKILL, "the ingest finished before it could be killed"
        assert 0 < count_rows(crashed) <= count_rows(clean)  # killed after a commit
        run_ingest(home, crashed, project)
        assert snapshot(crashed) == snapshot(clean)
    assert sha(project / ".crush" / "crush.db") == before


DB_ADAPTERS = [a for a in REGISTRY if a.tables]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_row_line_costs_that_line_only(data: st.DataObject) -> None:
    adapter = data.draw(st.sampled_from(DB_ADAPTERS), label="adapter")
    path, rel = samples(adapter)[-1]
    lines = [x for x in sample_bytes(adapter, path).split(b"\n") if x]
    at = data.draw(st.integers(0, len(lines) - 1), label="line")
    junk = data.draw(st.binary(min_size=1, max_size=6).filter(lambda b: b"\n" not in b))
    cut = data.draw(st.integers(0, len(lines[at])), label="cut")
    mutated = [*lines]
    mutated[at] = lines[at][:cut] + junk + lines[at][cut + len(junk) :]
    blob = b"\n".join(mutated) + b"\n"
    parsed = parse_total(adapter, Chunk(blob, 0, True, FileContext(str(path), rel)), {})
    assert parsed.consumed == len(blob)
    start = sum(len(x) + 1 for x in mutated[:at])
    assert {b.offset for b in parsed.bad} <= {start}


async def test_a_database_at_rest_is_read_without_creating_anything_beside_it(
    tmp_path: Path,
) -> None:
    """A WAL-mode database with no ``-wal`` (the agent is not running) is read ``immutable``:
    no ``-wal``, no ``-shm`` appear, and the next scan finds nothing changed."""
    project = project_with(
        tmp_path, "p", FIXTURES / "crush" / "Starmel__OpenSuperWhisper" / ".crush"
    )
    before = sorted(os.listdir(project / ".crush"))
    digest = sha(project / ".crush" / "crush.db")
    db = tmp_path / "h.db"
    assert (await ingest(db, (CRUSH, project))).events > 0
    assert sorted(os.listdir(project / ".crush")) == before == ["crush.db"]
    assert sha(project / ".crush" / "crush.db") == digest
    assert (await ingest(db, (CRUSH, project))).files_read == 0


def test_a_row_whose_text_is_not_utf8_is_read_with_the_rows_after_it(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in a text column are replaced, never a reason to stop: the
    rows after that one are read too."""
    path = tmp_path / "bad.db"
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("CREATE TABLE messages (id TEXT, created_at INTEGER, parts TEXT)")
    con.execute("INSERT INTO messages VALUES ('a', 1, 'ok')")
    con.execute("INSERT INTO messages VALUES ('b', 2, CAST(x'ff' AS TEXT))")
    con.execute("INSERT INTO messages VALUES ('c', 3, 'later row')")
    con.close()
    from helixd.adapters.base import Table

    with agentdb.snapshot(str(path)) as conn:
        rows = partial(agentdb.rows, conn)
        data = b"".join(
            p.data
            for p in dbsource.read_rows(rows, [Table("messages", "", "created_at")], {}, 0, 1)
        )
    assert data.count(b'"table":"messages"') == 3 and b"later row" in data
    assert "\ufffd".encode() in data


async def test_the_agent_writes_while_helix_commits_what_it_read(tmp_path: Path) -> None:
    """A rollback-journal database (Cursor's state.vscdb, Goose): Helix's read transaction
    is closed before the first row line is handed on, so the agent's writer is never held
    for the time the store takes to commit them."""
    project = project_with(
        tmp_path, "p", FIXTURES / "crush" / "Starmel__OpenSuperWhisper" / ".crush"
    )
    db = project / ".crush" / "crush.db"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=DELETE")  # the agent without WAL
    con.close()
    assert not Path(f"{db}-wal").exists()
    async with await Store.open(tmp_path / "helix.db") as store:
        ingestor = Ingestor(store)
        src = next(s for s in discover([(CRUSH, project)]) if s.path == str(db))
        planned = ingestor._plan_db(src, None, IngestStats())
        next(planned)  # the first piece is handed on: Helix is between read and commit
        agent = sqlite3.connect(db, isolation_level=None, timeout=0)
        agent.execute("CREATE TABLE IF NOT EXISTS helix_probe (x)")  # needs the write lock
        agent.close()
        planned.close()


def test_a_link_swapped_in_after_the_gate_is_not_read(tmp_path: Path) -> None:
    """SQLite opens by name and follows links: the name is checked again once the database
    is open, so a link to a database outside the roots swapped in after the path gate's
    check (which opened the file without following links) reads nothing."""
    inside = tmp_path / "inside.db"
    outside = tmp_path / "outside.db"
    for path, word in ((inside, "inside"), (outside, "secret outside")):
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("CREATE TABLE t (v TEXT)")
        con.execute("INSERT INTO t VALUES (?)", (word,))
        con.close()
    st = inside.stat()
    admitted = (st.st_dev, st.st_ino)
    with agentdb.snapshot(str(inside), admitted) as conn:  # unchanged: read
        assert conn.execute("SELECT v FROM t").fetchone() == ("inside",)
    inside.rename(tmp_path / "moved.db")
    inside.symlink_to(outside)
    try:
        with agentdb.snapshot(str(inside), admitted) as conn:
            raise AssertionError(f"read through the link: {conn.execute('SELECT v FROM t')}")
    except agentdb.Swapped:
        pass
    with tempfile.TemporaryDirectory() as tmp:  # the private copy opens without links too
        try:
            agentdb.private_copy(str(inside), tmp, admitted)
            raise AssertionError("copied through the link")
        except (agentdb.Swapped, OSError):
            pass
    inside.unlink()
    shutil.copyfile(outside, inside)  # another regular file under the name
    try:
        with agentdb.snapshot(str(inside), admitted):
            raise AssertionError("read another file than the one admitted")
    except agentdb.Swapped:
        pass

"""The writer's statements and the values they take: the sessions upsert (one row or many),
the event row insert and update, the event totals' updates (m027), a file's counters and
cursor, and the repository name of a working directory.  Plain data and pure functions; the
``Writer`` (``store/writer.py``) and the live run (``store/runwrite.py``) run them."""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Final

import orjson

from helixd.core.records import Cursor
from helixd.store.batch import Batch

_SESSION_COLUMNS: Final = """
INSERT INTO sessions (uid, agent, native_id, parent_uid, cwd, repo, git_branch, git_commit,
    model, title, version, agent_type, started_at, ended_at, ended, adapter_version,
    source_path, discovered_at, ingested_at, changed_at)"""
_SESSION_CONFLICT: Final = """
ON CONFLICT (uid) DO UPDATE SET
    parent_uid = coalesce(excluded.parent_uid, parent_uid),
    cwd = coalesce(excluded.cwd, cwd),
    repo = CASE WHEN repo_root IS NULL THEN coalesce(excluded.repo, repo) ELSE repo END,
    git_branch = coalesce(excluded.git_branch, git_branch),
    git_commit = coalesce(excluded.git_commit, git_commit),
    model = coalesce(excluded.model, model),
    title = coalesce(excluded.title, title),
    version = coalesce(excluded.version, version),
    agent_type = coalesce(excluded.agent_type, agent_type),
    started_at = min(coalesce(excluded.started_at, started_at),
                     coalesce(started_at, excluded.started_at)),
    ended_at = max(coalesce(excluded.ended_at, ended_at), coalesce(ended_at, excluded.ended_at)),
    ended = max(ended, excluded.ended),
    adapter_version = coalesce(excluded.adapter_version, adapter_version),
    source_path = coalesce(source_path, excluded.source_path),
    ingested_at = excluded.ingested_at,
    changed_at = excluded.changed_at"""
UPSERT_SESSION: Final = (
    _SESSION_COLUMNS
    + """
VALUES (:uid, :agent, :native_id, :parent_uid, :cwd, :repo, :git_branch, :git_commit,
    :model, :title, :version, :agent_type, :first_ts, :last_ts, :ended, :adapter_version,
    :source_path, :now, :now, :now)"""
    + _SESSION_CONFLICT
    + "\nRETURNING id, next_seq, parent_uid"
)
SESSION_VALUES: Final = 20  # values of one session row (``session_values``)


def upsert_sessions_sql(n: int) -> str:
    """The sessions upsert of ``n`` rows (``session_values`` each) in one statement,
    returning each row's ``uid, id, next_seq, parent_uid``."""
    marks = ",".join(["(" + ",".join("?" * SESSION_VALUES) + ")"] * n)
    return (
        f"{_SESSION_COLUMNS} VALUES {marks} {_SESSION_CONFLICT}"
        " RETURNING uid, id, next_seq, parent_uid"
    )


def session_values(row: dict[str, Any], c: Cursor, own: bool, now: int) -> tuple[Any, ...]:
    """A merged session row (``merge_infos``) as the upsert's values, in column order; the
    file's adapter version and path go to the session the file belongs to (``own``)."""
    get = row.get
    return (
        row["uid"],
        row["agent"],
        row["native_id"],
        get("parent_uid"),
        get("cwd"),
        repo_of(get("cwd")),
        get("git_branch"),
        get("git_commit"),
        get("model"),
        get("title"),
        get("version"),
        get("agent_type"),
        get("first_ts"),
        get("last_ts"),
        get("ended", 0),
        c.adapter_version if own else None,
        c.path if own else None,
        now,
        now,
        now,
    )


_EVENT_CONTENT: Final = (
    "ts, kind, role, tool, call_id, summary, body, tokens, is_error, is_sidechain,"
    " payload_bytes, offset, lines_added, lines_removed, status, test_framework, tests_passed,"
    " tests_failed, tests_skipped"
)
INSERT_EVENT: Final = (
    "INSERT OR IGNORE INTO events (id, session_id, seq, parent_seq, ekey, akey, file_id,"
    f" {_EVENT_CONTENT}) VALUES ({', '.join('?' * (7 + len(_EVENT_CONTENT.split(','))))})"
)
# Event ids only ever grow (the full-text index and ``search_docs`` name events by id, and
# keep entries of events that eviction or re-normalization deleted): the highest id ever
# given is kept here.
ID_FLOOR_KEY: Final = "event_id_floor"
# Where an event row (``INSERT_EVENT``'s values) holds its summary and body.
SUMMARY_AT: Final = 7 + [c.strip() for c in _EVENT_CONTENT.split(",")].index("summary")
BODY_AT: Final = SUMMARY_AT + 1
ADD_EVENT_TOTALS: Final = (
    "UPDATE event_totals SET event_rows = event_rows + ?, text_bytes = text_bytes + ? WHERE id = 1"
)
# The same from the stored rows of an id range (some rows of the range were ignored).
COUNT_EVENT_TOTALS: Final = (
    "UPDATE event_totals SET (event_rows, text_bytes) = (SELECT event_rows + count(*),"
    " text_bytes + coalesce(sum(length(CAST(summary AS BLOB))"
    " + coalesce(length(CAST(body AS BLOB)), 0)), 0) FROM events WHERE id BETWEEN ? AND ?)"
    " WHERE id = 1"
)
UPDATE_EVENT: Final = (
    "UPDATE events SET "
    + ", ".join(f"{c.strip()} = ?" for c in _EVENT_CONTENT.split(","))
    + ", file_id = ? WHERE session_id = ? AND ekey = ?"
)


FILE_CURSOR: Final = (
    "agent=?, path=?, root=?, dev=?, ino=?, size=?, mtime_ns=?, offset=?, head_hash=?,"
    " head_len=?, generation=?, adapter_version=?, state=?, updated_at=?"
)
FILE_COUNTS: Final = (
    "UPDATE files SET lines = lines + ?, bad_lines = bad_lines + ?,"
    " unknown_records = unknown_records + ?, redactions = redactions + ?,"
    " raw_bytes = raw_bytes + ?, session_id = coalesce(?, session_id),"
    " sidecar = coalesce(?, sidecar)"
)
FILE_PART: Final = FILE_COUNTS + ", " + FILE_CURSOR + ", gone_at = NULL WHERE id = ?"


def cursor_values(c: Cursor, now: int) -> tuple[Any, ...]:
    """The values of ``FILE_CURSOR`` for cursor ``c``, in order."""
    return (
        c.agent,
        c.path,
        c.root,
        c.dev,
        c.ino,
        c.size,
        c.mtime_ns,
        c.offset,
        c.head_hash,
        c.head_len,
        c.generation,
        c.adapter_version,
        orjson.dumps(c.state),
        now,
    )


def file_counts(batch: Batch, stored: int, session_id: int | None, bad: int = 0) -> tuple[Any, ...]:
    """The values of ``FILE_COUNTS`` for a batch that stored ``stored`` raw bytes and
    ``bad`` bad lines."""
    p = batch.parsed
    return (
        p.lines,
        bad,
        sum(p.unknown_types.values()),
        batch.redactions,
        stored,
        session_id,
        batch.sidecar,
    )


def file_part_values(
    batch: Batch, stored: int, session_id: int | None, now: int
) -> tuple[Any, ...]:
    """The values of ``FILE_PART``: a known file's counters and its cursor."""
    c = batch.cursor
    return (*file_counts(batch, stored, session_id), *cursor_values(c, now), c.file_id)


# ``sqlite3`` binds an int, a float or a str directly but sends any other value, ``None``
# included, through its adapter look-up: with no adapter registered for ``None`` that look-up
# also asks the value for ``__adapt__`` and ``__conform__`` (two failed attribute look-ups),
# ~310 ns a parameter against ~50 ns for an int.  An event row binds ~6.5 ``None`` on
# average (330 000 per 204 MB).  Registered, the look-up finds ``_EMPTY.get`` at once (~125 ns)
# and its result, ``None``, is bound as NULL as before (``tests/test_bulk_write.py``).
_EMPTY: Final[dict[object, None]] = {}  # its ``get``: a C callable, None for any value


def bind_none_directly() -> None:
    """Register ``None``'s adapter (process-wide, idempotent; NULL is bound either way)."""
    sqlite3.register_adapter(type(None), _EMPTY.get)


def repo_of(cwd: Any) -> str | None:
    """The repository name for a working directory: its last path component (Windows paths
    included, since transcripts travel between machines)."""
    if not isinstance(cwd, str) or not cwd:
        return None
    return _last_component(cwd)


@lru_cache(maxsize=1024)
def _last_component(cwd: str) -> str:
    """(cached: a live run upserts each busy session every few lines with the same working
    directory; a ``PurePath`` costs ~4 us, a cache hit 0.2 us)"""
    path = PureWindowsPath(cwd) if "\\" in cwd else PurePosixPath(cwd)
    return path.name or cwd

"""Read queries: cursors for the tailer, sessions and digests for the CLI, and the facts a
digest is built from.  Every function takes an open connection and returns plain values."""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import orjson

from helixd.core.records import Cursor
from helixd.store import badlines
from helixd.store.queries import DIGEST_DUE

_CURSOR_COLS: Final = (
    "id, path, agent, root, dev, ino, size, mtime_ns, offset, head_hash, head_len, generation,"
    " adapter_version, state"
)
SESSION_COLS: Final = (
    "id, uid, agent, native_id, parent_uid, cwd, repo, git_branch, model, title, version,"
    " agent_type, started_at, ended_at, ended, messages, events, adapter_version, source_path,"
    " discovered_at, ingested_at, changed_at, analyzed_at, evicted_at, repo_root, domain, task_ref,"
    " git_commit"
)
_SESSION_NAMES: Final = [c.strip() for c in SESSION_COLS.split(",")]


def _cursor(row: Any) -> Cursor:
    return Cursor(
        file_id=row[0],
        path=row[1],
        agent=row[2],
        root=row[3],
        dev=row[4],
        ino=row[5],
        size=row[6],
        mtime_ns=row[7],
        offset=row[8],
        head_hash=bytes(row[9]),
        head_len=row[10],
        generation=row[11],
        adapter_version=row[12],
        state=orjson.loads(row[13]),
    )


def cursors(db: sqlite3.Connection) -> dict[str, Cursor]:
    """Every file's cursor, by path (one query: a re-scan of 10,000 files stays cheap)."""
    cur = db.execute(f"SELECT {_CURSOR_COLS} FROM files")
    return {row[1]: _cursor(row) for row in cur.fetchall()}


def cursor_by_identity(db: sqlite3.Connection, dev: int, ino: int) -> list[Cursor]:
    cur = db.execute(f"SELECT {_CURSOR_COLS} FROM files WHERE dev = ? AND ino = ?", (dev, ino))
    return [_cursor(row) for row in cur.fetchall()]


def session_row(row: Any) -> dict[str, Any]:
    return dict(zip(_SESSION_NAMES, row, strict=True))


def sessions(
    db: sqlite3.Connection, agent: str | None, limit: int | None, include_empty: bool
) -> list[dict[str, Any]]:
    """Sessions newest first.  Sessions without a single message (files of only
    ``summary`` lines, say) are hidden unless ``include_empty``."""
    where, params = [], []
    if agent:
        where.append("agent = ?")
        params.append(agent)
    if not include_empty:
        where.append("messages > 0")
    sql = f"SELECT {SESSION_COLS} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY coalesce(started_at, discovered_at) DESC, id DESC"
    if limit:
        sql += f" LIMIT {int(limit)}"
    cur = db.execute(sql, params)
    return [session_row(row) for row in cur.fetchall()]


def find_sessions(db: sqlite3.Connection, query: str, limit: int) -> list[dict[str, Any]]:
    """Sessions matching a uid (``claude:<id>``), a bare native id, or a unique prefix of
    either.  An exact match wins over prefixes."""
    for sql in (
        f"SELECT {SESSION_COLS} FROM sessions WHERE uid = ?",
        f"SELECT {SESSION_COLS} FROM sessions WHERE native_id = ?",
    ):
        cur = db.execute(sql, (query,))
        rows = cur.fetchall()
        if rows:
            return [session_row(r) for r in rows]
    upper = query + "\U0010ffff"
    cur = db.execute(
        f"SELECT {SESSION_COLS} FROM sessions WHERE (uid >= ? AND uid < ?)"
        f" OR (native_id >= ? AND native_id < ?) ORDER BY uid LIMIT ?",
        (query, upper, query, upper, limit),
    )
    return [session_row(r) for r in cur.fetchall()]


def digest(db: sqlite3.Connection, session_id: int) -> dict[str, Any] | None:
    cur = db.execute("SELECT json FROM digests WHERE session_id = ?", (session_id,))
    row = cur.fetchone()
    return orjson.loads(row[0]) if row else None


# A session whose events were evicted (stage 2) keeps its digest as it is: rebuilding it
# from the events left would overwrite the distilled memory with less (docs/storage.md).
_NOT_EMPTIED: Final = "evict_stage < 2"


def changed_since_analysis(db: sqlite3.Connection) -> list[int]:
    cur = db.execute(f"SELECT id FROM sessions WHERE {DIGEST_DUE}")
    return [int(r[0]) for r in cur.fetchall()]


def _one(db: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> Any:
    cur = db.execute(sql, params)
    return cur.fetchone()


def _all(db: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
    cur = db.execute(sql, params)
    return list(cur.fetchall())


_USAGE_SUM: Final = (
    "SELECT count(*), coalesce(sum(input), 0), coalesce(sum(output), 0),"
    " coalesce(sum(cache_read), 0), coalesce(sum(cache_write_5m), 0),"
    " coalesce(sum(cache_write_1h), 0), coalesce(sum(reasoning), 0) FROM usage"
)


def _usage(row: Any) -> dict[str, int]:
    return {
        "responses": row[0],
        "input_tokens": row[1],
        "output_tokens": row[2],
        "cache_read_tokens": row[3],
        "cache_write_5m_tokens": row[4],
        "cache_write_1h_tokens": row[5],
        "reasoning_tokens": row[6],
    }


def file_problems(db: sqlite3.Connection, session_id: int) -> dict[str, int]:
    row = _one(
        db,
        "SELECT count(*), coalesce(sum(bad_lines), 0),"
        " coalesce(sum(unknown_records), 0), coalesce(sum(redactions), 0),"
        " coalesce(sum(offset), 0), coalesce(sum(gone_at IS NOT NULL), 0)"
        " FROM files WHERE session_id = ?",
        (session_id,),
    )
    return {
        "files": row[0],
        "malformed_lines": row[1],
        "unknown_records": row[2],
        "redactions": row[3],
        "source_bytes": row[4],
        "files_gone": row[5],
    }


def totals(db: sqlite3.Connection) -> dict[str, Any]:
    agents = _all(
        db,
        "SELECT agent, count(*), sum(events), sum(messages > 0) FROM sessions GROUP BY agent",
        (),
    )
    files = _one(
        db,
        "SELECT count(*), coalesce(sum(offset), 0), coalesce(sum(lines), 0),"
        " coalesce(sum(bad_lines), 0), coalesce(sum(raw_bytes), 0)"
        " FROM files",
        (),
    )
    return {
        "agents": {
            a: {"sessions": s, "events": e or 0, "with_messages": m or 0} for a, s, e, m in agents
        },
        "files": files[0],
        "bytes_read": files[1],
        "lines": files[2],
        "malformed_lines": files[3],
        "raw_bytes_stored": files[4],
    }


def cursor_for(db: sqlite3.Connection, path: str) -> Cursor | None:
    cur = db.execute(f"SELECT {_CURSOR_COLS} FROM files WHERE path = ?", (path,))
    row = cur.fetchone()
    return _cursor(row) if row else None


def sessions_to_analyze(
    db: sqlite3.Connection, now: int, idle_ms: int, max_events: int | None = None
) -> list[int]:
    """Sessions whose digest is missing or older than their last change, and provisional
    digests of sessions that have now been idle long enough to be closed; with
    ``max_events``, only sessions that small (a digest costs O(session))."""
    limit = "" if max_events is None else f" AND events <= {int(max_events)}"
    cur = db.execute(
        f"SELECT id FROM sessions WHERE {DIGEST_DUE}{limit}"
        " UNION SELECT s.id FROM sessions s JOIN digests d ON d.session_id = s.id"
        " WHERE d.provisional = 1 AND (s.ended = 1 OR coalesce(s.ended_at, 0) < ?)"
        f" AND s.{_NOT_EMPTIED}",
        (now - idle_ms,),
    )
    return [int(r[0]) for r in cur.fetchall()]


def analyzable_session_ids(db: sqlite3.Connection) -> list[int]:
    """Every session whose events are still stored (a digest can be rebuilt)."""
    cur = db.execute(f"SELECT id FROM sessions WHERE {_NOT_EMPTIED}")
    return [int(r[0]) for r in cur.fetchall()]


def raw_bytes_of(db: sqlite3.Connection, session_ids: list[int]) -> int:
    """Source bytes read for these sessions (their files' cursors)."""
    total = 0
    for i in range(0, len(session_ids), 500):
        part = session_ids[i : i + 500]
        row = _one(
            db,
            "SELECT coalesce(sum(offset), 0) FROM files"
            f" WHERE session_id IN ({','.join('?' * len(part))})",
            tuple(part),
        )
        total += int(row[0])
    return total


def status_facts(db: sqlite3.Connection) -> dict[str, Any]:
    """What ``helixctl status`` shows from the store alone."""
    summary = totals(db)
    summary["files_gone"] = (_one(db, "SELECT count(*) FROM files WHERE gone_at IS NOT NULL", ()))[
        0
    ]
    summary["digests"] = (_one(db, "SELECT count(*) FROM digests", ()))[0]
    summary["unknown_records"] = (
        _one(db, "SELECT coalesce(sum(unknown_records), 0) FROM files", ())
    )[0]
    summary["malformed_by_agent"] = dict(_all(db, badlines.BY_AGENT_SQL, ()))
    summary["malformed_latest"] = [
        {"agent": a, "path": p, "offset": o, "length": n, "reason": r}
        for a, p, o, n, r in _all(db, badlines.LATEST_SQL, (5,))
    ]
    if _one(db, "SELECT 1 FROM sqlite_master WHERE name = 'data_loss'", ()):
        loss = _one(db, "SELECT count(*), coalesce(sum(bytes), 0), max(at) FROM data_loss", ())
        summary["data_loss"] = {"sessions": loss[0], "bytes": loss[1], "last_at": loss[2]}
        ev = _one(db, "SELECT count(*), coalesce(sum(bytes), 0), max(at) FROM evictions", ())
        summary["evictions"] = {"count": ev[0], "bytes": ev[1], "last_at": ev[2]}
    files = _all(db, "SELECT path, offset, gone_at FROM files", ())
    return {"summary": summary, "files": [tuple(f) for f in files]}


def cursors_for(db: sqlite3.Connection, paths: list[str]) -> dict[str, Cursor]:
    """The cursors of ``paths`` that are known, by path (one hop for a group of files)."""
    found: dict[str, Cursor] = {}
    for i in range(0, len(paths), 500):
        part = paths[i : i + 500]
        cur = db.execute(
            f"SELECT {_CURSOR_COLS} FROM files WHERE path IN ({','.join('?' * len(part))})", part
        )
        found.update((row[1], _cursor(row)) for row in cur.fetchall())
    return found

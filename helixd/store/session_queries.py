"""Read queries about sessions: the list (filters, pages, a total), finding one by a reference
a person typed, its digest, its files' problems, its links, and what ``status`` shows.

Synchronous on a read-only ``sqlite3`` connection (``store/readonly.py``), like every query
the faces (CLI, HTTP API, MCP) ask through ``helixd/query/``.  Plain rows out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from helixd.store.queries import report_sums, session_filter

SESSION_COLS: Final = (
    "id, uid, agent, native_id, parent_uid, cwd, repo, git_branch, model, title, version,"
    " agent_type, started_at, ended_at, ended, messages, events, adapter_version, source_path,"
    " discovered_at, ingested_at, changed_at, analyzed_at, evicted_at"
)
SESSION_NAMES: Final = tuple(c.strip() for c in SESSION_COLS.split(","))
_LISTED: Final = ", ".join(f"s.{c}" for c in SESSION_NAMES)


class SessionFilter(NamedTuple):
    """Which sessions: of these agents, of a repo (its name, or a directory at or under a
    path), active in ``[since, until)`` (epoch ms), of this digest outcome, that used this
    model; sessions without a single message only with ``include_empty``."""

    agents: Sequence[str] = ()
    repo: str | None = None
    since: int | None = None
    until: int | None = None
    outcome: str | None = None
    model: str | None = None
    include_empty: bool = False


def _where(f: SessionFilter) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    session_filter(where, params, f.agents, f.repo)
    if not f.include_empty:
        where.append("s.messages > 0")
    if f.since is not None:
        where.append("coalesce(s.ended_at, s.started_at) >= ?")
        params.append(f.since)
    if f.until is not None:
        where.append("s.started_at < ?")
        params.append(f.until)
    if f.outcome:
        where.append(
            "EXISTS (SELECT 1 FROM digests d WHERE d.session_id = s.id"
            " AND json_extract(d.json, '$.outcome') = ?)"
        )
        params.append(f.outcome)
    if f.model:
        where.append(
            "(s.model = ? OR substr(s.model, 1, ?) = ? OR EXISTS (SELECT 1 FROM usage_buckets b"
            " WHERE b.session_id = s.id AND (b.model = ? OR substr(b.model, 1, ?) = ?)))"
        )
        params.extend([f.model, len(f.model) + 1, f.model + "-"] * 2)
    return (" WHERE " + " AND ".join(where)) if where else "", params


def list_sessions(
    con: sqlite3.Connection, f: SessionFilter, limit: int | None, offset: int = 0
) -> tuple[list[dict[str, Any]], int]:
    """``(rows, total)``: sessions newest first (those without a known time last), each with
    its digest's first prompt and outcome; ``total`` counts every session the filter keeps."""
    where, params = _where(f)
    total = con.execute(f"SELECT count(*) FROM sessions s{where}", params).fetchone()[0]
    # The page is picked from the sessions alone, then its digests are read: a join before
    # the sort would parse every session's digest JSON to keep 50 (40 ms -> 2 ms, 2 279
    # sessions).
    order = " ORDER BY s.started_at IS NULL, s.started_at DESC, s.id DESC"
    page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
    sql = (
        f"SELECT {_LISTED}, json_extract(d.json, '$.first_prompt'),"
        f" json_extract(d.json, '$.outcome') FROM (SELECT * FROM sessions s{where}{order}{page}) s"
        f" LEFT JOIN digests d ON d.session_id = s.id{order}"
    )
    rows = []
    for r in con.execute(sql, params):
        row = dict(zip(SESSION_NAMES, r, strict=False))
        row["first_prompt"], row["outcome"] = r[-2], r[-1]
        rows.append(row)
    return rows, int(total)


def usage_of_sessions(con: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """``(session_id, model, input, output, cache_read, cache_write_5m, cache_write_1h,
    reasoning, responses, recorded dollars, costed)`` of these sessions' own usage."""
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(ids), 500):
        part = list(ids[i : i + 500])
        out.extend(
            con.execute(
                f"SELECT b.session_id, b.model, {report_sums(con)} FROM usage_buckets b"
                f" WHERE b.session_id IN ({','.join('?' * len(part))})"
                " GROUP BY b.session_id, b.model",
                part,
            ).fetchall()
        )
    return out


def find_sessions(con: sqlite3.Connection, ref: str, limit: int = 20) -> list[dict[str, Any]]:
    """Sessions matching a uid (``claude:<id>``), a bare native id, or a prefix of either.
    An exact match wins over prefixes."""
    for sql in (
        f"SELECT {SESSION_COLS} FROM sessions WHERE uid = ?",
        f"SELECT {SESSION_COLS} FROM sessions WHERE native_id = ?",
    ):
        rows = con.execute(sql, (ref,)).fetchall()
        if rows:
            return [dict(zip(SESSION_NAMES, r, strict=True)) for r in rows]
    upper = ref + "\U0010ffff"
    rows = con.execute(
        f"SELECT {SESSION_COLS} FROM sessions WHERE (uid >= ? AND uid < ?)"
        " OR (native_id >= ? AND native_id < ?) ORDER BY uid LIMIT ?",
        (ref, upper, ref, upper, limit),
    ).fetchall()
    return [dict(zip(SESSION_NAMES, r, strict=True)) for r in rows]


def digest_json(con: sqlite3.Connection, session_id: int) -> bytes | None:
    row = con.execute("SELECT json FROM digests WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None else bytes(row[0]) if isinstance(row[0], bytes) else row[0].encode()


def digest_of_uid(con: sqlite3.Connection, uid: str) -> bytes | None:
    """The digest JSON of the session whose uid is exactly ``uid`` (spec §11.2)."""
    row = con.execute(
        "SELECT d.json FROM digests d JOIN sessions s ON s.id = d.session_id WHERE s.uid = ?",
        (uid,),
    ).fetchone()
    return None if row is None else bytes(row[0]) if isinstance(row[0], bytes) else row[0].encode()


def children(con: sqlite3.Connection, uid: str) -> list[dict[str, Any]]:
    """Sessions whose parent is ``uid`` (subagents, forks), oldest first."""
    rows = con.execute(
        f"SELECT {SESSION_COLS} FROM sessions WHERE parent_uid = ?"
        " ORDER BY started_at IS NULL, started_at, id",
        (uid,),
    ).fetchall()
    return [dict(zip(SESSION_NAMES, r, strict=True)) for r in rows]


def file_problems(con: sqlite3.Connection, session_id: int) -> dict[str, int]:
    row = con.execute(
        "SELECT count(*), coalesce(sum(bad_lines), 0), coalesce(sum(unknown_records), 0),"
        " coalesce(sum(redactions), 0), coalesce(sum(offset), 0),"
        " coalesce(sum(gone_at IS NOT NULL), 0) FROM files WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return dict(
        zip(
            (
                "files",
                "malformed_lines",
                "unknown_records",
                "redactions",
                "source_bytes",
                "files_gone",
            ),
            row,
            strict=True,
        )
    )


def status_facts(con: sqlite3.Connection, segments: int | None = None) -> dict[str, Any]:
    """What ``status`` shows from the store alone: sessions and events per agent, files,
    bytes read, malformed lines, raw bytes kept, digests, evictions; and every tracked file's
    ``(path, offset, gone_at)`` for the ingest lag.  ``segments``: the full-text index's
    segment bytes when the caller knows them (``tier1.index_shape``), else read."""
    # only `status` asks: the other session reads skip zstandard, the retention module, hashlib
    from helixd.store import badlines
    from helixd.store.tier1 import tier1_bytes

    agents = con.execute(
        "SELECT agent, count(*), sum(events), sum(messages > 0) FROM sessions GROUP BY agent"
    ).fetchall()
    files = con.execute(
        "SELECT count(*), coalesce(sum(offset), 0), coalesce(sum(lines), 0),"
        " coalesce(sum(bad_lines), 0), coalesce(sum(raw_bytes), 0),"
        " coalesce(sum(unknown_records), 0), coalesce(sum(gone_at IS NOT NULL), 0) FROM files"
    ).fetchone()
    summary: dict[str, Any] = {
        "agents": {
            a: {"sessions": s, "events": e or 0, "with_messages": m or 0} for a, s, e, m in agents
        },
        "files": files[0],
        "bytes_read": files[1],
        "lines": files[2],
        "malformed_lines": files[3],
        "raw_bytes_stored": files[4],
        "unknown_records": files[5],
        "files_gone": files[6],
        "digests": _digest_count(con),
        "malformed_by_agent": dict(con.execute(badlines.BY_AGENT_SQL).fetchall()),
        "malformed_latest": [
            {"agent": a, "path": p, "offset": o, "length": n, "reason": r}
            for a, p, o, n, r in con.execute(badlines.LATEST_SQL, (5,)).fetchall()
        ],
    }
    loss = con.execute("SELECT count(*), coalesce(sum(bytes), 0), max(at) FROM data_loss")
    n, b, at = loss.fetchone()
    summary["data_loss"] = {"sessions": n, "bytes": b, "last_at": at}
    n, b, at = con.execute(
        "SELECT count(*), coalesce(sum(bytes), 0), max(at) FROM evictions"
    ).fetchone()
    summary["evictions"] = {"count": n, "bytes": b, "last_at": at}
    # The raw tier as the retention pass counts it (raw blocks + events): status and evict
    # compare the same number with the budgets.
    raw, events, index = tier1_bytes(con, segments)
    summary["tier1"] = {
        "raw_blocks_bytes": raw,
        "events_bytes": events,
        "index_bytes": index,
        "bytes": raw + events + index,
    }
    tracked = con.execute("SELECT path, offset, gone_at FROM files").fetchall()
    return {"summary": summary, "files": [tuple(f) for f in tracked]}


def _digest_count(con: sqlite3.Connection) -> int:
    from helixd.store.status_totals import kept

    totals = kept(con)  # m025's running count, else a count of every digest
    return totals[2] if totals else int(con.execute("SELECT count(*) FROM digests").fetchone()[0])


def repos_starting(con: sqlite3.Connection, prefix: str, limit: int = 50) -> list[str]:
    """Repo names and working directories that start with ``prefix`` (shell completion),
    the most used first."""
    upper = prefix + "\U0010ffff"
    rows = con.execute(
        "SELECT name FROM (SELECT repo AS name FROM sessions WHERE repo >= ?1 AND repo < ?2"
        " UNION ALL SELECT cwd FROM sessions WHERE cwd >= ?1 AND cwd < ?2)"
        " GROUP BY name ORDER BY count(*) DESC, name LIMIT ?3",
        (prefix, upper, limit),
    ).fetchall()
    return [r[0] for r in rows if r[0]]

"""Read queries of the reports, search and analytics (``helixctl report|tokens|search|stats``).

Synchronous, on a short-lived read-only ``sqlite3`` connection: these commands must answer
in a few tens of milliseconds whole process, so they skip the event loop.  Usage reports
read the ``usage_buckets`` rollup (15-minute buckets x session x model, kept exact by
triggers), never the per-response rows; ``tokens`` reads ``usage`` by its ``ts`` index for
exact boundaries.  Every function returns plain rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

BUSY_TIMEOUT_MS: Final = 30_000
_SUMS: Final = (
    "sum({p}input), sum({p}output), sum({p}cache_read), sum({p}cache_write_5m),"
    " sum({p}cache_write_1h), sum({p}reasoning), {n}"
)
BUCKET_SUMS: Final = _SUMS.format(p="b.", n="sum(b.responses)")
USAGE_SUMS: Final = _SUMS.format(p="u.", n="count(*)")


_HIT_NAMES: Final = (
    "event_id",
    "kind",
    "ts",
    "session_uid",
    "agent",
    "repo",
    "title",
    "summary",
    "body",
    "tool",
    "score",
)


# A session whose digest is missing or older than its last change (and whose events are
# still stored, so that it can be rebuilt).
DIGEST_DUE: Final = "(analyzed_at IS NULL OR changed_at > analyzed_at) AND evict_stage < 2"


class QueryError(ValueError):
    """The query cannot run as written (an FTS5 syntax error, say); the message says why."""


class NoStore(RuntimeError):
    """No usable store at the path."""


def connect(path: Path, busy_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A read-only connection (never creates the file).  ``NoStore`` is raised from the
    SQLite error, if any (``helixd.store.faults.classify`` names the condition)."""
    if not path.exists():
        raise NoStore(f"no store at {path} (run `helixctl ingest` first)")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        con.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
        con.execute("SELECT 1 FROM usage_hours LIMIT 1")
    except sqlite3.Error as exc:
        raise NoStore(
            f"cannot read store {path}: {exc} (run `helixctl ingest` to upgrade)"
        ) from exc
    return con


def _session_filter(
    where: list[str],
    params: list[Any],
    agents: Sequence[str] = (),
    repo: str | None = None,
    alias: str = "s",
) -> None:
    """Sessions of these agents, and of a repo: its name (``sessions.repo``) or a working
    directory at or under the path."""
    if agents:
        where.append(f"{alias}.agent IN ({','.join('?' * len(agents))})")
        params.extend(agents)
    if repo:
        path = repo.rstrip("/") or "/"
        where.append(f"({alias}.repo = ? OR {alias}.cwd = ? OR substr({alias}.cwd, 1, ?) = ?)")
        params.extend([repo, path, len(path) + 1, path + "/"])


def bucket_span(con: sqlite3.Connection) -> tuple[int, int] | None:
    """The first and last 15-minute bucket with usage (timestamps known)."""
    row = con.execute(
        "SELECT min(bucket), max(bucket) FROM usage_buckets WHERE bucket > 0"
    ).fetchone()
    return None if row is None or row[0] is None else (int(row[0]), int(row[1]))


def usage_by_day(
    con: sqlite3.Connection,
    segments: Sequence[tuple[int | None, int]],
    lo_bucket: int | None,
    hi_bucket: int | None,
    agents: Sequence[str] = (),
    repo: str | None = None,
    model: str | None = None,
) -> list[tuple[Any, ...]]:
    """``(local day number, agent, model, *counters)``: whole local days summed here, with
    the zone's UTC offset per bucket range given as ``segments`` (``[(until, offset_s)]``,
    the last ``until`` None), so the answer is a few hundred rows whatever the history."""
    where: list[str] = []
    params: list[Any] = []
    cases = []
    for until, offset in segments[:-1]:
        cases.append("WHEN b.bucket < ? THEN ?")
        params.extend([until, offset])
    params.append(segments[-1][1])
    day = f"(b.bucket * 900 + CASE {' '.join(cases)} ELSE ? END) / 86400"
    if not cases:
        day = "(b.bucket * 900 + ?) / 86400"
    if lo_bucket is not None:
        where.append("b.bucket >= ?")
        params.append(lo_bucket)
    if hi_bucket is not None:
        where.append("b.bucket < ?")
        params.append(hi_bucket)
    if model:
        where.append("(b.model = ? OR substr(b.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    _session_filter(where, params, agents, repo)
    sql = (
        f"SELECT {day} AS day, s.agent, b.model, {BUCKET_SUMS} FROM usage_buckets b"
        " JOIN sessions s ON s.id = b.session_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY day, s.agent, b.model"
    )
    return con.execute(sql, params).fetchall()


def usage_by_day_hourly(
    con: sqlite3.Connection,
    segments: Sequence[tuple[int | None, int]],
    lo_bucket: int | None,
    hi_bucket: int | None,
    agents: Sequence[str] = (),
    model: str | None = None,
) -> list[tuple[Any, ...]]:
    """``usage_by_day`` from the hourly rollup (``usage_hours``: hour x agent x model, no
    sessions): for zones whose offsets are whole hours and no repo filter.  ``segments``
    and the bounds are in 15-minute buckets, all multiples of 4 here."""
    where: list[str] = []
    params: list[Any] = []
    cases = []
    for until, offset in segments[:-1]:
        cases.append("WHEN h.hour * 4 < ? THEN ?")
        params.extend([until, offset])
    params.append(segments[-1][1])
    day = f"(h.hour * 3600 + CASE {' '.join(cases)} ELSE ? END) / 86400"
    if not cases:
        day = "(h.hour * 3600 + ?) / 86400"
    if lo_bucket is not None:
        where.append("h.hour >= ?")
        params.append(lo_bucket // 4)
    if hi_bucket is not None:
        where.append("h.hour < ?")
        params.append(hi_bucket // 4)
    if model:
        where.append("(h.model = ? OR substr(h.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    if agents:
        where.append(f"h.agent IN ({','.join('?' * len(agents))})")
        params.extend(agents)
    sql = (
        f"SELECT {day} AS day, h.agent, h.model, {_SUMS.format(p='h.', n='sum(h.responses)')}"
        " FROM usage_hours h"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY day, h.agent, h.model"
    )
    return con.execute(sql, params).fetchall()


def usage_by_session(
    con: sqlite3.Connection,
    lo_bucket: int | None,
    hi_bucket: int | None,
    agents: Sequence[str] = (),
    repo: str | None = None,
    model: str | None = None,
) -> list[tuple[Any, ...]]:
    """``(uid, agent, repo, parent_uid, started_at, ended_at, model, *counters)``."""
    where: list[str] = []
    params: list[Any] = []
    if lo_bucket is not None:
        where.append("b.bucket >= ?")
        params.append(lo_bucket)
    if hi_bucket is not None:
        where.append("b.bucket < ?")
        params.append(hi_bucket)
    if model:
        where.append("(b.model = ? OR substr(b.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    _session_filter(where, params, agents, repo)
    sql = (
        "SELECT s.uid, s.agent, s.repo, s.parent_uid, s.started_at, s.ended_at, b.model,"
        f" {BUCKET_SUMS} FROM usage_buckets b JOIN sessions s ON s.id = b.session_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY b.session_id, b.model"
    )
    return con.execute(sql, params).fetchall()


def usage_records(
    con: sqlite3.Connection, since: int, until: int | None, repo: str | None, agents: Sequence[str]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every usage fact of the repo's sessions with ``since <= ts < until``, as
    ``(ts, model, *counters)``, and the sessions they came from
    ``(uid, agent, cwd, started_at, ended_at, files)``."""
    where = ["u.ts >= ?"]
    params: list[Any] = [since]
    if until is not None:
        where.append("u.ts < ?")
        params.append(until)
    _session_filter(where, params, agents, repo)
    cond = " AND ".join(where)
    records = con.execute(
        "SELECT u.ts, u.model, u.input, u.output, u.cache_read, u.cache_write_5m,"
        " u.cache_write_1h, u.reasoning, 1 FROM usage u JOIN sessions s ON s.id = u.session_id"
        f" WHERE {cond} ORDER BY u.ts",
        params,
    ).fetchall()
    sessions = con.execute(
        "SELECT s.uid, s.agent, s.cwd, s.started_at, s.ended_at,"
        " (SELECT count(*) FROM files f WHERE f.session_id = s.id)"
        " FROM sessions s WHERE s.id IN"
        f" (SELECT DISTINCT u.session_id FROM usage u JOIN sessions s ON s.id = u.session_id"
        f" WHERE {cond}) ORDER BY s.started_at",
        params,
    ).fetchall()
    return records, sessions


def search(
    con: sqlite3.Connection,
    query: str,
    limit: int,
    agents: Sequence[str] = (),
    repo: str | None = None,
    since: int | None = None,
    until: int | None = None,
    kinds: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Hits of an FTS5 query, best first (bm25), with what is left of each event's text
    (its body, else its summary; nothing once the event row itself was evicted)."""
    where = ["search MATCH ?"]
    params: list[Any] = [query]
    if since is not None:
        where.append("d.ts >= ?")
        params.append(since)
    if until is not None:
        where.append("d.ts < ?")
        params.append(until)
    if kinds:
        where.append(f"d.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    _session_filter(where, params, agents, repo)
    sql = (
        "SELECT d.id, d.kind, d.ts, s.uid, s.agent, s.repo, s.title, e.summary, e.body, e.tool,"
        " bm25(search) AS score FROM search JOIN search_docs d ON d.id = search.rowid"
        " JOIN sessions s ON s.id = d.session_id"
        " LEFT JOIN events e ON e.id = d.id AND e.session_id = d.session_id"
        f" WHERE {' AND '.join(where)} ORDER BY score LIMIT ?"
    )
    params.append(limit)
    try:
        rows = con.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "no such table" in text or "locked" in text or "disk" in text:
            raise
        raise QueryError(text) from exc
    names = _HIT_NAMES
    return [dict(zip(names, r, strict=True)) for r in rows]


def stats(con: sqlite3.Connection, since: int | None, top: int = 15) -> dict[str, Any]:
    """The analytics views: sessions and usage by agent / repo / model, tool calls by status,
    most-edited files, test runs (status and the counts their output reported),
    interventions and errors per session.  Tool calls and test runs come from the Tier 2
    signal tables the analyze pass keeps (they outlive eviction)."""
    lo = 0 if since is None else since
    out: dict[str, Any] = {}
    out["sessions"] = con.execute(
        "SELECT agent, repo, count(*) FROM sessions WHERE messages > 0"
        " AND coalesce(started_at, discovered_at) >= ? GROUP BY 1, 2",
        (lo,),
    ).fetchall()
    out["usage"] = con.execute(
        f"SELECT s.agent, s.repo, b.model, {BUCKET_SUMS} FROM usage_buckets b"
        " JOIN sessions s ON s.id = b.session_id WHERE b.bucket >= ? GROUP BY 1, 2, 3",
        (lo // 900_000,),
    ).fetchall()
    out["tools"] = con.execute(
        "SELECT tool, count(*), sum(status = 'error'), sum(status = 'rejected'),"
        " sum(status = 'interrupted'), sum(status = 'missing') FROM tool_calls"
        " WHERE coalesce(ts, 0) >= ? GROUP BY 1 ORDER BY 2 DESC",
        (lo,),
    ).fetchall()
    out["files"] = con.execute(
        "SELECT coalesce(body, summary), count(*), count(DISTINCT session_id),"
        " sum(lines_added), sum(lines_removed) FROM events"
        " WHERE kind = 'edit' AND coalesce(ts, 0) >= ? GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ?",
        (lo, top),
    ).fetchall()
    out["tests"] = con.execute(
        "SELECT framework, command, status, passed, failed, skipped FROM test_runs"
        " WHERE coalesce(ts, 0) >= ?",
        (lo,),
    ).fetchall()
    out["per_session"] = con.execute(
        "SELECT s.uid, sum(e.kind = 'human_intervention'), sum(e.kind = 'error') FROM events e"
        " JOIN sessions s ON s.id = e.session_id"
        " WHERE e.kind IN ('human_intervention', 'error') AND coalesce(e.ts, 0) >= ?"
        " GROUP BY e.session_id",
        (lo,),
    ).fetchall()
    return out


# -- quick re-scan (helixd/cli_rescan.py) ------------------------------------------------------
def rescan_facts(con: sqlite3.Connection, versions: dict[str, int]) -> dict[str, Any]:
    """What ``helixctl ingest`` needs to tell that it has nothing to do: every file's stat
    as its cursor recorded it, the migrations applied, whether some session waits for its
    digest, and how many files an older adapter version read."""
    files = {
        path: (size, mtime_ns, ino, dev, gone_at)
        for path, size, mtime_ns, ino, dev, gone_at in con.execute(
            "SELECT path, size, mtime_ns, ino, dev, gone_at FROM files"
        )
    }
    migrations = {name for (name,) in con.execute("SELECT name FROM migrations")}
    waiting = con.execute(f"SELECT 1 FROM sessions WHERE {DIGEST_DUE} LIMIT 1").fetchone()
    return {
        "files": files,
        "migrations": migrations,
        "waiting": waiting is not None,
        "stale": stale_file_count(con, versions),
    }


def stale_file_count(con: sqlite3.Connection, versions: dict[str, int]) -> int:
    """Files an older adapter version read (re-normalization would rebuild them)."""
    return sum(
        int(
            con.execute(
                "SELECT count(*) FROM files WHERE agent = ? AND adapter_version < ?",
                (agent, version),
            ).fetchone()[0]
        )
        for agent, version in versions.items()
    )

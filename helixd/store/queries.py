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
from typing import Any, Final

from helixd.core.values import TS_MAX_MS, TS_MIN_MS

# Usage of unknown time (ts NULL) is summed in bucket 0 and reported as "unknown"; the
# window of known times in buckets and hours (an older store may hold impossible times).
KNOWN_BUCKETS: Final = (TS_MIN_MS // 900_000, TS_MAX_MS // 900_000)
KNOWN_HOURS: Final = (TS_MIN_MS // 3_600_000, TS_MAX_MS // 3_600_000)
_SUMS: Final = (
    "sum({p}input), sum({p}output), sum({p}cache_read), sum({p}cache_write_5m),"
    " sum({p}cache_write_1h), sum({p}reasoning), {n}"
)
BUCKET_SUMS: Final = _SUMS.format(p="b.", n="sum(b.responses)")
USAGE_SUMS: Final = _SUMS.format(p="u.", n="count(*)")
# The reports' rows add the dollars the agents recorded and how many responses carry them
# (``helixd.core.usage_report.COUNTERS``: ``--cost auto`` prices the rest from the table).
_COSTS: Final = ", total({p}recorded_cost_usd), sum({p}costed)"


def cost_sums(con: sqlite3.Connection, p: str = "b.") -> str:
    """The recorded-cost columns of a report row (``, dollars, costed``): zeros from a store
    not yet migrated to m016 (read-only commands do not migrate)."""
    found = con.execute(
        "SELECT 1 FROM pragma_table_info('usage_buckets') WHERE name = 'costed'"
    ).fetchone()
    return _COSTS.format(p=p) if found else ", 0.0, 0"


def report_sums(con: sqlite3.Connection) -> str:
    """``BUCKET_SUMS`` and the recorded-cost columns (``cost_sums``)."""
    return BUCKET_SUMS + cost_sums(con)


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
    "seq",
)


# A session whose digest is missing or older than its last change (and whose events are
# still stored, so that it can be rebuilt).
DIGEST_DUE: Final = "(analyzed_at IS NULL OR changed_at > analyzed_at) AND evict_stage < 2"


class QueryError(ValueError):
    """The query cannot run as written (an FTS5 syntax error, say); the message says why."""


def session_filter(
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
        "SELECT min(bucket), max(bucket) FROM usage_buckets WHERE bucket >= ? AND bucket < ?",
        KNOWN_BUCKETS,
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
    the last ``until`` None), so the answer is a few hundred rows whatever the history.
    The day is None for usage of unknown time (left out when the days are bounded)."""
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
    day = (
        f"CASE WHEN b.bucket >= {KNOWN_BUCKETS[0]} AND b.bucket < {KNOWN_BUCKETS[1]} THEN {day} END"
    )
    _bucket_range(where, params, "b.bucket", lo_bucket, hi_bucket, KNOWN_BUCKETS)
    if model:
        where.append("(b.model = ? OR substr(b.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    session_filter(where, params, agents, repo)
    sql = (
        f"SELECT {day} AS day, s.agent, b.model, {report_sums(con)} FROM usage_buckets b"
        " JOIN sessions s ON s.id = b.session_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY day, s.agent, b.model"
    )
    return con.execute(sql, params).fetchall()


def usage_outside(
    con: sqlite3.Connection,
    lo_bucket: int,
    hi_bucket: int,
    agents: Sequence[str] = (),
    repo: str | None = None,
    model: str | None = None,
) -> list[tuple[Any, ...]]:
    """``(agent, model, *counters)`` of the usage outside ``[lo_bucket, hi_bucket)``: the
    responses whose time is unknown (bucket 0) or impossible (before 2000, in the future)."""
    where = ["(b.bucket < ? OR b.bucket >= ?)"]
    params: list[Any] = [lo_bucket, hi_bucket]
    if model:
        where.append("(b.model = ? OR substr(b.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    session_filter(where, params, agents, repo)
    sql = (
        f"SELECT s.agent, b.model, {report_sums(con)} FROM usage_buckets b"
        " JOIN sessions s ON s.id = b.session_id WHERE "
        + " AND ".join(where)
        + " GROUP BY s.agent, b.model"
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
    day = f"CASE WHEN h.hour >= {KNOWN_HOURS[0]} AND h.hour < {KNOWN_HOURS[1]} THEN {day} END"
    lo_hour = None if lo_bucket is None else lo_bucket // 4
    hi_hour = None if hi_bucket is None else hi_bucket // 4
    _bucket_range(where, params, "h.hour", lo_hour, hi_hour, KNOWN_HOURS)
    if model:
        where.append("(h.model = ? OR substr(h.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    if agents:
        where.append(f"h.agent IN ({','.join('?' * len(agents))})")
        params.extend(agents)
    sql = (
        f"SELECT {day} AS day, h.agent, h.model, {_SUMS.format(p='h.', n='sum(h.responses)')}"
        f"{cost_sums(con, 'h.')}"
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
    _bucket_range(where, params, "b.bucket", lo_bucket, hi_bucket, KNOWN_BUCKETS)
    if model:
        where.append("(b.model = ? OR substr(b.model, 1, ?) = ?)")
        params.extend([model, len(model) + 1, model + "-"])
    session_filter(where, params, agents, repo)
    sql = (
        "SELECT s.uid, s.agent, s.repo, s.parent_uid, s.started_at, s.ended_at, b.model,"
        f" {report_sums(con)} FROM usage_buckets b JOIN sessions s ON s.id = b.session_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY b.session_id, b.model"
    )
    return con.execute(sql, params).fetchall()


def _bucket_range(
    where: list[str],
    params: list[Any],
    column: str,
    lo: int | None,
    hi: int | None,
    known: tuple[int, int],
) -> None:
    """``lo <= column < hi``; bounded either way, usage of unknown time is left out."""
    if lo is None and hi is None:
        return
    where.append(f"{column} >= ? AND {column} < ?")
    params.extend(
        [max(lo, known[0]) if lo is not None else known[0], hi if hi is not None else known[1]]
    )


def usage_records(
    con: sqlite3.Connection, since: int, until: int | None, repo: str | None, agents: Sequence[str]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every usage fact of the repo's sessions with ``since <= ts < until``, as
    ``(ts, model, *counters, recorded cost, 0 or 1)``, and the sessions they came from
    ``(uid, agent, cwd, started_at, ended_at, files)``."""
    in_range = ["u.ts >= ?"]
    range_params: list[Any] = [since]
    if until is not None:
        in_range.append("u.ts < ?")
        range_params.append(until)
    scope: list[str] = []
    scope_params: list[Any] = []
    session_filter(scope, scope_params, agents, repo)
    cond = " AND ".join(in_range + scope)
    recorded = "u.recorded_cost_usd" if cost_sums(con) != ", 0.0, 0" else "NULL"
    records = con.execute(
        "SELECT u.ts, u.model, u.input, u.output, u.cache_read, u.cache_write_5m,"
        f" u.cache_write_1h, u.reasoning, 1, coalesce({recorded}, 0),"
        f" {recorded} IS NOT NULL FROM usage u JOIN sessions s ON s.id = u.session_id"
        f" WHERE {cond} ORDER BY u.ts",
        [*range_params, *scope_params],
    ).fetchall()
    # The range picks the usage rows (index usage_ts), the scope their sessions: the
    # filter on the outer sessions row keeps the subquery from scanning every usage row.
    sessions = con.execute(
        "SELECT s.uid, s.agent, s.cwd, s.started_at, s.ended_at,"
        " (SELECT count(*) FROM files f WHERE f.session_id = s.id)"
        " FROM sessions s WHERE s.id IN"
        f" (SELECT u.session_id FROM usage u WHERE {' AND '.join(in_range)})"
        + "".join(f" AND {c}" for c in scope)
        + " ORDER BY s.started_at",
        [*range_params, *scope_params],
    ).fetchall()
    return records, sessions


def activity_records(
    con: sqlite3.Connection,
    since: int,
    until: int | None,
    repo: str | None,
    agents: Sequence[str],
    shell_tools: Sequence[str],
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The hook-level activity of the repo's sessions in ``[since, until)``: shell commands
    (tool calls of ``shell_tools``, the command as the call's summary holds it: the first 200
    characters), file edits, and what the agents' hooks reported (``hook_events``) that the
    transcripts' tool calls do not hold, as ``(ts, "bash" | "edit", text)`` in time
    order; and the transcript files of the sessions active in the range (usage, a tool call
    or an edit in it), sorted."""
    where: list[str] = []
    params: list[Any] = []
    session_filter(where, params, agents, repo)
    scope = " AND ".join(where) or "1"
    until_ms = until if until is not None else 2**62
    marks = ",".join("?" * len(shell_tools)) or "NULL"
    rows = con.execute(
        "SELECT t.ts, 'bash', CASE WHEN substr(t.target, 1, length(t.tool) + 2) = t.tool || ': '"
        " THEN substr(t.target, length(t.tool) + 3) ELSE t.target END"
        " FROM tool_calls t JOIN sessions s ON s.id = t.session_id"
        # ``+t.tool``: the time range picks the rows (tool_calls_ts), not every shell call ever
        f" WHERE t.ts >= ? AND t.ts < ? AND +t.tool IN ({marks}) AND {scope}"
        " UNION ALL SELECT o.ts, 'edit', o.file_path FROM file_operations o"
        f" JOIN sessions s ON s.id = o.session_id WHERE o.ts >= ? AND o.ts < ? AND {scope}"
        # what the hooks reported that the transcripts' tool calls do not hold
        " UNION ALL SELECT h.at, h.what, h.target FROM hook_events h"
        " JOIN sessions s ON s.native_id = h.native_id AND s.agent = h.agent"
        f" WHERE h.at >= ? AND h.at < ? AND {scope} AND (h.call_id IS NULL OR NOT EXISTS"
        " (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.call_id = h.call_id"
        " AND e.kind = 'tool_call'))"
        " ORDER BY 1",
        [
            since,
            until_ms,
            *shell_tools,
            *params,
            since,
            until_ms,
            *params,
            since,
            until_ms,
            *params,
        ],
    ).fetchall()
    files = [
        p
        for (p,) in con.execute(
            "SELECT DISTINCT f.path FROM files f JOIN sessions s ON s.id = f.session_id"
            f" WHERE {scope} AND (s.id IN (SELECT session_id FROM usage WHERE ts >= ? AND ts < ?)"
            " OR s.id IN (SELECT session_id FROM tool_calls WHERE ts >= ? AND ts < ?)"
            " OR s.id IN (SELECT session_id FROM file_operations WHERE ts >= ? AND ts < ?))"
            " ORDER BY f.path",
            [*params, since, until_ms, since, until_ms, since, until_ms],
        )
    ]
    return rows, files


# A search without filters ranks the newest this many matching documents (docs/storage.md,
# "Search"): a word in every other event matches tens of thousands.
RANKED_MATCHES: Final = 5_000


def _oldest_ranked(con: sqlite3.Connection, query: str, candidates: int) -> int | None:
    """The rowid of the ``candidates``-th newest document matching ``query`` (rowids are
    event ids: they grow as events are read), None when fewer match.  Walks the doclists
    in rowid order without ranking (FTS5's own ``ORDER BY rowid DESC``)."""
    try:
        row = con.execute(
            "SELECT rowid FROM search WHERE search MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (query, candidates - 1),
        ).fetchone()
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "no such table" in text or "locked" in text or "disk" in text:
            raise
        raise QueryError(text) from exc
    return None if row is None else int(row[0])


def search(
    con: sqlite3.Connection,
    query: str,
    limit: int,
    agents: Sequence[str] = (),
    repo: str | None = None,
    since: int | None = None,
    until: int | None = None,
    kinds: Sequence[str] = (),
    offset: int = 0,
    min_id: int | None = None,
) -> list[dict[str, Any]]:
    """Hits of an FTS5 query, best first (bm25), with what is left of each event's text
    (its body, else its summary; nothing once the event row itself was evicted) and the
    event's ``seq`` in its session (None once evicted); with ``min_id``, only documents
    from that id on (``search_window.newest_floor``)."""
    # Rank inside the index first and join the display columns for the page only: a common
    # word matches tens of thousands of documents, and joining every one before the sort
    # costs several times the ranking itself.
    where = ["search MATCH ?"]
    params: list[Any] = [query]
    if min_id is not None:
        where.append("search.rowid >= ?")
        params.append(min_id)
    joins = ""
    if since is not None or until is not None or kinds or agents or repo:
        joins = " JOIN search_docs d ON d.id = search.rowid"
    else:
        # bm25 runs once per matching document: only the newest RANKED_MATCHES are ranked
        # (scores unchanged: the index's statistics are whole-index ones)
        oldest = _oldest_ranked(con, query, max(RANKED_MATCHES, offset + limit))
        if oldest is not None:
            where.append("search.rowid >= ?")
            params.append(oldest)
    if since is not None:
        where.append("d.ts >= ?")
        params.append(since)
    if until is not None:
        where.append("d.ts < ?")
        params.append(until)
    if kinds:
        where.append(f"d.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if agents or repo:
        joins += " JOIN sessions s ON s.id = d.session_id"
        session_filter(where, params, agents, repo)
    sql = (
        "SELECT d.id, d.kind, d.ts, s.uid, s.agent, s.repo, s.title, e.summary, e.body, e.tool,"
        " h.score, e.seq FROM (SELECT search.rowid AS id, bm25(search) AS score FROM search"
        f"{joins} WHERE {' AND '.join(where)} ORDER BY score LIMIT ? OFFSET ?) h"
        " JOIN search_docs d ON d.id = h.id JOIN sessions s ON s.id = d.session_id"
        " LEFT JOIN events e ON e.id = d.id AND e.session_id = d.session_id ORDER BY h.score"
    )
    params.extend([limit, offset])
    try:
        rows = con.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "no such table" in text or "locked" in text or "disk" in text:
            raise
        raise QueryError(text) from exc
    names = _HIT_NAMES
    return [dict(zip(names, r, strict=True)) for r in rows]


# -- the first step of ingest (helixd/ingest/plan.py) ------------------------------------
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
    """Files an older adapter version read (re-normalization would rebuild them): one pass
    over ``files`` grouped by agent and version (a query per agent scanned it 23 times)."""
    return sum(
        int(n)
        for agent, version, n in con.execute(
            "SELECT agent, adapter_version, count(*) FROM files GROUP BY agent, adapter_version"
        )
        if agent in versions and version < versions[agent]
    )

"""The analytics read of ``helixctl stats`` (and ``/api``'s stats through
``helixd.query.stats``): sessions and usage by agent / repo / model, tool calls by status, the
most-edited files, test runs.  Synchronous, on a short-lived read-only connection, like
``helixd.store.queries``; whole days from the ``usage_days`` rollup, the rest from the
15-minute buckets."""

from __future__ import annotations

import sqlite3
from typing import Any, Final, NamedTuple

from helixd.store.queries import BUCKET_SUMS
from helixd.store.usage_days import DAY_BUCKETS


def stats(con: sqlite3.Connection, since: int | None, top: int = 15) -> dict[str, Any]:
    """The analytics views: sessions and usage by agent / repo / model, tool calls by status,
    most-edited files, test runs (status and the counts their output reported),
    interventions and errors per session.  Everything but usage comes from the Tier 2 signal
    tables the analyze pass keeps (small, and they outlive eviction), never from a scan of
    the events."""
    lo = 0 if since is None else since
    out: dict[str, Any] = {}
    out["sessions"] = con.execute(SESSIONS_BY_AGENT_REPO, (lo,)).fetchall()
    usage = _usage_since(lo // 900_000)
    out["usage"] = con.execute(
        f"SELECT s.agent, s.repo, b.model, {BUCKET_SUMS} FROM ({usage.sql}) b"
        " JOIN sessions s ON s.id = b.session_id GROUP BY 1, 2, 3",
        usage.params,
    ).fetchall()
    out["model_sessions"] = con.execute(
        f"SELECT b.model, count(DISTINCT b.session_id) FROM ({usage.sql}) b GROUP BY 1",
        usage.params,
    ).fetchall()
    out["tools"] = _tool_counts(con, lo)
    out["files"] = _top_files(con, lo, top)
    out["tests"] = con.execute(
        "SELECT framework, command, status, passed, failed, skipped FROM test_runs"
        " WHERE coalesce(ts, 0) >= ?",
        (lo,),
    ).fetchall()
    out["per_session"] = con.execute(
        "SELECT s.uid, sum(g.kind = 'intervention'), sum(g.kind = 'error') FROM session_signals g"
        " JOIN sessions s ON s.id = g.session_id WHERE g.kind IN ('intervention', 'error')"
        " AND coalesce(s.ended_at, s.started_at, 0) >= ? GROUP BY g.session_id",
        (lo,),
    ).fetchall()
    return out


# Read from the table itself: through ``sessions_agent`` (m025's index for ``status``, which
# lacks repo and the times) SQLite reads the index and then every row anyway (1.3 GB corpus's
# store, cold connection: 5.3-5.8 -> 3.7-3.9 ms CPU)
SESSIONS_BY_AGENT_REPO: Final = (
    "SELECT agent, repo, count(*) FROM sessions NOT INDEXED WHERE messages > 0"
    " AND coalesce(started_at, discovered_at) >= ? GROUP BY 1, 2"
)


class _Rows(NamedTuple):
    sql: str
    params: tuple[int, ...]


_USAGE_COLUMNS: Final = (
    "session_id, model, responses, input, output, cache_read, cache_write_5m,"
    " cache_write_1h, reasoning"
)


def _usage_since(first_bucket: int) -> _Rows:
    """The usage rows of the buckets ``>= first_bucket`` as whole days of ``usage_days`` (a
    quarter of the buckets' rows; ``stats`` of the 1.3 GB corpus: 18 -> 6 ms of SQL) and the
    buckets before the first whole day (or of unknown time, bucket 0: day -1) from
    ``usage_buckets``, each bucket exactly once."""
    first_day = max(0, -(-first_bucket // DAY_BUCKETS))
    below = max(first_day * DAY_BUCKETS, 1)  # day 0 holds buckets 1..95, bucket 0 is day -1
    return _Rows(
        f"SELECT {_USAGE_COLUMNS} FROM usage_days WHERE day >= ?"
        f" UNION ALL SELECT {_USAGE_COLUMNS} FROM usage_buckets WHERE bucket >= ? AND bucket < ?",
        (first_day, first_bucket, below),
    )


_TOOL_STATUSES: Final = ("error", "rejected", "interrupted", "missing")


def _tool_counts(con: sqlite3.Connection, lo: int) -> list[tuple[Any, ...]]:
    """``(tool, calls, error, rejected, interrupted, missing)`` of the calls at or after
    ``lo`` (a call of unknown time counts as 0), the most called first.  Counted per
    (tool, status) from the covering index ``tool_calls_stats`` in its order (no sort of
    every call): for all time, every call less those of a negative time (``ts < 0``, an
    index range), which is what ``coalesce(ts, 0) >= 0`` keeps, without testing each row."""
    counts: dict[str, list[int]] = {}

    def add(rows: list[tuple[Any, ...]], sign: int) -> None:
        for tool, status, n in rows:
            row = counts.setdefault(tool, [0] * 5)
            row[0] += sign * n
            if status in _TOOL_STATUSES:
                row[1 + _TOOL_STATUSES.index(status)] += sign * n

    by_status = "SELECT tool, status, count(*) FROM tool_calls"
    if lo == 0:
        add(con.execute(f"{by_status} GROUP BY 1, 2").fetchall(), 1)
        add(con.execute(f"{by_status} WHERE ts < 0 GROUP BY +tool, +status").fetchall(), -1)
    else:
        where = " WHERE coalesce(ts, 0) >= ? GROUP BY 1, 2"
        add(con.execute(by_status + where, (lo,)).fetchall(), 1)
    ranked = sorted((item for item in counts.items() if item[1][0] > 0), key=lambda i: i[0])
    ranked.sort(key=lambda i: -i[1][0])  # stable: ties by tool name, as the rows were grouped
    return [(tool, *n) for tool, n in ranked]


def _top_files(con: sqlite3.Connection, lo: int, top: int) -> list[tuple[Any, ...]]:
    """The ``top`` most-edited files at or after ``lo`` (an operation of unknown time counts
    as 0): ``(path, operations, sessions, lines added, lines removed)``.  For all time the
    ranking comes from the ``file_operations_path`` index alone (no table row read) when no
    operation has a negative time (``coalesce(ts, 0) >= 0`` then keeps every row); only the
    top paths' rows are read for their other figures."""
    figures = (
        "SELECT file_path, count(*), count(DISTINCT session_id), sum(lines_added),"
        " sum(lines_removed) FROM file_operations"
    )
    negative = con.execute("SELECT 1 FROM file_operations WHERE ts < 0 LIMIT 1").fetchone()
    if lo != 0 or negative is not None:
        return con.execute(
            f"{figures} WHERE coalesce(ts, 0) >= ? GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ?", (lo, top)
        ).fetchall()
    paths = [
        p
        for (p,) in con.execute(
            "SELECT file_path FROM file_operations INDEXED BY file_operations_path"
            " GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT ?",
            (top,),
        )
    ]
    return con.execute(
        f"{figures} WHERE file_path IN ({','.join('?' * len(paths))})"
        " GROUP BY 1 ORDER BY 2 DESC, 1",
        paths,
    ).fetchall()

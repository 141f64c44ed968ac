"""The fleet reports' queries on PostgreSQL (``report --fleet``, ``stats --fleet``): the same
questions as ``helixd/store/queries.py`` asks the local store, over every machine's rows,
with the machine as one more column.  Synchronous (``psycopg.Connection``), plain rows out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Final

import psycopg

Conn = psycopg.Connection[Any]

_SUMS: Final = (
    "sum({p}input), sum({p}output), sum({p}cache_read), sum({p}cache_write_5m),"
    " sum({p}cache_write_1h), sum({p}reasoning), {n}"
)
# The dollars the agents recorded and how many responses carry them, as the local reports
# read them (``helixd.core.usage_report.COUNTERS``: ``--cost auto`` prices the rest).
BUCKET_SUMS: Final = _SUMS.format(p="b.", n="sum(b.responses)") + (
    ", coalesce(sum(b.recorded_cost_usd), 0), coalesce(sum(b.costed), 0)"
)


def _sums(values: Sequence[Any]) -> tuple[Any, ...]:
    """``BUCKET_SUMS`` as Python numbers: the counts as ints (PostgreSQL sums bigints as
    numeric), the recorded dollars as a float."""
    *counts, dollars, costed = values
    return (*(int(v) for v in counts), float(dollars), int(costed))


def machines(conn: Conn) -> list[tuple[Any, ...]]:
    """``(machine_id, name, user, owner, version, first_push_at, last_push_at,
    shipped_through, include_text, sessions)`` of every machine, by name."""
    return conn.execute(
        "SELECT m.machine_id, m.name, m.user_name, m.owner, m.helix_version, m.first_push_at,"
        " m.last_push_at, m.shipped_through, m.include_text,"
        " (SELECT count(*) FROM helix.sessions s WHERE s.machine_id = m.machine_id)"
        " FROM helix.machines m ORDER BY m.name, m.machine_id"
    ).fetchall()


def _filters(
    where: list[str],
    params: list[Any],
    agents: Sequence[str] = (),
    repo: str | None = None,
    machines: Sequence[str] = (),
    users: Sequence[str] = (),
) -> None:
    """As ``queries.session_filter`` (alias ``s``), plus machine and user names (alias
    ``m``)."""
    if agents:
        where.append("s.agent = ANY(%s)")
        params.append(list(agents))
    if repo:
        path = repo.rstrip("/") or "/"
        where.append("(s.repo = %s OR s.cwd = %s OR substr(s.cwd, 1, %s) = %s)")
        params.extend([repo, path, len(path) + 1, path + "/"])
    if machines:
        where.append("m.name = ANY(%s)")
        params.append(list(machines))
    if users:
        where.append("m.user_name = ANY(%s)")
        params.append(list(users))


def _model(where: list[str], params: list[Any], model: str | None, alias: str = "b") -> None:
    if model:
        where.append(f"({alias}.model = %s OR substr({alias}.model, 1, %s) = %s)")
        params.extend([model, len(model) + 1, model + "-"])


def _range(where: list[str], params: list[Any], lo: int | None, hi: int | None) -> None:
    if lo is not None:
        where.append("b.bucket >= %s")
        params.append(lo)
    if hi is not None:
        where.append("b.bucket < %s")
        params.append(hi)


_JOIN: Final = (
    " FROM helix.usage_buckets b JOIN helix.sessions s"
    " ON s.machine_id = b.machine_id AND s.uid = b.session_uid"
    " JOIN helix.machines m ON m.machine_id = b.machine_id"
)


def bucket_span(conn: Conn) -> tuple[int, int] | None:
    row = conn.execute(
        "SELECT min(bucket), max(bucket) FROM helix.usage_buckets WHERE bucket > 0"
    ).fetchone()
    return None if row is None or row[0] is None else (int(row[0]), int(row[1]))


def usage_by_day(
    conn: Conn,
    segments: Sequence[tuple[int | None, int]],
    lo_bucket: int | None,
    hi_bucket: int | None,
    agents: Sequence[str] = (),
    repo: str | None = None,
    model: str | None = None,
    machines: Sequence[str] = (),
    users: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """``(local day number, agent, model, machine_id, *counters)``: whole local days, the
    zone's offset per bucket range given as ``segments`` (``queries.usage_by_day``)."""
    params: list[Any] = []
    cases = []
    for until, offset in segments[:-1]:
        cases.append("WHEN b.bucket < %s THEN %s")
        params.extend([until, offset])
    params.append(segments[-1][1])
    offset_sql = f"CASE {' '.join(cases)} ELSE %s END" if cases else "%s"
    day = f"(b.bucket * 900 + {offset_sql}) / 86400"
    where: list[str] = []
    _range(where, params, lo_bucket, hi_bucket)
    _model(where, params, model)
    _filters(where, params, agents, repo, machines, users)
    sql = (
        f"SELECT {day} AS day, s.agent, b.model, b.machine_id, {BUCKET_SUMS}{_JOIN}"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY 1, 2, 3, 4"
    )
    return [(int(r[0]), *r[1:4], *_sums(r[4:])) for r in conn.execute(sql, params)]


def usage_outside(
    conn: Conn,
    lo_bucket: int,
    hi_bucket: int,
    agents: Sequence[str] = (),
    repo: str | None = None,
    model: str | None = None,
    machines: Sequence[str] = (),
    users: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """``(agent, model, *counters)`` of every machine's usage outside ``[lo_bucket,
    hi_bucket)``: unknown (bucket 0) or impossible times (``queries.usage_outside``)."""
    where = ["(b.bucket < %s OR b.bucket >= %s)"]
    params: list[Any] = [lo_bucket, hi_bucket]
    _model(where, params, model)
    _filters(where, params, agents, repo, machines, users)
    sql = (
        f"SELECT s.agent, b.model, {BUCKET_SUMS}{_JOIN} WHERE "
        + " AND ".join(where)
        + " GROUP BY 1, 2"
    )
    return [(*r[:2], *_sums(r[2:])) for r in conn.execute(sql, params)]


def usage_by_session(
    conn: Conn,
    lo_bucket: int | None,
    hi_bucket: int | None,
    agents: Sequence[str] = (),
    repo: str | None = None,
    model: str | None = None,
    machines: Sequence[str] = (),
    users: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """``(machine_id, uid, agent, repo, parent_uid, started_at, ended_at, model,
    *counters)``."""
    where: list[str] = []
    params: list[Any] = []
    _range(where, params, lo_bucket, hi_bucket)
    _model(where, params, model)
    _filters(where, params, agents, repo, machines, users)
    sql = (
        "SELECT b.machine_id, s.uid, s.agent, s.repo, s.parent_uid, s.started_at, s.ended_at,"
        f" b.model, {BUCKET_SUMS}{_JOIN}"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY b.machine_id, s.uid, s.agent, s.repo, s.parent_uid, s.started_at,"
        " s.ended_at, b.model"
    )
    return [(*r[:8], *_sums(r[8:])) for r in conn.execute(sql, params)]


STATS_PARTS: Final = (
    "sessions",
    "usage",
    "model_sessions",
    "tools",
    "files",
    "tests",
    "per_session",
)


def stats(
    conn: Conn,
    since: int | None,
    top: int = 15,
    machines: Sequence[str] = (),
    users: Sequence[str] = (),
    parts: Collection[str] = STATS_PARTS,
) -> dict[str, Any]:
    """``queries.stats`` over the fleet: sessions and usage by agent / repo / model with the
    machine beside them, tool calls by status, most-edited files (a path counted once per
    machine and session), test runs, interventions and errors per session.  Only the
    ``parts`` asked for are read (the others are empty): a view that shows the tools does
    not pay for the rest."""
    lo = 0 if since is None else since
    mwhere: list[str] = []
    mparams: list[Any] = []
    _filters(mwhere, mparams, (), None, machines, users)
    mcond = "".join(f" AND {w}" for w in mwhere)
    sig_join = (
        " JOIN helix.machines m ON m.machine_id = g.machine_id"
        " JOIN helix.sessions s ON s.machine_id = g.machine_id AND s.uid = g.session_uid"
    )
    out: dict[str, Any] = {part: [] for part in STATS_PARTS}
    if "sessions" in parts:
        out["sessions"] = conn.execute(
            "SELECT s.agent, s.repo, s.machine_id, count(*) FROM helix.sessions s"
            " JOIN helix.machines m ON m.machine_id = s.machine_id WHERE s.messages > 0"
            f" AND coalesce(s.started_at, s.discovered_at) >= %s{mcond} GROUP BY 1, 2, 3",
            [lo, *mparams],
        ).fetchall()
    if "usage" in parts:
        out["usage"] = [
            (*r[:4], *_sums(r[4:]))
            for r in conn.execute(
                f"SELECT s.agent, s.repo, b.model, b.machine_id, {BUCKET_SUMS}{_JOIN}"
                f" WHERE b.bucket >= %s{mcond} GROUP BY 1, 2, 3, 4",
                [lo // 900_000, *mparams],
            )
        ]
    if "model_sessions" in parts:
        out["model_sessions"] = conn.execute(
            "SELECT b.model, count(DISTINCT (b.machine_id, b.session_uid))"
            " FROM helix.usage_buckets b JOIN helix.machines m ON m.machine_id = b.machine_id"
            f" WHERE b.bucket >= %s{mcond} GROUP BY 1",
            [lo // 900_000, *mparams],
        ).fetchall()
    if "tools" in parts:
        out["tools"] = [
            (r[0], *(int(v or 0) for v in r[1:]))
            for r in conn.execute(
                "SELECT g.tool, count(*), count(*) FILTER (WHERE g.status = 'error'),"
                " count(*) FILTER (WHERE g.status = 'rejected'),"
                " count(*) FILTER (WHERE g.status = 'interrupted'),"
                " count(*) FILTER (WHERE g.status = 'missing') FROM helix.tool_calls g"
                f"{sig_join} WHERE coalesce(g.ts, 0) >= %s{mcond} GROUP BY 1 ORDER BY 2 DESC, 1",
                [lo, *mparams],
            )
        ]
    if "files" in parts:
        out["files"] = [
            (r[0], *(int(v) for v in r[1:]))
            for r in conn.execute(
                "SELECT g.file_path, count(*), count(DISTINCT (g.machine_id, g.session_uid)),"
                " sum(g.lines_added), sum(g.lines_removed) FROM helix.file_operations g"
                f"{sig_join} WHERE coalesce(g.ts, 0) >= %s{mcond}"
                " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %s",
                [lo, *mparams, top],
            )
        ]
    if "tests" in parts:
        out["tests"] = conn.execute(
            "SELECT g.framework, g.command, g.status, g.passed, g.failed, g.skipped"
            f" FROM helix.test_runs g{sig_join} WHERE coalesce(g.ts, 0) >= %s{mcond}",
            [lo, *mparams],
        ).fetchall()
    if "per_session" in parts:
        out["per_session"] = [
            (r[0], int(r[1]), int(r[2]), r[3])
            for r in conn.execute(
                "SELECT s.uid, count(*) FILTER (WHERE g.kind = 'intervention'),"
                " count(*) FILTER (WHERE g.kind = 'error'), g.machine_id"
                f" FROM helix.session_signals g{sig_join}"
                " WHERE g.kind IN ('intervention', 'error')"
                f" AND coalesce(s.ended_at, s.started_at, 0) >= %s{mcond}"
                " GROUP BY g.machine_id, s.uid",
                [lo, *mparams],
            )
        ]
    return out


# -- the dashboard pointed at the fleet (helixd/web/fleet.py) --------------------------------
def _machine_where(
    machines: Sequence[str], users: Sequence[str], since: int | None = None, at: str = ""
) -> tuple[str, list[Any]]:
    """The machine and user filters (alias ``m``), and ``at >= since`` (ms) when given."""
    where: list[str] = []
    params: list[Any] = []
    _filters(where, params, machines=machines, users=users)
    if since is not None:
        where.append(f"{at} >= %s")
        params.append(since)
    return (" WHERE " + " AND ".join(where) if where else ""), params


def acceptance(
    conn: Conn, machines: Sequence[str] = (), users: Sequence[str] = (), since: int | None = None
) -> list[tuple[Any, ...]]:
    """``(machine_id, edits, accepted, rejected, unknown)`` per machine: the file operations
    (since ``since`` ms, when given) by ``accepted`` (1 applied, 0 rejected or interrupted,
    NULL no verdict)."""
    where, params = _machine_where(machines, users, since, "f.ts")
    return conn.execute(
        "SELECT f.machine_id, count(*), count(*) FILTER (WHERE f.accepted = 1),"
        " count(*) FILTER (WHERE f.accepted = 0), count(*) FILTER (WHERE f.accepted IS NULL)"
        " FROM helix.file_operations f JOIN helix.machines m ON m.machine_id = f.machine_id"
        f"{where} GROUP BY f.machine_id",
        params,
    ).fetchall()


def hook_activity(
    conn: Conn, machines: Sequence[str] = (), users: Sequence[str] = (), since: int | None = None
) -> list[tuple[Any, ...]]:
    """``(machine_id, what, tool, events)``: what the agents' hooks reported (since ``since``
    ms, when given), per machine."""
    where, params = _machine_where(machines, users, since, "h.at")
    return conn.execute(
        "SELECT h.machine_id, h.what, h.tool, count(*) FROM helix.hook_events h"
        f" JOIN helix.machines m ON m.machine_id = h.machine_id{where}"
        " GROUP BY 1, 2, 3 ORDER BY 4 DESC, 2, 3",
        params,
    ).fetchall()


def session_holders(conn: Conn, uid: str) -> list[tuple[Any, ...]]:
    """``(machine_id, include_text, agent, repo, model, title, started_at, ended_at, messages,
    events)`` of every machine holding session ``uid``."""
    return conn.execute(
        "SELECT s.machine_id, m.include_text, s.agent, s.repo, s.model, s.title, s.started_at,"
        " s.ended_at, s.messages, s.events FROM helix.sessions s"
        " JOIN helix.machines m ON m.machine_id = s.machine_id WHERE s.uid = %s"
        " ORDER BY m.name, s.machine_id",
        (uid,),
    ).fetchall()


def session_events(conn: Conn, machine_id: Any, uid: str, limit: int) -> list[tuple[Any, ...]]:
    """``(seq, ts, kind, role, tool, summary)`` of the first ``limit`` events a machine sent
    of session ``uid`` (only machines with ``include_text`` send any)."""
    return conn.execute(
        "SELECT seq, ts, kind, role, tool, summary FROM helix.events"
        " WHERE machine_id = %s AND session_uid = %s ORDER BY seq LIMIT %s",
        (machine_id, uid, limit),
    ).fetchall()

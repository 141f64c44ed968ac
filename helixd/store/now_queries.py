"""The few reads the status line makes on every assistant message: a session's usage (with
its subagents') and the usage since a bucket, from the 15-minute rollup.  Each is an index
range, a few rows; ``helix-statusline`` must answer in tens of milliseconds whole process, so
this module imports nothing but ``sqlite3`` (no ``typing`` at run time: ``tests/
test_statusline.py`` pins the modules the line loads)."""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`: the status line loads this module

if TYPE_CHECKING:
    import sqlite3
    from typing import Any

# The counters of a row, in the order of ``helixd.store.queries.BUCKET_SUMS`` (input, output,
# cache read, cache write 5 m, 1 h, reasoning, responses): the two are pinned equal by test.
SUMS = (
    "sum(b.input), sum(b.output), sum(b.cache_read), sum(b.cache_write_5m),"
    " sum(b.cache_write_1h), sum(b.reasoning), sum(b.responses)"
)
# The dollars the agents recorded and how many responses carry them (m016), as
# ``helixd.store.queries.cost_sums`` reads them; a store not migrated yet has no such columns
# (the line is read-only: it never migrates) and reads zeros.
COST_SUMS = ", total(b.recorded_cost_usd), sum(b.costed)"


def _rows(con: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """``sql`` (holding ``{sums}``) with the recorded-cost columns, or zeros in their place."""
    import sqlite3

    try:
        return con.execute(sql.format(sums=SUMS + COST_SUMS), params).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such column" not in str(exc):
            raise
        return con.execute(sql.format(sums=SUMS + ", 0.0, 0"), params).fetchall()


def session_usage(con: sqlite3.Connection, native_id: str) -> list[tuple[Any, ...]]:
    """``(model, *counters, recorded usd, costed)`` of the session whose native id is
    ``native_id`` and of the sessions it spawned (subagents)."""
    sql = (
        "SELECT b.model, {sums} FROM usage_buckets b WHERE b.session_id IN"
        " (SELECT id FROM sessions WHERE native_id = ?1 UNION"
        "  SELECT c.id FROM sessions c JOIN sessions p ON c.parent_uid = p.uid"
        "  WHERE p.native_id = ?1)"
        " GROUP BY b.model"
    )
    return _rows(con, sql, (native_id,))


def known_session(con: sqlite3.Connection, native_id: str) -> bool:
    row = con.execute("SELECT 1 FROM sessions WHERE native_id = ? LIMIT 1", (native_id,))
    return row.fetchone() is not None


def usage_since(con: sqlite3.Connection, bucket: int) -> list[tuple[Any, ...]]:
    """``(model, *counters, recorded usd, costed)`` of every session's usage in the buckets
    from ``bucket``."""
    sql = "SELECT b.model, {sums} FROM usage_buckets b WHERE b.bucket >= ? GROUP BY 1"
    return _rows(con, sql, (bucket,))


def json_text(con: sqlite3.Connection, doc: str, path: str) -> str | None:
    """The string at ``path`` (``$.session_id``) of the JSON text ``doc``, parsed by SQLite's
    own JSON functions (the status line loads no ``json`` module, whose decoder imports
    ``re``); None when ``doc`` is not JSON or holds no string there."""
    import sqlite3

    try:
        row = con.execute(
            "SELECT CASE WHEN json_valid(?1) THEN json_extract(?1, ?2) END", (doc, path)
        ).fetchone()
    except (sqlite3.Error, ValueError):  # no JSON1 in this SQLite, or a NUL in the text
        return None
    value = row[0] if row else None
    return value if isinstance(value, str) else None

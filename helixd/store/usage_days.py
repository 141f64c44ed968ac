"""``usage_days``: usage summed per UTC day x session x model, what the dashboard's cost and
token figures read instead of the 15-minute buckets (about a quarter of their rows on a real
store: a session mostly lives inside one day) when the range and the zone are whole days.

It is kept by triggers on ``usage_buckets`` (the writer's exact per-batch rollup and the
delete trigger of ``usage`` both go through that table), in the transaction that changes the
buckets: its cost is the bucket rows a batch touches, and it always equals a GROUP BY over the
buckets, so a re-normalization (which rewrites the usage facts) rebuilds it as it goes.  The
migration fills it with that GROUP BY.  Usage of unknown time (bucket 0) is in day -1, so
days >= 0 hold exactly the buckets > 0.
"""

from __future__ import annotations

from typing import Final

DAY_BUCKETS: Final = 96  # 15-minute buckets in a day
_COUNTERS: Final = (
    "responses",
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "reasoning",
)


def day_of(bucket: str) -> str:
    """The SQL day of a bucket expression (-1: unknown time)."""
    return f"CASE WHEN {bucket} > 0 THEN {bucket} / {DAY_BUCKETS} ELSE -1 END"


# The migration's fill and the tests' check: the rollup as a GROUP BY over the buckets.
SUMS: Final = (
    f"SELECT {day_of('bucket')} AS day, session_id, model, "
    + ", ".join(f"sum({c})" for c in _COUNTERS)
    + " FROM usage_buckets GROUP BY 1, 2, 3"
)


def _add(row: str) -> str:
    """Add bucket row ``row`` (NEW or OLD) into its day."""
    cols = ", ".join(_COUNTERS)
    values = ", ".join(f"{row}.{c}" for c in _COUNTERS)
    sets = ", ".join(f"{c} = {c} + excluded.{c}" for c in _COUNTERS)
    return (
        f"INSERT INTO usage_days (day, session_id, model, {cols})"
        f" VALUES ({day_of(row + '.bucket')}, {row}.session_id, {row}.model, {values})"
        f" ON CONFLICT DO UPDATE SET {sets};"
    )


def _take(row: str) -> str:
    """Take bucket row ``row`` out of its day (the day goes once it holds no response)."""
    sets = ", ".join(f"{c} = {c} - {row}.{c}" for c in _COUNTERS)
    key = (
        f"day = {day_of(row + '.bucket')} AND session_id = {row}.session_id AND model = {row}.model"
    )
    return f"UPDATE usage_days SET {sets} WHERE {key};"


def _drop_empty(row: str) -> str:
    key = (
        f"day = {day_of(row + '.bucket')} AND session_id = {row}.session_id AND model = {row}.model"
    )
    return f"DELETE FROM usage_days WHERE responses = 0 AND {key};"


def migration() -> str:
    """m024: the table, its triggers on ``usage_buckets``, and its fill."""
    cols = ",\n            ".join(f"{c} INTEGER NOT NULL" for c in _COUNTERS)
    watched = ", ".join(("bucket", "session_id", "model", *_COUNTERS))
    return f"""
        -- Usage per UTC day x session x model (helixd/store/usage_days.py), kept by the
        -- triggers below in the transaction that changes usage_buckets.
        CREATE TABLE usage_days (
            day INTEGER NOT NULL,
            session_id INTEGER NOT NULL,
            model TEXT NOT NULL,
            {cols},
            PRIMARY KEY (day, session_id, model)
        ) WITHOUT ROWID;
        INSERT INTO usage_days {SUMS};
        CREATE TRIGGER usage_days_insert AFTER INSERT ON usage_buckets BEGIN
            {_add("NEW")}
        END;
        CREATE TRIGGER usage_days_update AFTER UPDATE OF {watched}
            ON usage_buckets BEGIN
            {_take("OLD")}
            {_add("NEW")}
            {_drop_empty("OLD")}
        END;
        CREATE TRIGGER usage_days_delete AFTER DELETE ON usage_buckets BEGIN
            {_take("OLD")}
            {_drop_empty("OLD")}
        END;
        """

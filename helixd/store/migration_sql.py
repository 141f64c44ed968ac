"""The SQL that migrations build rather than spell out (``helixd/store/schema.py`` lists the
migrations in order): the repair of impossible times (m007), the fleet outbox triggers
(m010, m020) and the recorded-cost rollups (m016).  Text only: nothing here runs SQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from helixd.core.values import MAX_TOKENS, TS_MAX_MS, TS_MIN_MS

# Times no agent wrote (helixd/core/values.py): before 1990 or years ahead of the clock.
OUT_OF_WINDOW: Final = f"{{col}} < {TS_MIN_MS} OR {{col}} >= {TS_MAX_MS}"
NOW_MS: Final = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"


def unknown_times() -> str:
    """m007: rows an older Helix stored with impossible times get *unknown time* (NULL),
    as ingest gives them now; usage facts with a counter no response has (negative, beyond
    ``MAX_TOKENS``), whose lines ingest now quarantines, go (the delete trigger takes them
    out of the rollups); the usage rollups are rebuilt when a fact moved, and the sessions
    concerned are analyzed again."""
    out = OUT_OF_WINDOW
    counters = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "reasoning")
    no_count = " OR ".join(f"{c} < 0 OR {c} > {MAX_TOKENS}" for c in counters)
    null = "\n".join(
        f"UPDATE {table} SET {col} = NULL WHERE {out.format(col=col)};"
        for table, col in (
            ("sessions", "started_at"),
            ("sessions", "ended_at"),
            ("events", "ts"),
            ("search_docs", "ts"),
            ("tool_calls", "ts"),
            ("test_runs", "ts"),
            ("file_operations", "ts"),
        )
    )
    return f"""
        CREATE TEMP TABLE m007_sessions (id INTEGER PRIMARY KEY);
        INSERT OR IGNORE INTO temp.m007_sessions SELECT session_id FROM usage WHERE {no_count};
        DELETE FROM usage WHERE {no_count};
        INSERT OR IGNORE INTO temp.m007_sessions SELECT id FROM sessions
            WHERE {out.format(col="started_at")} OR {out.format(col="ended_at")};
        INSERT OR IGNORE INTO temp.m007_sessions
            SELECT DISTINCT session_id FROM events WHERE {out.format(col="ts")};
        CREATE TEMP TABLE m007_usage AS SELECT key, session_id FROM usage
            WHERE {out.format(col="ts")};
        INSERT OR IGNORE INTO temp.m007_sessions SELECT session_id FROM temp.m007_usage;
        {null}
        UPDATE usage SET ts = NULL WHERE key IN (SELECT key FROM temp.m007_usage);
        DELETE FROM usage_buckets WHERE EXISTS (SELECT 1 FROM temp.m007_usage);
        INSERT INTO usage_buckets (bucket, session_id, model, responses, input, output,
                cache_read, cache_write_5m, cache_write_1h, reasoning)
            SELECT coalesce(ts, 0) / 900000, session_id, model, count(*), sum(input),
                sum(output), sum(cache_read), sum(cache_write_5m), sum(cache_write_1h),
                sum(reasoning)
            FROM usage WHERE EXISTS (SELECT 1 FROM temp.m007_usage) GROUP BY 1, 2, 3;
        DELETE FROM usage_hours WHERE EXISTS (SELECT 1 FROM temp.m007_usage);
        INSERT INTO usage_hours (hour, agent, model, responses, input, output, cache_read,
                cache_write_5m, cache_write_1h, reasoning)
            SELECT coalesce(u.ts, 0) / 3600000, s.agent, u.model, count(*), sum(u.input),
                sum(u.output), sum(u.cache_read), sum(u.cache_write_5m), sum(u.cache_write_1h),
                sum(u.reasoning)
            FROM usage u JOIN sessions s ON s.id = u.session_id
            WHERE EXISTS (SELECT 1 FROM temp.m007_usage) GROUP BY 1, 2, 3;
        UPDATE sessions SET changed_at = {NOW_MS}
            WHERE id IN (SELECT id FROM temp.m007_sessions);
        DROP TABLE temp.m007_sessions;
        DROP TABLE temp.m007_usage;
        """


# -- m010_fleet_outbox (issue 17): part of a shipped migration, never edit ----------------------
# The transactional outbox of the fleet mirror.  While the meta key ``fleet_outbox`` is set,
# a trigger on every Tier 2 table records the changed row's key in ``fleet_outbox``, in the
# transaction that changed it, so the write path itself is untouched.  One entry per row: a
# later change replaces the entry with a new (larger, never reused) id and keeps the time of
# the oldest change not yet shipped; a push reads entries in id order, sends the rows' current
# state and deletes the entries the server confirmed (``helixd/store/outbox.py``).
# (trigger name, table, events, entry kind, k1, k2, k3) with ``R`` standing for NEW or OLD.
OUTBOX_SOURCES: Final = (
    ("session", "sessions", ("INSERT", "UPDATE"), "session", "R.id", "0", "''"),
    ("digest", "digests", ("INSERT", "UPDATE", "DELETE"), "digest", "R.session_id", "0", "''"),
    ("usage", "usage", ("INSERT", "UPDATE", "DELETE"), "usage", "R.key", "0", "''"),
    (
        "bucket",
        "usage_buckets",
        ("INSERT", "UPDATE", "DELETE"),
        "bucket",
        "R.session_id",
        "R.bucket",
        "R.model",
    ),
    *(
        (name, name, ("INSERT", "UPDATE", "DELETE"), "signals", "R.session_id", "0", "''")
        for name in ("tool_calls", "test_runs", "file_operations", "session_signals")
    ),
)


def outbox_triggers(sources: Sequence[tuple[Any, ...]] = OUTBOX_SOURCES) -> str:
    out = []
    for name, table, events, kind, *keys in sources:
        for event in events:
            row = "OLD" if event == "DELETE" else "NEW"
            k1, k2, k3 = (k.replace("R.", f"{row}.") for k in keys)
            match = f"tbl = '{kind}' AND k1 = {k1} AND k2 = {k2} AND k3 = {k3}"
            out.append(
                f"CREATE TRIGGER fleet_{name}_{event.lower()} AFTER {event} ON {table}\n"
                "WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'fleet_outbox')\n"
                "BEGIN\n"
                f"    INSERT INTO fleet_outbox (tbl, k1, k2, k3, at)\n"
                f"        SELECT '{kind}', {k1}, {k2}, {k3}, coalesce(min(at), {NOW_MS})\n"
                f"        FROM fleet_outbox WHERE {match};\n"
                f"    DELETE FROM fleet_outbox WHERE {match}\n"
                "        AND id < (SELECT max(id) FROM fleet_outbox);\n"
                "END;"
            )
    return "\n".join(out)


def recorded_cost() -> str:
    """m016 (issue 16): the dollars an agent recorded for a response or session (Pi, Cline,
    Crush, Aider …), NULL where it recorded none (every row stored before: re-normalization
    fills it, the adapters that record a cost having risen a version).  The rollups sum it
    with ``costed``, the number of their responses that carry one (NULL when none does), so
    a report can tell a recorded cost from a row the price table must price."""
    return """
        ALTER TABLE usage ADD COLUMN recorded_cost_usd REAL;
        ALTER TABLE usage_buckets ADD COLUMN recorded_cost_usd REAL;
        ALTER TABLE usage_buckets ADD COLUMN costed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE usage_hours ADD COLUMN recorded_cost_usd REAL;
        ALTER TABLE usage_hours ADD COLUMN costed INTEGER NOT NULL DEFAULT 0;
        DROP TRIGGER usage_buckets_drop;
        """ + usage_drop_trigger()


def usage_drop_trigger() -> str:
    """The delete trigger of ``usage`` as m016 made it (m026 makes it again on the new
    table): a deleted fact is taken out of both rollups, its recorded dollars with it."""
    sums = []
    for table, where in (
        ("usage_buckets", "bucket = coalesce(OLD.ts, 0) / 900000 AND session_id = OLD.session_id"),
        (
            "usage_hours",
            "hour = coalesce(OLD.ts, 0) / 3600000"
            " AND agent = (SELECT agent FROM sessions WHERE id = OLD.session_id)",
        ),
    ):
        sums.append(
            f"""
            UPDATE {table} SET responses = responses - 1, input = input - OLD.input,
                output = output - OLD.output, cache_read = cache_read - OLD.cache_read,
                cache_write_5m = cache_write_5m - OLD.cache_write_5m,
                cache_write_1h = cache_write_1h - OLD.cache_write_1h,
                reasoning = reasoning - OLD.reasoning,
                costed = costed - (OLD.recorded_cost_usd IS NOT NULL),
                recorded_cost_usd = CASE WHEN costed - (OLD.recorded_cost_usd IS NOT NULL) = 0
                    THEN NULL
                    ELSE coalesce(recorded_cost_usd, 0) - coalesce(OLD.recorded_cost_usd, 0) END
            WHERE {where} AND model = OLD.model;
            DELETE FROM {table} WHERE responses = 0 AND {where} AND model = OLD.model;"""
        )
    return (
        """CREATE TRIGGER usage_buckets_drop AFTER DELETE ON usage BEGIN"""
        + "".join(sums)
        + """
        END;
        """
    )


# -- m020_fleet_tier2_rest (issue 17) -----------------------------------------------------------
# The fleet mirror gains what m009, m012 and m013 added to Tier 2: hook events get their
# triggers (kind ``hook``, k1 = the row's id); when the mirror is on, every session, every
# session's signals and every hook event is enqueued once (if not waiting already), so the
# server's copies gain the edit acceptance and attribution columns.
HOOK_SOURCES: Final = (
    ("hook", "hook_events", ("INSERT", "UPDATE", "DELETE"), "hook", "R.id", "0", "''"),
)


def enqueue_all_once(kind: str, source: str) -> str:
    return (
        f"INSERT INTO fleet_outbox (tbl, k1, k2, k3, at) SELECT '{kind}', k, 0, '', {NOW_MS}"
        f" FROM ({source}) WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'fleet_outbox')"
        f" AND NOT EXISTS (SELECT 1 FROM fleet_outbox o WHERE o.tbl = '{kind}' AND o.k1 = k"
        " AND o.k2 = 0 AND o.k3 = '');"
    )

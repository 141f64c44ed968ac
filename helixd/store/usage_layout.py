"""m026 (issue 12): the ``usage`` facts stored in insertion order, their dedup key in an index.

Until m025 a usage fact's row was keyed by ``key`` itself (``key INTEGER PRIMARY KEY``, a
64-bit hash of the response's dedup key): rows sat in hash order, so a transaction with n new
facts wrote n random pages of a table that grows with the store, and every checkpoint copied
them again (the 204 MB replay of docs/performance.md's sixth pass: the table's 672 pages
written 12 360 times).  Now the rows take a plain rowid (``id``, appended) and ``key`` is
kept, same values, under a UNIQUE index (``usage_key``): the upsert's ``ON CONFLICT (key)``,
the fleet outbox (``R.key``) and every reader of ``usage.key`` work unchanged, and the random
writes go to an index a few times smaller than the rows.

The migration copies the facts into the new table in (session, time) order, so that a
session's facts, which the analyze pass and eviction read together, sit on neighbouring
pages; and makes again what dropping the old table took with it: its two indexes, the
``usage_credit_moved`` trigger, the rollups' delete trigger (m016's) and the fleet outbox's
three triggers.  No fact, rollup or outbox entry changes.
"""

from __future__ import annotations

from typing import Final

from helixd.store.migration_sql import NOW_MS, OUTBOX_SOURCES, outbox_triggers, usage_drop_trigger

COLUMNS: Final = (
    "key",
    "session_id",
    "rank",
    "ts",
    "model",
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "reasoning",
    "recorded_cost_usd",
)


def migration() -> str:
    cols = ", ".join(COLUMNS)
    fleet = outbox_triggers(tuple(s for s in OUTBOX_SOURCES if s[1] == "usage"))
    return f"""
        -- usage: rows in insertion order, the dedup hash under a unique index
        -- (helixd/store/usage_layout.py).
        CREATE TABLE usage_m026 (
            id INTEGER PRIMARY KEY,
            key INTEGER NOT NULL,
            session_id INTEGER NOT NULL,
            rank TEXT NOT NULL,
            ts INTEGER,
            model TEXT NOT NULL,
            input INTEGER NOT NULL,
            output INTEGER NOT NULL,
            cache_read INTEGER NOT NULL,
            cache_write_5m INTEGER NOT NULL,
            cache_write_1h INTEGER NOT NULL,
            reasoning INTEGER NOT NULL,
            recorded_cost_usd REAL
        );
        INSERT INTO usage_m026 ({cols})
            SELECT {cols} FROM usage ORDER BY session_id, ts, key;
        -- Dropping a table fires none of its triggers (they go first): the rollups and the
        -- fleet outbox are untouched.
        DROP TABLE usage;
        ALTER TABLE usage_m026 RENAME TO usage;
        CREATE UNIQUE INDEX usage_key ON usage (key);
        CREATE INDEX usage_session ON usage (session_id);
        CREATE INDEX usage_ts ON usage (ts);
        -- A response's credit moving to an earlier-ranked session changes the session that
        -- lost it too: its digest must be rebuilt (m001's trigger).
        CREATE TRIGGER usage_credit_moved AFTER UPDATE OF session_id ON usage
        WHEN OLD.session_id != NEW.session_id
        BEGIN
            UPDATE sessions SET changed_at = {NOW_MS} WHERE id = OLD.session_id;
        END;
        {usage_drop_trigger()}
        {fleet}
        """

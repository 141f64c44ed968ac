"""The store's schema as an ordered list of named migrations (simonw/llm style).

Each migration runs once, in order, inside one transaction, and is recorded in the
``migrations`` table.  Never edit a migration that has shipped: add a new one.

Tables by tier (design spec §3):

* cursors: ``files`` (one row per source file: identity, byte offset, adapter state);
* Tier 1 (bounded, evictable): ``raw_blocks`` (the source bytes verbatim after secret
  redaction, zstd-compressed per ingest batch, keyed by file, generation and byte offset) —
  this is also the blob store behind each event's payload reference: bulky bodies (tool
  output, thinking, images) live only there and go when the raw blocks go, while the light
  ``events`` rows (normalized ``SessionEvent``: summary and conversation text) stay;
  ``bad_lines``;
* Tier 2 (durable, small): ``sessions``, ``usage`` (deduplicated usage facts, one per
  API response; since m026 in insertion order, the dedup hash ``key`` under a unique index:
  ``helixd/store/usage_layout.py``), ``digests`` (spec §11.2 JSON).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from helixd.store import status_totals, usage_days, usage_layout
from helixd.store.migration_sql import (
    HOOK_SOURCES,
    NOW_MS,
    enqueue_all_once,
    outbox_triggers,
    recorded_cost,
    unknown_times,
)
from helixd.store.schema_initial import INITIAL

MIGRATIONS: Final[Sequence[tuple[str, str]]] = (
    ("m001_initial", INITIAL),
    (
        "m002_retention",
        """
        -- 0 = whole, 1 = raw blocks dropped (events stay), 2 = events dropped too.
        ALTER TABLE sessions ADD COLUMN evict_stage INTEGER NOT NULL DEFAULT 0;

        -- One row per session a retention pass shrank (what went, why, how much).
        CREATE TABLE evictions (
            id INTEGER PRIMARY KEY,
            at INTEGER NOT NULL,
            session_id INTEGER NOT NULL,
            uid TEXT NOT NULL,
            pass TEXT NOT NULL,
            stage INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            analyzed_at INTEGER
        );
        CREATE INDEX evictions_session ON evictions (session_id);

        -- Un-analyzed data dropped on the hard-cap overflow path (spec §5.2 step 4).
        CREATE TABLE data_loss (
            id INTEGER PRIMARY KEY,
            at INTEGER NOT NULL,
            session_id INTEGER NOT NULL,
            uid TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            reason TEXT NOT NULL
        );
        """,
    ),
    (
        "m003_search",
        """
        -- Full-text index of the conversation (prompts, answers, thinking, tool commands and
        -- paths, errors).  Contentless: the text lives only in the index, so a session stays
        -- searchable after its raw lines and event bodies are evicted.  rowid = events.id.
        CREATE VIRTUAL TABLE search USING fts5(
            text, content='', tokenize='unicode61 remove_diacritics 2'
        );
        -- What a hit is (durable, no text): survives the deletion of its event row.
        CREATE TABLE search_docs (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL,
            kind TEXT NOT NULL,
            ts INTEGER
        );
        CREATE INDEX search_docs_session ON search_docs (session_id);
        CREATE TEMP TABLE m003_docs AS
            SELECT id, session_id, kind, ts,
                CASE WHEN kind = 'tool_call' THEN
                    CASE WHEN body IS NULL THEN summary WHEN summary = '' THEN body
                    ELSE summary || char(10) || body END
                ELSE coalesce(body, summary) END AS text
            FROM events WHERE kind IN ('user_msg', 'assistant_msg', 'thinking', 'tool_call',
                'edit', 'test_run', 'error', 'human_intervention');
        DELETE FROM temp.m003_docs WHERE coalesce(text, '') = '';
        INSERT INTO search_docs (id, session_id, kind, ts)
            SELECT id, session_id, kind, ts FROM temp.m003_docs;
        INSERT INTO search (rowid, text) SELECT id, text FROM temp.m003_docs;
        DROP TABLE temp.m003_docs;
        """,
    ),
    (
        "m004_usage_buckets",
        """
        -- Usage summed per 15-minute bucket x session x model, kept exact by the writer (a
        -- fact's credit, timestamp or counters can move on upsert).  Reports read this, not
        -- the per-response rows: 15 minutes divides every real UTC offset.
        CREATE TABLE usage_buckets (
            bucket INTEGER NOT NULL,
            session_id INTEGER NOT NULL,
            model TEXT NOT NULL,
            responses INTEGER NOT NULL,
            input INTEGER NOT NULL,
            output INTEGER NOT NULL,
            cache_read INTEGER NOT NULL,
            cache_write_5m INTEGER NOT NULL,
            cache_write_1h INTEGER NOT NULL,
            reasoning INTEGER NOT NULL,
            PRIMARY KEY (bucket, session_id, model)
        ) WITHOUT ROWID;
        CREATE INDEX usage_buckets_session ON usage_buckets (session_id);
        INSERT INTO usage_buckets
            SELECT coalesce(ts, 0) / 900000, session_id, model, count(*), sum(input),
                sum(output), sum(cache_read), sum(cache_write_5m), sum(cache_write_1h),
                sum(reasoning)
            FROM usage GROUP BY 1, 2, 3;
        -- The same per hour x agent x model (sessions collapsed): what a report without a
        -- repo filter reads when the zone's offsets are whole hours (~6x fewer rows).
        CREATE TABLE usage_hours (
            hour INTEGER NOT NULL,
            agent TEXT NOT NULL,
            model TEXT NOT NULL,
            responses INTEGER NOT NULL,
            input INTEGER NOT NULL,
            output INTEGER NOT NULL,
            cache_read INTEGER NOT NULL,
            cache_write_5m INTEGER NOT NULL,
            cache_write_1h INTEGER NOT NULL,
            reasoning INTEGER NOT NULL,
            PRIMARY KEY (hour, agent, model)
        ) WITHOUT ROWID;
        INSERT INTO usage_hours
            SELECT coalesce(u.ts, 0) / 3600000, s.agent, u.model, count(*), sum(u.input),
                sum(u.output), sum(u.cache_read), sum(u.cache_write_5m), sum(u.cache_write_1h),
                sum(u.reasoning)
            FROM usage u JOIN sessions s ON s.id = u.session_id GROUP BY 1, 2, 3;
        -- Inserts and upserts are rolled up by the writer, per batch (helixd/store/writer.py
        -- ``_roll_up``); a deleted fact is taken out here.
        CREATE TRIGGER usage_buckets_drop AFTER DELETE ON usage BEGIN
            UPDATE usage_buckets SET responses = responses - 1, input = input - OLD.input,
                output = output - OLD.output, cache_read = cache_read - OLD.cache_read,
                cache_write_5m = cache_write_5m - OLD.cache_write_5m,
                cache_write_1h = cache_write_1h - OLD.cache_write_1h,
                reasoning = reasoning - OLD.reasoning
            WHERE bucket = coalesce(OLD.ts, 0) / 900000 AND session_id = OLD.session_id
                AND model = OLD.model;
            DELETE FROM usage_buckets WHERE responses = 0
                AND bucket = coalesce(OLD.ts, 0) / 900000 AND session_id = OLD.session_id
                AND model = OLD.model;
            UPDATE usage_hours SET responses = responses - 1, input = input - OLD.input,
                output = output - OLD.output, cache_read = cache_read - OLD.cache_read,
                cache_write_5m = cache_write_5m - OLD.cache_write_5m,
                cache_write_1h = cache_write_1h - OLD.cache_write_1h,
                reasoning = reasoning - OLD.reasoning
            WHERE hour = coalesce(OLD.ts, 0) / 3600000
                AND agent = (SELECT agent FROM sessions WHERE id = OLD.session_id)
                AND model = OLD.model;
            DELETE FROM usage_hours WHERE responses = 0 AND hour = coalesce(OLD.ts, 0) / 3600000
                AND agent = (SELECT agent FROM sessions WHERE id = OLD.session_id)
                AND model = OLD.model;
        END;
        """,
    ),
    (
        "m005_edit_lines",
        """
        -- Lines an edit adds and removes (from the edit tool's input or the patch).
        ALTER TABLE events ADD COLUMN lines_added INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE events ADD COLUMN lines_removed INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        "m006_signals",
        """
        -- A tool result's status (success / error / rejected / interrupted) and the test
        -- counts the adapter read from a test command's output (the output itself lives
        -- only in the raw lines, which can be evicted).
        ALTER TABLE events ADD COLUMN status TEXT;
        ALTER TABLE events ADD COLUMN test_framework TEXT;
        ALTER TABLE events ADD COLUMN tests_passed INTEGER;
        ALTER TABLE events ADD COLUMN tests_failed INTEGER;
        ALTER TABLE events ADD COLUMN tests_skipped INTEGER;
        -- The (redacted) companion file the adapter read beside a source file, so that
        -- re-normalization sees what ingest saw even after the source is gone.
        ALTER TABLE files ADD COLUMN sidecar BLOB;

        -- Tier 2 signals, rebuilt by the analyze pass with the digest and kept after
        -- eviction.  ``*_seq`` point at the events (``events.seq`` of the session) they
        -- came from.
        CREATE TABLE tool_calls (
            session_id INTEGER NOT NULL,
            call_seq INTEGER NOT NULL,
            result_seq INTEGER,
            ts INTEGER,
            tool TEXT NOT NULL,
            target TEXT NOT NULL,
            status TEXT NOT NULL,
            duration_ms INTEGER,
            PRIMARY KEY (session_id, call_seq)
        ) WITHOUT ROWID;
        CREATE TABLE test_runs (
            session_id INTEGER NOT NULL,
            call_seq INTEGER NOT NULL,
            result_seq INTEGER,
            ts INTEGER,
            command TEXT NOT NULL,
            framework TEXT,
            passed INTEGER,
            failed INTEGER,
            skipped INTEGER,
            status TEXT NOT NULL,
            duration_ms INTEGER,
            PRIMARY KEY (session_id, call_seq)
        ) WITHOUT ROWID;
        CREATE TABLE file_operations (
            session_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            ts INTEGER,
            operation TEXT NOT NULL,
            file_path TEXT NOT NULL,
            language TEXT,
            lines_added INTEGER NOT NULL,
            lines_removed INTEGER NOT NULL,
            status TEXT,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID;
        CREATE INDEX file_operations_path ON file_operations (file_path);
        -- Errors (by fingerprint), retries (ref_seq = the failed call repeated) and human
        -- interventions.
        CREATE TABLE session_signals (
            session_id INTEGER NOT NULL,
            kind TEXT NOT NULL,
            seq INTEGER NOT NULL,
            ref_seq INTEGER,
            tool TEXT,
            fingerprint TEXT,
            PRIMARY KEY (session_id, kind, seq)
        ) WITHOUT ROWID;
        CREATE INDEX session_signals_fingerprint ON session_signals (fingerprint)
            WHERE fingerprint IS NOT NULL;

        -- Event ids only ever grow from here on (helixd/store/writer.py): the highest id
        -- given so far, including events eviction deleted whose index entries remain.
        INSERT OR REPLACE INTO meta (key, value)
            SELECT 'event_id_floor', max(coalesce((SELECT max(id) FROM events), 0),
                coalesce((SELECT max(id) FROM search_docs), 0));
        """,
    ),
    ("m007_unknown_times", unknown_times()),
    (
        "m008_parent_links",
        f"""
        -- A parent's digest lists its subagents and sums their spend: a session linked to a
        -- parent, or moved to another, has both parents analyzed again (the writer does the
        -- same when a subagent's usage changes).
        CREATE TRIGGER sessions_parent_linked AFTER INSERT ON sessions
        WHEN NEW.parent_uid IS NOT NULL
        BEGIN
            UPDATE sessions SET changed_at = coalesce(NEW.changed_at, {NOW_MS})
            WHERE uid = NEW.parent_uid;
        END;
        CREATE TRIGGER sessions_reparented AFTER UPDATE OF parent_uid ON sessions
        WHEN OLD.parent_uid IS NOT NEW.parent_uid
        BEGIN
            UPDATE sessions SET changed_at = coalesce(NEW.changed_at, {NOW_MS})
            WHERE uid IN (OLD.parent_uid, NEW.parent_uid);
        END;
        """,
    ),
    (
        "m009_edit_acceptance",
        """
        -- Whether the user accepted an edit: 1 applied, 0 rejected (a denied permission
        -- prompt, a declined patch approval) or interrupted, NULL when the call failed on
        -- its own or has no result (helixd/core/signals.py ``accepted_of``).
        ALTER TABLE file_operations ADD COLUMN accepted INTEGER;
        UPDATE file_operations SET accepted = CASE WHEN status = 'success' THEN 1
            WHEN status IN ('rejected', 'interrupted') THEN 0 END;
        -- The dashboard's reads of the signal tables, covered by their indexes (a WITHOUT
        -- ROWID table's index carries its primary key: session_id too): counts by tool and
        -- status, a duration percentile as an offset into (tool, duration), calls per day
        -- as ranges of ts.
        CREATE INDEX tool_calls_stats ON tool_calls (tool, status, duration_ms, ts);
        CREATE INDEX tool_calls_durations ON tool_calls (tool, duration_ms, ts);
        CREATE INDEX tool_calls_ts ON tool_calls (ts, status);
        CREATE INDEX test_runs_ts ON test_runs (ts);
        CREATE INDEX file_operations_ts ON file_operations (ts);
        """,
    ),
    (
        "m010_fleet_outbox",
        """
        -- What changed in Tier 2 and is not on the fleet server yet (see _OUTBOX_SOURCES).
        -- tbl: session | digest | usage | bucket | signals (all signals of session k1);
        -- k1..k3: the row's key; at: when its oldest unshipped change was made (ms).
        CREATE TABLE fleet_outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tbl TEXT NOT NULL,
            k1 INTEGER NOT NULL,
            k2 INTEGER NOT NULL,
            k3 TEXT NOT NULL,
            at INTEGER NOT NULL
        );
        CREATE INDEX fleet_outbox_row ON fleet_outbox (tbl, k1, k2, k3);
        -- With fleet.include_text: the highest event id of each session whose text was
        -- shipped (event ids only ever grow, so a rebuilt session's events are sent again).
        CREATE TABLE fleet_text_marks (
            session_id INTEGER PRIMARY KEY,
            event_id INTEGER NOT NULL
        );
        """
        + outbox_triggers(),
    ),
    (
        "m011_evicted_index",
        """
        -- Eviction takes a session's full-text index entries with its events (design spec
        -- §9).  Sessions evicted before that have no event rows left to delete their entries
        -- by text: their documents go, so no search reaches them.
        DELETE FROM search_docs
            WHERE session_id IN (SELECT id FROM sessions WHERE evict_stage >= 2);
        """,
    ),
    (
        "m012_attribution",
        f"""
        -- Design spec §4.1: the repo resolved through git (a worktree's main worktree,
        -- the remote), the domain and the task reference, set by the analyze pass; every
        -- session is analyzed again to fill them (digest schema 3).
        ALTER TABLE sessions ADD COLUMN repo_root TEXT;
        ALTER TABLE sessions ADD COLUMN domain TEXT;
        ALTER TABLE sessions ADD COLUMN task_ref TEXT;
        -- code-o11y: the commit checked out when the session started, where the agent
        -- records it (a session header's git commit hash)
        ALTER TABLE sessions ADD COLUMN git_commit TEXT;
        UPDATE sessions SET changed_at = max(coalesce(changed_at, 0), {NOW_MS})
            WHERE evict_stage < 2 AND analyzed_at IS NOT NULL;
        """,
    ),
    (
        "m013_hook_events",
        """
        -- Tier 2: the shell commands and file edits agents' hooks reported to the daemon
        -- (redacted), for the per-phase hook activity of `helixctl tokens --phases`.
        CREATE TABLE hook_events (
            id INTEGER PRIMARY KEY,
            at INTEGER NOT NULL,
            agent TEXT,
            native_id TEXT,
            what TEXT NOT NULL,
            tool TEXT NOT NULL,
            call_id TEXT,
            target TEXT NOT NULL
        );
        CREATE INDEX hook_events_at ON hook_events (at);
        """,
    ),
    (
        "m014_event_totals",
        """
        -- The events' share of Tier 1 (what `helixctl status` and the retention budgets
        -- count: the UTF-8 bytes of summary and body, per row) kept as a running total by
        -- triggers, in the transaction that changes the events: a read takes one row instead
        -- of a scan of every event (helixd.store.evict.tier1_bytes).
        CREATE TABLE event_totals (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            event_rows INTEGER NOT NULL,
            text_bytes INTEGER NOT NULL
        );
        INSERT INTO event_totals (id, event_rows, text_bytes)
            SELECT 1, count(*), coalesce(sum(length(CAST(summary AS BLOB))
                + coalesce(length(CAST(body AS BLOB)), 0)), 0) FROM events;
        CREATE TRIGGER event_totals_insert AFTER INSERT ON events BEGIN
            UPDATE event_totals SET event_rows = event_rows + 1, text_bytes = text_bytes
                + length(CAST(NEW.summary AS BLOB)) + coalesce(length(CAST(NEW.body AS BLOB)), 0)
                WHERE id = 1;
        END;
        CREATE TRIGGER event_totals_delete AFTER DELETE ON events BEGIN
            UPDATE event_totals SET event_rows = event_rows - 1, text_bytes = text_bytes
                - length(CAST(OLD.summary AS BLOB)) - coalesce(length(CAST(OLD.body AS BLOB)), 0)
                WHERE id = 1;
        END;
        CREATE TRIGGER event_totals_update AFTER UPDATE OF summary, body ON events BEGIN
            UPDATE event_totals SET text_bytes = text_bytes
                + length(CAST(NEW.summary AS BLOB)) + coalesce(length(CAST(NEW.body AS BLOB)), 0)
                - length(CAST(OLD.summary AS BLOB)) - coalesce(length(CAST(OLD.body AS BLOB)), 0)
                WHERE id = 1;
        END;
        """,
    ),
    (
        "m015_tool_call_hours",
        """
        -- The tool calls summed per hour x session x tool x status, rebuilt per session with
        -- its signals (helixd/store/tool_rollup.py): the dashboard's tool figures read this,
        -- not every call.  Hour -1: calls of unknown or impossible time (ts NULL or <= 0).
        CREATE TABLE tool_call_hours (
            hour INTEGER NOT NULL,
            session_id INTEGER NOT NULL,
            tool TEXT NOT NULL,
            status TEXT NOT NULL,
            calls INTEGER NOT NULL,
            timed INTEGER NOT NULL,
            sum_ms INTEGER NOT NULL,
            max_ms INTEGER,
            PRIMARY KEY (hour, session_id, tool, status)
        ) WITHOUT ROWID;
        CREATE INDEX tool_call_hours_session ON tool_call_hours (session_id);
        INSERT INTO tool_call_hours
            SELECT CASE WHEN ts > 0 THEN ts / 3600000 ELSE -1 END, session_id, tool, status,
                count(*), count(duration_ms), coalesce(sum(duration_ms), 0), max(duration_ms)
            FROM tool_calls GROUP BY 1, 2, 3, 4;
        """,
    ),
    ("m016_recorded_cost", recorded_cost()),
    (
        "m020_fleet_tier2_rest",
        outbox_triggers(HOOK_SOURCES)
        + "\n"
        + enqueue_all_once("session", "SELECT id AS k FROM sessions")
        + enqueue_all_once("signals", "SELECT DISTINCT session_id AS k FROM file_operations")
        + enqueue_all_once("hook", "SELECT id AS k FROM hook_events"),
    ),
    ("m024_usage_days", usage_days.migration()),
    ("m025_status_totals", status_totals.migration()),
    ("m026_usage_layout", usage_layout.migration()),
    (
        "m027_event_totals_by_writer",
        """
        -- The events' running totals (m014) gain their inserted rows from the writer, one
        -- statement per session's rows of a batch (helixd/store/writer.py
        -- ``count_events``), not from a trigger run once per event; the update and delete
        -- triggers stay (eviction, re-normalization and rewrites go through them).
        DROP TRIGGER event_totals_insert;
        """,
    ),
    (
        "m028_signal_outbox_by_writer",
        """
        -- The fleet outbox's signals entries (m010) come from the writer, once per session
        -- whose signals are replaced (helixd/store/signals_write.py ``_enqueue_for_fleet``),
        -- not from an insert trigger run once per signal row, fleet on or off; the update and
        -- delete triggers stay.
        DROP TRIGGER fleet_tool_calls_insert;
        DROP TRIGGER fleet_test_runs_insert;
        DROP TRIGGER fleet_file_operations_insert;
        DROP TRIGGER fleet_session_signals_insert;
        """,
    ),
)

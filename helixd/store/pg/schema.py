"""The fleet database's schema: PostgreSQL's own ordered migrations (schema ``helix``).

Each migration runs once, in order, in one transaction, under an advisory lock (ten machines
starting at once migrate once), and is recorded in ``helix.migrations``; never edit one that
has shipped, add another.  A database written by a newer Helix is refused.

Every mirrored table is keyed by the machine (``machine_id``: a random UUID each store draws
once, so two hosts with the same name never share rows) and the row's natural key on that
machine.  Row-level security lets a role write only the rows of the machines it registered
(``machines.owner``); every role that can read the tables reads all of them.  When the group
roles ``helix_pusher`` and ``helix_reader`` exist, each migration grants its tables to them
(docs/operations.md, "Fleet").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg

from helixd.store.pg.connect import FleetDbError

SCHEMA: Final = "helix"
_LOCK: Final = 0x68656C6978  # pg_advisory_xact_lock key of the migrations ("helix")
_P001_TABLES: Final = (
    "sessions",
    "digests",
    "usage",
    "usage_buckets",
    "tool_calls",
    "test_runs",
    "file_operations",
    "session_signals",
    "events",
)
MIRRORED: Final = (*_P001_TABLES, "hook_events")  # hook_events: p002
_COUNTERS: Final = """
    input bigint NOT NULL,
    output bigint NOT NULL,
    cache_read bigint NOT NULL,
    cache_write_5m bigint NOT NULL,
    cache_write_1h bigint NOT NULL,
    reasoning bigint NOT NULL"""
_MACHINE: Final = "machine_id uuid NOT NULL REFERENCES helix.machines ON DELETE CASCADE"


def _policies(tables: Sequence[str]) -> str:
    """Row-level security of mirrored tables: all rows readable, a role writes only the rows
    of the machines it registered.  (The list of its machines is an uncorrelated subquery:
    computed once per statement, not once per row.)"""
    return f"""
        DO $$
        DECLARE
            t text;
            own text := 'machine_id = ANY (ARRAY(SELECT m.machine_id FROM helix.machines m'
                        ' WHERE m.owner = current_user))';
        BEGIN
            FOREACH t IN ARRAY ARRAY[{", ".join(f"'{t}'" for t in tables)}] LOOP
                EXECUTE format('ALTER TABLE helix.%I ENABLE ROW LEVEL SECURITY', t);
                EXECUTE format('CREATE POLICY read_all ON helix.%I FOR SELECT USING (true)', t);
                EXECUTE format('CREATE POLICY insert_own ON helix.%I FOR INSERT'
                               ' WITH CHECK (%s)', t, own);
                EXECUTE format('CREATE POLICY update_own ON helix.%I FOR UPDATE'
                               ' USING (%s) WITH CHECK (%s)', t, own, own);
                EXECUTE format('CREATE POLICY delete_own ON helix.%I FOR DELETE'
                               ' USING (%s)', t, own);
            END LOOP;
        END $$;
        """


MIGRATIONS: Final[Sequence[tuple[str, str]]] = (
    (
        "p001_mirror",
        f"""
        CREATE TABLE helix.machines (
            machine_id uuid PRIMARY KEY,
            name text NOT NULL,
            user_name text NOT NULL,
            owner name NOT NULL DEFAULT current_user,
            helix_version text,
            include_text boolean NOT NULL DEFAULT false,
            first_push_at timestamptz NOT NULL DEFAULT now(),
            last_push_at timestamptz,
            -- the highest outbox id of this machine the server has committed
            shipped_through bigint NOT NULL DEFAULT 0
        );
        CREATE TABLE helix.sessions (
            {_MACHINE},
            uid text NOT NULL,
            agent text NOT NULL,
            native_id text NOT NULL,
            parent_uid text,
            cwd text,
            repo text,
            git_branch text,
            model text,
            title text,
            version text,
            agent_type text,
            started_at bigint,
            ended_at bigint,
            ended smallint NOT NULL,
            messages integer NOT NULL,
            events integer NOT NULL,
            discovered_at bigint,
            ingested_at bigint,
            changed_at bigint,
            analyzed_at bigint,
            evicted_at bigint,
            evict_stage smallint NOT NULL,
            PRIMARY KEY (machine_id, uid)
        );
        CREATE INDEX sessions_started ON helix.sessions (started_at);
        CREATE TABLE helix.digests (
            {_MACHINE},
            session_uid text NOT NULL,
            schema_version integer NOT NULL,
            built_at bigint NOT NULL,
            provisional smallint NOT NULL,
            doc jsonb NOT NULL,
            PRIMARY KEY (machine_id, session_uid)
        );
        CREATE TABLE helix.usage (
            {_MACHINE},
            key bigint NOT NULL,
            session_uid text NOT NULL,
            rank text NOT NULL,
            ts bigint,
            model text NOT NULL,{_COUNTERS},
            PRIMARY KEY (machine_id, key)
        );
        CREATE INDEX usage_ts ON helix.usage (ts);
        -- Usage per 15-minute bucket x session x model, as the store keeps it: what reports
        -- read.
        CREATE TABLE helix.usage_buckets (
            {_MACHINE},
            bucket bigint NOT NULL,
            session_uid text NOT NULL,
            model text NOT NULL,
            responses bigint NOT NULL,{_COUNTERS},
            PRIMARY KEY (machine_id, bucket, session_uid, model)
        );
        CREATE INDEX usage_buckets_bucket ON helix.usage_buckets (bucket);
        CREATE TABLE helix.tool_calls (
            {_MACHINE},
            session_uid text NOT NULL,
            call_seq integer NOT NULL,
            result_seq integer,
            ts bigint,
            tool text NOT NULL,
            target text NOT NULL,
            status text NOT NULL,
            duration_ms bigint,
            PRIMARY KEY (machine_id, session_uid, call_seq)
        );
        CREATE TABLE helix.test_runs (
            {_MACHINE},
            session_uid text NOT NULL,
            call_seq integer NOT NULL,
            result_seq integer,
            ts bigint,
            command text NOT NULL,
            framework text,
            passed integer,
            failed integer,
            skipped integer,
            status text NOT NULL,
            duration_ms bigint,
            PRIMARY KEY (machine_id, session_uid, call_seq)
        );
        CREATE TABLE helix.file_operations (
            {_MACHINE},
            session_uid text NOT NULL,
            seq integer NOT NULL,
            ts bigint,
            operation text NOT NULL,
            file_path text NOT NULL,
            language text,
            lines_added integer NOT NULL,
            lines_removed integer NOT NULL,
            status text,
            PRIMARY KEY (machine_id, session_uid, seq)
        );
        CREATE TABLE helix.session_signals (
            {_MACHINE},
            session_uid text NOT NULL,
            kind text NOT NULL,
            seq integer NOT NULL,
            ref_seq integer,
            tool text,
            fingerprint text,
            PRIMARY KEY (machine_id, session_uid, kind, seq)
        );
        -- Conversation text (Tier 1): only from machines with fleet.include_text = true.
        CREATE TABLE helix.events (
            {_MACHINE},
            session_uid text NOT NULL,
            seq integer NOT NULL,
            parent_seq integer,
            ts bigint,
            kind text NOT NULL,
            role text,
            tool text,
            call_id text,
            summary text NOT NULL,
            body text,
            is_error smallint NOT NULL,
            PRIMARY KEY (machine_id, session_uid, seq)
        );

        -- A role writes only the rows of the machines it registered; all rows are readable.
        -- (The list of its machines is an uncorrelated subquery: computed once per statement,
        -- not once per row.)
        ALTER TABLE helix.machines ENABLE ROW LEVEL SECURITY;
        CREATE POLICY read_all ON helix.machines FOR SELECT USING (true);
        CREATE POLICY register_own ON helix.machines FOR INSERT
            WITH CHECK (owner = current_user);
        CREATE POLICY update_own ON helix.machines FOR UPDATE
            USING (owner = current_user) WITH CHECK (owner = current_user);
        DO $$
        DECLARE
            t text;
            own text := 'machine_id = ANY (ARRAY(SELECT m.machine_id FROM helix.machines m'
                        ' WHERE m.owner = current_user))';
        BEGIN
            FOREACH t IN ARRAY ARRAY[{", ".join(f"'{t}'" for t in _P001_TABLES)}] LOOP
                EXECUTE format('ALTER TABLE helix.%I ENABLE ROW LEVEL SECURITY', t);
                EXECUTE format('CREATE POLICY read_all ON helix.%I FOR SELECT USING (true)', t);
                EXECUTE format('CREATE POLICY insert_own ON helix.%I FOR INSERT'
                               ' WITH CHECK (%s)', t, own);
                EXECUTE format('CREATE POLICY update_own ON helix.%I FOR UPDATE'
                               ' USING (%s) WITH CHECK (%s)', t, own, own);
                EXECUTE format('CREATE POLICY delete_own ON helix.%I FOR DELETE'
                               ' USING (%s)', t, own);
            END LOOP;
        END $$;
        """,
    ),
    (
        "p002_tier2_rest",
        f"""
        -- What the store's m009, m012 and m013 added to Tier 2 (the store's m020 enqueues
        -- every row again so that rows pushed before gain the new columns).
        ALTER TABLE helix.file_operations ADD COLUMN accepted smallint;
        ALTER TABLE helix.sessions ADD COLUMN repo_root text;
        ALTER TABLE helix.sessions ADD COLUMN domain text;
        ALTER TABLE helix.sessions ADD COLUMN task_ref text;
        ALTER TABLE helix.sessions ADD COLUMN git_commit text;
        -- The shell commands and edited paths the agents' hooks reported (redacted).
        CREATE TABLE helix.hook_events (
            {_MACHINE},
            id bigint NOT NULL,
            at bigint NOT NULL,
            agent text,
            native_id text,
            what text NOT NULL,
            tool text NOT NULL,
            call_id text,
            target text NOT NULL,
            PRIMARY KEY (machine_id, id)
        );
        CREATE INDEX hook_events_at ON helix.hook_events (at);
        {_policies(["hook_events"])}
        """,
    ),
    (
        "p003_recorded_cost",
        """
        -- The dollars the agents recorded (the store's m016): per usage fact, and summed per
        -- bucket with ``costed``, how many of its responses carry one.  Rows pushed before
        -- carried none (the store fills the column by re-normalization, which re-sends them).
        ALTER TABLE helix.usage ADD COLUMN recorded_cost_usd double precision;
        ALTER TABLE helix.usage_buckets ADD COLUMN recorded_cost_usd double precision;
        ALTER TABLE helix.usage_buckets ADD COLUMN costed integer NOT NULL DEFAULT 0;
        """,
    ),
)

# Run after every migration: the tables to the group roles, when the administrator made them.
_GRANTS: Final = """
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'helix_reader') THEN
        GRANT USAGE ON SCHEMA helix TO helix_reader;
        GRANT SELECT ON ALL TABLES IN SCHEMA helix TO helix_reader;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'helix_pusher') THEN
        GRANT USAGE ON SCHEMA helix TO helix_pusher;
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA helix TO helix_pusher;
        REVOKE INSERT, UPDATE, DELETE ON helix.migrations FROM helix_pusher;
    END IF;
END $$;
"""


def _known() -> list[str]:
    return [name for name, _ in MIGRATIONS]


async def applied(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    """The migrations the database has (empty: no Helix schema yet)."""
    cur = await conn.execute("SELECT to_regclass('helix.migrations') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return []
    cur = await conn.execute("SELECT name FROM helix.migrations ORDER BY name")
    return [r[0] for r in await cur.fetchall()]


def check_current(done: Sequence[str]) -> list[str]:
    """The migrations still to apply; FleetDbError when the database is newer than us."""
    newer = sorted(set(done) - set(_known()))
    if newer:
        raise FleetDbError(f"the fleet database was written by a newer Helix ({newer}): upgrade")
    return [name for name in _known() if name not in done]


async def migrate(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    """Apply what is missing (in one transaction, under the migrations' lock); returns the
    names applied.  A role without the right to create tables gets a FleetDbError saying who
    must run ``helixctl fleet migrate``."""
    if not check_current(await applied(conn)):
        return []
    try:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            await conn.execute("CREATE SCHEMA IF NOT EXISTS helix")
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS helix.migrations"
                " (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            todo = check_current(await applied(conn))
            for name in todo:
                await conn.execute(dict(MIGRATIONS)[name])
                await conn.execute("INSERT INTO helix.migrations (name) VALUES (%s)", (name,))
            await conn.execute(_GRANTS)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise FleetDbError(
            "the fleet schema needs migrations this role may not apply"
            f" ({exc.diag.message_primary}); run `helixctl fleet migrate` as the database's owner"
        ) from None
    return todo


def applied_sync(conn: psycopg.Connection[Any]) -> list[str]:
    """``applied`` on a read connection."""
    row = conn.execute("SELECT to_regclass('helix.migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return []
    return [r[0] for r in conn.execute("SELECT name FROM helix.migrations ORDER BY name")]


def check_readable(conn: psycopg.Connection[Any]) -> None:
    """For reads: FleetDbError unless the schema is there and exactly this Helix's (an older
    one lacks tables and columns the reads ask for; a reader's role may not migrate it)."""
    done = applied_sync(conn)
    if not done:
        raise FleetDbError(
            "no Helix fleet schema in this database yet (`helixctl fleet push` or"
            " `helixctl fleet migrate` creates it)"
        )
    missing = check_current(done)
    if missing:
        raise FleetDbError(
            f"the fleet database needs migrations this Helix reads ({', '.join(missing)}):"
            " run `helixctl fleet migrate` (or push from an up-to-date machine) first"
        )

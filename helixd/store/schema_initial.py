"""The store's first migration, ``m001_initial`` (``store/schema.py``'s list): the tables,
indexes and triggers the first Helix created.  A migration that has shipped never changes:
this text is what every store ran first (kept byte for byte)."""

from __future__ import annotations

from typing import Final

INITIAL: Final = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            agent TEXT NOT NULL,
            path TEXT NOT NULL UNIQUE,
            root TEXT NOT NULL,
            dev INTEGER NOT NULL,
            ino INTEGER NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            head_hash BLOB NOT NULL,
            head_len INTEGER NOT NULL,
            generation INTEGER NOT NULL DEFAULT 0,
            adapter_version INTEGER NOT NULL,
            state BLOB NOT NULL,
            session_id INTEGER,
            lines INTEGER NOT NULL DEFAULT 0,
            bad_lines INTEGER NOT NULL DEFAULT 0,
            unknown_records INTEGER NOT NULL DEFAULT 0,
            redactions INTEGER NOT NULL DEFAULT 0,
            raw_bytes INTEGER NOT NULL DEFAULT 0,
            first_seen_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            gone_at INTEGER
        );
        CREATE INDEX files_identity ON files (dev, ino);
        CREATE INDEX files_session ON files (session_id);

        CREATE TABLE raw_blocks (
            id INTEGER PRIMARY KEY,
            file_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL,
            lines INTEGER NOT NULL,
            data BLOB NOT NULL,
            UNIQUE (file_id, generation, start)
        );

        CREATE TABLE bad_lines (
            file_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            length INTEGER NOT NULL,
            reason TEXT NOT NULL,
            PRIMARY KEY (file_id, generation, offset)
        ) WITHOUT ROWID;

        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            agent TEXT NOT NULL,
            native_id TEXT NOT NULL,
            parent_uid TEXT,
            cwd TEXT,
            repo TEXT,
            git_branch TEXT,
            model TEXT,
            title TEXT,
            version TEXT,
            agent_type TEXT,
            started_at INTEGER,
            ended_at INTEGER,
            ended INTEGER NOT NULL DEFAULT 0,
            messages INTEGER NOT NULL DEFAULT 0,
            events INTEGER NOT NULL DEFAULT 0,
            next_seq INTEGER NOT NULL DEFAULT 0,
            adapter_version INTEGER,
            source_path TEXT,
            discovered_at INTEGER NOT NULL,
            ingested_at INTEGER,
            changed_at INTEGER,
            analyzed_at INTEGER,
            evicted_at INTEGER
        );
        CREATE INDEX sessions_native ON sessions (native_id);
        CREATE INDEX sessions_parent ON sessions (parent_uid);
        CREATE INDEX sessions_started ON sessions (started_at);

        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            parent_seq INTEGER,
            ekey INTEGER NOT NULL,
            akey INTEGER,
            ts INTEGER,
            kind TEXT NOT NULL,
            role TEXT,
            tool TEXT,
            call_id TEXT,
            summary TEXT NOT NULL,
            body TEXT,
            tokens INTEGER NOT NULL DEFAULT 0,
            is_error INTEGER NOT NULL DEFAULT 0,
            is_sidechain INTEGER NOT NULL DEFAULT 0,
            payload_bytes INTEGER NOT NULL DEFAULT 0,
            file_id INTEGER,
            offset INTEGER,
            UNIQUE (session_id, ekey)
        );
        CREATE INDEX events_seq ON events (session_id, seq);
        CREATE INDEX events_anchor ON events (session_id, akey);

        CREATE TABLE usage (
            key INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL,
            rank TEXT NOT NULL,
            ts INTEGER,
            model TEXT NOT NULL,
            input INTEGER NOT NULL,
            output INTEGER NOT NULL,
            cache_read INTEGER NOT NULL,
            cache_write_5m INTEGER NOT NULL,
            cache_write_1h INTEGER NOT NULL,
            reasoning INTEGER NOT NULL
        );
        CREATE INDEX usage_session ON usage (session_id);
        -- A response's credit moving to an earlier-ranked session changes the session that
        -- lost it too: its digest must be rebuilt.
        CREATE TRIGGER usage_credit_moved AFTER UPDATE OF session_id ON usage
        WHEN OLD.session_id != NEW.session_id
        BEGIN
            UPDATE sessions
            SET changed_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
            WHERE id = OLD.session_id;
        END;
        CREATE INDEX usage_ts ON usage (ts);

        CREATE TABLE digests (
            session_id INTEGER PRIMARY KEY,
            schema_version INTEGER NOT NULL,
            built_at INTEGER NOT NULL,
            provisional INTEGER NOT NULL,
            json BLOB NOT NULL
        );
        CREATE INDEX digests_provisional ON digests (session_id) WHERE provisional = 1;
        """

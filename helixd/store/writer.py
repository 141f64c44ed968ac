"""The write path: one ingest batch (records + cursor) in one ``BEGIN IMMEDIATE`` transaction.

Idempotence comes from natural keys, not from offsets: an event is unique per
(session, hash of its adapter key), a usage fact per hash of its dedup key, a raw block per
(file, generation, start offset).  Replaying a batch after a crash, re-reading a truncated
or replaced file from 0, or meeting a resumed session's replayed prefix therefore adds
nothing twice.  ``seq`` is assigned here, in arrival order, and ``parent_seq`` is resolved
from the adapter's parent key (the turn DAG).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from helixd.core.records import BadLine, Cursor, SessionInfo, UsageFact
from helixd.store.batch import MESSAGE_KINDS, Batch, Prepared, batch_owner, merge_infos, record_uids
from helixd.store.faults import rollback
from helixd.store.keys import IN_CHUNK
from helixd.store.search_write import SearchIndexWriter
from helixd.store.usage_write import UsageWriter
from helixd.store.write_sql import (
    ADD_EVENT_TOTALS,
    BODY_AT,
    COUNT_EVENT_TOTALS,
    FILE_COUNTS,
    FILE_CURSOR,
    FILE_PART,
    ID_FLOOR_KEY,
    INSERT_EVENT,
    SUMMARY_AT,
    UPDATE_EVENT,
    UPSERT_SESSION,
    bind_none_directly,
    cursor_values,
    file_counts,
    repo_of,
)

T = TypeVar("T")


class Writer:
    """Owns the write statements.  Synchronous: every method runs on the store
    connection's own thread (``Store.run``), so a whole batch costs one hop from the event
    loop and the loop never waits for a statement.  One writer per store."""

    def __init__(self, con: sqlite3.Connection) -> None:
        bind_none_directly()  # ~6 NULLs per event row: the adapter look-up's fast path
        self.con = con
        self.usage = UsageWriter(con)
        self.search = SearchIndexWriter(con)
        self.next_id = 0
        self.first_id = 0
        self.parents: dict[int, str | None] = {}  # of the sessions upserted in this transaction
        # ``next_seq`` of the sessions the last ``upsert_sessions`` returned, each taken once
        # by the event insert that follows it (no second look-up of the row just written)
        self.seq_hint: dict[int, int] = {}
        self.refused_lines = 0  # lines quarantined because the store refused a value of theirs

        # The sessions the open transaction touched: uid -> whether they got their first
        # events in it (what ``Store`` publishes after the commit).
        self.changes: dict[str, bool] = {}

    def begin(self) -> None:
        self.con.execute("BEGIN IMMEDIATE")
        self.parents.clear()
        self.seq_hint = {}
        self.changes = {}
        row = self.con.execute(
            "SELECT max(coalesce((SELECT max(id) FROM events), 0),"
            " coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?), 0))",
            (ID_FLOOR_KEY,),
        ).fetchone()
        self.next_id = int(row[0]) + 1
        self.first_id = self.next_id

    def commit_transaction(self) -> None:
        if self.next_id != self.first_id:
            self.con.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (ID_FLOOR_KEY, str(self.next_id - 1)),
            )
        self.search.flush()  # the transaction's full-text entries, last: one FTS5 segment
        self.con.execute("COMMIT")

    def commit(self, batch: Batch, now: int) -> int:
        return self.commit_many([batch], now)[0]

    def commit_many(self, batches: Sequence[Batch], now: int) -> list[int]:
        """Several batches (each with its cursor) in one transaction: many small files cost
        one commit, and a crash still leaves each batch's records and cursor together.

        Should the store refuse a value, the transaction is rolled back and written again
        with each batch in a savepoint, the records it refuses quarantined
        (``salvage.write_batch_total``); savepoints cost every page written twice, so the
        first try goes without.  The second try writes the full-text entries as it goes
        rather than at the end (``SearchIndexWriter.hold``), so that a text the index
        refuses is met inside its line's savepoint and quarantines that line only."""
        from helixd.store.salvage import refused_value, write_batch_total

        try:
            return self.transaction(lambda: [self.write_batch(batch, now) for batch in batches])
        except Exception as exc:
            if not refused_value(exc):
                raise
        self.search.hold = False
        try:
            return self.transaction(lambda: [write_batch_total(self, b, now) for b in batches])
        finally:
            self.search.hold = True

    def commit_run(self, batches: Sequence[Batch], now: int) -> list[int]:
        """A live run's batches in one transaction, each statement once for the whole run
        (``helixd.store.runwrite``); a run it does not fit (a new file, bad lines …), or one
        the store refuses a value of, goes batch by batch (``commit_many``)."""
        from helixd.store.runwrite import fits, write_run
        from helixd.store.salvage import refused_value

        if len(batches) > 1 and fits(batches):
            try:
                return self.transaction(lambda: write_run(self, batches, now))
            except Exception as exc:
                if not refused_value(exc):
                    raise
        return self.commit_many(batches, now)

    def transaction(self, work: Callable[[], T]) -> T:
        """``work()`` in one ``BEGIN IMMEDIATE`` transaction, rolled back whole if it raises."""
        self.begin()
        try:
            result = work()
            self.commit_transaction()
        except BaseException:
            rollback(self.con)  # never hides the error (SQLite may have rolled back already)
            self.usage.forget()  # session ids created in the transaction can come again
            self.search.discard()
            raise
        return result

    def write_batch(self, batch: Batch, now: int) -> int:
        """Records, raw bytes, bad lines and cursor of one batch (inside a transaction)."""
        c, p = batch.cursor, batch.parsed
        batch.prepare()
        assert batch.rows is not None
        # A known file's cursor is written with its counters, in one statement at the end
        # (``write_file_part``); a new file is inserted first, for its id.
        known = c.file_id is not None and not batch.replay
        file_id = c.file_id if known else self.upsert_file(c, now, batch.replay)
        assert file_id is not None
        own_uid = batch_owner(batch.rows, p.usage)
        ids = self.upsert_sessions(p.sessions, record_uids(batch.rows, p.usage), c, own_uid, now)
        self.write_records(batch.rows, p.usage, ids, file_id, now, batch.replace_events)
        self.write_file_part(
            batch,
            file_id,
            ids.get(own_uid) if own_uid else None,
            p.bad,
            now,
            cursor=c if known else None,
        )
        return file_id

    def write_records(
        self,
        rows: Sequence[Prepared],
        usage: Sequence[UsageFact],
        ids: dict[str, int],
        file_id: int,
        now: int,
        replace: bool,
    ) -> None:
        """Events (prepared rows) and usage facts; a session whose usage changed has its
        parent's digest rebuilt too (the parent's shows its subagents' spend)."""
        self._insert_events(rows, ids, file_id, now, replace)
        if usage:
            self.mark_parents_changed(self.usage.write(usage, ids), now)

    def mark_parents_changed(self, session_ids: Iterable[int], now: int) -> None:
        """The parents of these sessions (their digests list their children and roll up
        the children's spend) are to be analyzed again.  The parents of the sessions this
        transaction upserted are known; others (a fact's credit moved away) are looked up."""
        parents = self.parents
        known = {parents[i] for i in session_ids if parents.get(i)}
        unknown = [i for i in session_ids if i not in parents]
        if known:
            marks = ",".join("?" * len(known))
            self.con.execute(
                f"UPDATE sessions SET changed_at = ? WHERE uid IN ({marks})", (now, *known)
            )
        for i in range(0, len(unknown), IN_CHUNK):
            part = unknown[i : i + IN_CHUNK]
            self.con.execute(
                "UPDATE sessions SET changed_at = ? WHERE uid IN (SELECT parent_uid FROM"
                f" sessions WHERE id IN ({','.join('?' * len(part))}) AND parent_uid IS NOT NULL)",
                (now, *part),
            )

    def write_file_part(
        self,
        batch: Batch,
        file_id: int,
        session_id: int | None,
        bad: Sequence[BadLine],
        now: int,
        cursor: Cursor | None = None,
    ) -> None:
        """What a batch stores about its file: raw bytes, bad lines, counters, and, when
        ``cursor`` is given, the file's cursor in the same statement (``upsert_file`` not
        called for it: one ``UPDATE files`` per batch instead of two)."""
        c, p = batch.cursor, batch.parsed
        if batch.replace_events and batch.start == 0 and c.generation > 0 and not batch.replay:
            # A file rewritten whole: the new copy supersedes the older generations, and the
            # file's counters start again from it (as a first read of this copy would).
            for sql in (
                "DELETE FROM raw_blocks WHERE file_id = ? AND generation < ?",
                "DELETE FROM bad_lines WHERE file_id = ? AND generation < ?",
            ):
                self.con.execute(sql, (file_id, c.generation))
            self.con.execute(
                "UPDATE files SET raw_bytes = 0, lines = 0, bad_lines = 0, unknown_records = 0,"
                " redactions = 0 WHERE id = ?",
                (file_id,),
            )
        stored = 0
        if batch.raw_z is not None:
            added = self.con.execute(
                "INSERT OR IGNORE INTO raw_blocks (file_id, generation, start, end, lines, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (file_id, c.generation, batch.start, c.offset, p.lines, batch.raw_z),
            )
            stored = len(batch.raw_z) if added.rowcount == 1 else 0  # a block held already
        if bad:
            self.con.executemany(
                "INSERT OR IGNORE INTO bad_lines (file_id, generation, offset, length, reason)"
                " VALUES (?, ?, ?, ?, ?)",
                [(file_id, c.generation, b.offset, b.length, b.reason[:500]) for b in bad],
            )
            if session_id is None:  # bad lines only: the file's session counts them anew
                self.con.execute(
                    "UPDATE sessions SET changed_at = ? WHERE id ="
                    " (SELECT session_id FROM files WHERE id = ?)",
                    (now, file_id),
                )
        counts = file_counts(batch, stored, session_id, len(bad))
        if cursor is None:
            self.con.execute(FILE_COUNTS + " WHERE id = ?", (*counts, file_id))
        else:
            self.con.execute(FILE_PART, (*counts, *cursor_values(cursor, now), file_id))

    def upsert_file(self, c: Cursor, now: int, replay: bool = False) -> int:
        params = cursor_values(c, now)
        if c.file_id is not None:
            self.con.execute(
                "UPDATE files SET "
                + FILE_CURSOR
                + ("" if replay else ", gone_at=NULL")
                + " WHERE id=?",
                (*params, c.file_id),
            )
            return c.file_id
        row = self.con.execute(
            "INSERT INTO files (agent, path, root, dev, ino, size, mtime_ns, offset, head_hash,"
            " head_len, generation, adapter_version, state, updated_at, first_seen_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (path) DO UPDATE SET agent=excluded.agent, root=excluded.root,"
            " dev=excluded.dev, ino=excluded.ino, size=excluded.size,"
            " mtime_ns=excluded.mtime_ns, offset=excluded.offset, head_hash=excluded.head_hash,"
            " head_len=excluded.head_len, generation=excluded.generation,"
            " adapter_version=excluded.adapter_version, state=excluded.state,"
            " updated_at=excluded.updated_at, gone_at=NULL RETURNING id",
            (*params, now),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def upsert_sessions(
        self,
        infos: Sequence[SessionInfo],
        uids: Iterable[str],
        c: Cursor,
        own_uid: str | None,
        now: int,
    ) -> dict[str, int]:
        """Merge ``infos`` into the sessions (and create the sessions of ``uids`` that records
        name without facts); ``{uid: id}``."""
        merged = merge_infos(infos)
        for uid in uids:
            merged.setdefault(
                uid, {"uid": uid, "agent": c.agent, "native_id": uid.partition(":")[2]}
            )
        ids: dict[str, int] = {}
        self.seq_hint = {}
        for uid, row in merged.items():
            cwd = row.get("cwd")
            params = {
                "parent_uid": None,
                "cwd": None,
                "git_branch": None,
                "git_commit": None,
                "model": None,
                "title": None,
                "version": None,
                "agent_type": None,
                "first_ts": None,
                "last_ts": None,
                "ended": 0,
                **row,
                "repo": repo_of(cwd),
                "adapter_version": c.adapter_version if uid == own_uid else None,
                "source_path": c.path if uid == own_uid else None,
                "now": now,
            }
            found = self.con.execute(UPSERT_SESSION, params).fetchone()
            assert found is not None
            ids[uid] = int(found[0])
            self.parents[ids[uid]] = found[2]
            self.seq_hint[ids[uid]] = int(found[1])
            self.changes.setdefault(uid, False)
        return ids

    def _existing(self, session_id: int, column: str, keys: Sequence[int]) -> dict[int, int]:
        """``{key: seq}`` of the session's events whose ``column`` (ekey or akey) is in
        ``keys`` (the earliest event for an anchor)."""
        found: dict[int, int] = {}
        unique = list(set(keys))
        for i in range(0, len(unique), IN_CHUNK):
            part = unique[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            rows = self.con.execute(
                f"SELECT {column}, min(seq) FROM events WHERE session_id = ?"
                f" AND {column} IN ({marks}) GROUP BY {column}",
                (session_id, *part),
            ).fetchall()
            found.update({int(k): int(s) for k, s in rows})
        return found

    def _next_seq(self, session_id: int) -> int:
        hint = self.seq_hint.pop(session_id, None)
        if hint is not None:
            return hint
        row = self.con.execute(
            "SELECT next_seq FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _insert_events(
        self, rows: Sequence[Prepared], ids: dict[str, int], file_id: int, now: int, replace: bool
    ) -> None:
        by_session: dict[int, list[Prepared]] = defaultdict(list)
        for row in rows:
            by_session[ids[row[0]]].append(row)
        for session_id, items in by_session.items():
            if self._insert_session_events(session_id, items, file_id, now, replace):
                self.changes[items[0][0]] = True

    def _insert_session_events(
        self, session_id: int, items: Sequence[Prepared], file_id: int, now: int, replace: bool
    ) -> bool:
        """New events get the next ``seq``; a key already stored is skipped (or, for files
        rewritten whole, its content is replaced and its ``seq`` kept).  True when these are
        the session's first events."""
        next_seq = self._next_seq(session_id)
        if next_seq:
            seen = self._existing(session_id, "ekey", [it[1] for it in items])
            found_anchors = self._existing(
                session_id, "akey", [it[3] for it in items if it[3] is not None]
            )
        else:  # a session without events yet: nothing to look up
            seen, found_anchors = {}, {}
        rows: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        docs: list[tuple[int, str, str, int | None]] = []  # (seq, text, kind, ts)
        doc_ids: dict[int, int] = {}  # seq -> the id given to the event
        redocs: dict[int, tuple[str, str, int | None]] = {}  # ekey -> (text, kind, ts)
        first_seq = next_seq
        messages = 0
        done: set[int] = set()
        for _uid, key, anchor, parent, content, text, kind, ts in items:
            if key in seen:
                if replace and key not in done:
                    updates.append((*content, file_id, session_id, key))
                    redocs[key] = (text, kind, ts)
                done.add(key)
                continue
            if text:
                docs.append((next_seq, text, kind, ts))
                doc_ids[next_seq] = self.next_id
            done.add(key)
            seen[key] = seq = next_seq
            next_seq += 1
            found_anchors.setdefault(anchor, seq)
            parent_seq = found_anchors.get(parent) if parent is not None else None
            rows.append((self.next_id, session_id, seq, parent_seq, key, anchor, file_id, *content))
            self.next_id += 1
            messages += kind in MESSAGE_KINDS
        stored_all = True
        if rows:
            stored_all = self.con.executemany(INSERT_EVENT, rows).rowcount == len(rows)
            self.count_events(rows, stored_all)
        if updates:
            self.search.unindex(session_id, list(redocs))
            self.con.executemany(UPDATE_EVENT, updates)
        if docs or redocs:
            # every row stored: the ids given are the events' ids (else they are looked up)
            self.search.index(session_id, first_seq, docs, redocs, doc_ids if stored_all else None)
        self.con.execute(
            "UPDATE sessions SET next_seq = ?, events = events + ?, messages = messages + ?,"
            " changed_at = ? WHERE id = ?",
            (next_seq, len(rows), messages, now, session_id),
        )
        return first_seq == 0 and bool(rows)

    def count_events(self, rows: Sequence[tuple[Any, ...]], stored_all: bool) -> None:
        """Add the rows just inserted to the events' running totals (``event_totals``, what
        ``status`` and the retention budgets read): one statement per session's rows of a
        batch, where m014's insert trigger ran one per event (m027 dropped it: −8 % of the
        store thread's SQL in a first ingest, docs/performance.md).  The UTF-8 bytes of
        summary and body are counted here when every row went in as a string, else summed
        by SQLite from the stored rows of the ids given (an ignored row's id is never
        used)."""
        size = 0
        for row in rows if stored_all else ():
            for text in (row[SUMMARY_AT], row[BODY_AT]):
                if type(text) is str:  # UTF-8 bytes; an ASCII string's length, no scan
                    size += len(text) if text.isascii() else len(text.encode())
                elif text is not None:  # not a string: SQLite's own text of it
                    stored_all = False
        if stored_all:
            self.con.execute(ADD_EVENT_TOTALS, (len(rows), size))
        else:
            self.con.execute(COUNT_EVENT_TOTALS, (rows[0][0], rows[-1][0]))

    def take_changes(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(new, updated)`` session uids of the last transaction."""
        new = tuple(u for u, first in self.changes.items() if first)
        return new, tuple(u for u, first in self.changes.items() if not first)

    def uids_of(self, session_ids: Sequence[int]) -> tuple[str, ...]:
        out: list[str] = []
        for i in range(0, len(session_ids), IN_CHUNK):
            part = list(session_ids[i : i + IN_CHUNK])
            out.extend(
                r[0]
                for r in self.con.execute(
                    f"SELECT uid FROM sessions WHERE id IN ({','.join('?' * len(part))})", part
                )
            )
        return tuple(out)

    def mark_ended(self, uid: str, now: int) -> bool:
        """A session-end signal (hook ping, an agent's own end record): close the session."""
        cur = self.con.execute(
            "UPDATE sessions SET ended = 1, changed_at = ? WHERE uid = ? AND ended = 0", (now, uid)
        )
        return cur.rowcount > 0

    def mark_gone(self, path: str, now: int) -> bool:
        return (
            self.con.execute(
                "UPDATE files SET gone_at = ? WHERE path = ? AND gone_at IS NULL", (now, path)
            ).rowcount
            > 0
        )

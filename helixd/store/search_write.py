"""Keeping the full-text index in step with the events, in the writer's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from helixd.store.keys import IN_CHUNK

# Event kinds whose text goes into the full-text index (``search``; migration m003_search
# backfills with the same rule in SQL).
SEARCH_KINDS: Final = frozenset(
    {
        "user_msg",
        "assistant_msg",
        "thinking",
        "tool_call",
        "edit",
        "test_run",
        "error",
        "human_intervention",
    }
)


def search_doc(kind: str, summary: str, body: str | None, extra: str = "") -> str:
    """The text indexed for one event: index-only text (thinking) first, else the body,
    else the summary; a tool call indexes its description (tool, path) and its command."""
    if kind not in SEARCH_KINDS:
        return ""
    if kind == "tool_call":
        return "\n".join(p for p in (summary, body) if p)
    return extra or body or summary


class SearchIndexWriter:
    """Adds and removes the index entries of events (rowid = the event's id).

    The text of new entries is held back (``pending``) and written to the FTS5 table in one
    statement at the end of the writer's transaction (``flush``, called by the writer right
    before ``COMMIT``), and so are their ``search_docs`` rows (``pending_docs``, the same
    entries in the same order): one statement per transaction rather than one per file and
    session (a live run writes a few events for each of hundreds of files).  FTS5 keeps
    the terms of a transaction in memory and writes them out as a new segment whenever a
    statement opens a statement journal (any later statement with a trigger or an ``ON
    CONFLICT``: the session counters, the usage upserts), so interleaving the inserts with
    the other rows wrote one small segment per session and batch, and as many merges
    later.  Held back, a transaction writes one segment.  A deletion (``unindex``,
    ``forget_sessions``) writes what is pending first, so that it finds the pending
    entries' rows and the index sees its commands in order; a rolled-back transaction or
    savepoint drops what it added (``discard``).  With ``hold`` off (the writer's salvage
    pass), entries are written at once, so a text the index refuses fails inside the
    savepoint of its line."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con
        self.pending: list[tuple[int, str]] = []  # (rowid, text) not written to FTS5 yet
        # their search_docs rows (id, session_id, kind, ts), one per entry of ``pending``
        self.pending_docs: list[tuple[int, int, str, int | None]] = []
        self.hold = True

    def flush(self) -> None:
        """Write the pending entries (in the open transaction)."""
        if self.pending_docs:
            self.con.executemany(
                "INSERT OR REPLACE INTO search_docs (id, session_id, kind, ts) VALUES (?, ?, ?, ?)",
                self.pending_docs,
            )
            self.pending_docs = []
        if self.pending:
            self.con.executemany("INSERT INTO search (rowid, text) VALUES (?, ?)", self.pending)
            self.pending = []

    def discard(self, keep: int = 0) -> None:
        """Forget the pending entries after the first ``keep`` (their rows were rolled back)."""
        del self.pending[keep:]
        del self.pending_docs[keep:]

    def index(
        self,
        session_id: int,
        first_seq: int,
        docs: Sequence[tuple[int, str, str, int | None]],
        redocs: dict[int, tuple[str, str, int | None]],
        ids: dict[int, int] | None = None,
    ) -> None:
        """Add the new (and rewritten) events' text to the full-text index, in the same
        transaction as the rows: rowid = the event's id.  ``docs`` name new events by
        ``seq``; ``ids`` (``{seq: id}``) when the caller knows every one was stored, else
        they are looked up."""
        found: list[tuple[int, str, str, int | None]] = []
        if docs:
            if ids is None:
                ids = dict(
                    self.con.execute(
                        "SELECT seq, id FROM events WHERE session_id = ? AND seq >= ?",
                        (session_id, first_seq),
                    ).fetchall()
                )
            found.extend((ids[seq], text, kind, ts) for seq, text, kind, ts in docs if seq in ids)
        if redocs:
            by_key = self._event_ids(session_id, list(redocs))
            found.extend(
                (by_key[k], text, kind, ts)
                for k, (text, kind, ts) in redocs.items()
                if text and k in by_key
            )
        if not found:
            return
        self.pending_docs.extend((i, session_id, kind, ts) for i, _, kind, ts in found)
        self.pending.extend((i, t) for i, t, _, _ in found)
        if not self.hold:
            self.flush()

    def _event_ids(self, session_id: int, keys: Sequence[int]) -> dict[int, int]:
        found: dict[int, int] = {}
        for i in range(0, len(keys), IN_CHUNK):
            part = keys[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            rows = self.con.execute(
                f"SELECT ekey, id FROM events WHERE session_id = ? AND ekey IN ({marks})",
                (session_id, *part),
            ).fetchall()
            found.update({int(k): int(v) for k, v in rows})
        return found

    def unindex(self, session_id: int, keys: Sequence[int]) -> None:
        """Remove the index entries of events about to be rewritten.  A contentless index
        deletes by the exact text it indexed, rebuilt here from the stored row (whole-file
        adapters set no index-only text).  A row whose body was evicted cannot be rebuilt:
        its old entry stays (it still points at the same event)."""
        self.flush()  # the entries pending must be in search_docs to be found and removed
        evicted = self.con.execute(
            "SELECT evicted_at IS NOT NULL FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if evicted and evicted[0]:
            return
        for i in range(0, len(keys), IN_CHUNK):
            part = keys[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            rows = self.con.execute(
                "SELECT e.id, e.kind, e.summary, e.body FROM events e"
                " JOIN search_docs d ON d.id = e.id"
                f" WHERE e.session_id = ? AND e.ekey IN ({marks})",
                (session_id, *part),
            ).fetchall()
            self._delete(rows)
            self.con.executemany("DELETE FROM search_docs WHERE id = ?", [(r[0],) for r in rows])

    def forget_sessions(self, session_ids: Sequence[int]) -> None:
        """Remove every index entry of these sessions' events (re-normalization rebuilds
        them).  A thinking block's text was index-only, so it cannot be deleted by text:
        its entry is left unreachable (its ``search_docs`` row goes, and event ids are never
        reused)."""
        self.flush()  # the entries pending must be in search_docs to be found and removed
        for sid in session_ids:
            rows = self.con.execute(
                "SELECT e.id, e.kind, e.summary, e.body FROM events e"
                " JOIN search_docs d ON d.id = e.id WHERE e.session_id = ?",
                (sid,),
            ).fetchall()
            self._delete([r for r in rows if r[1] != "thinking"])
        self.con.executemany(
            "DELETE FROM search_docs WHERE session_id = ?", [(i,) for i in session_ids]
        )

    def _delete(self, rows: Sequence[tuple[int, str, str, str | None]]) -> None:
        """A contentless index deletes an entry by the exact text it indexed, rebuilt here
        from the event row ``(id, kind, summary, body)``."""
        self.flush()  # an entry still pending must exist before its deletion
        self.con.executemany(
            "INSERT INTO search (search, rowid, text) VALUES ('delete', ?, ?)",
            [(i, t) for i, k, s, b in rows if (t := search_doc(k, s, b))],
        )

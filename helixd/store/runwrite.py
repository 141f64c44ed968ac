"""A live run's batches written statement by statement for the whole run rather than file by
file (``Writer.commit_run``).

The daemon reads every changed file of a wake-up in one ingest run, a few new lines each.
Written batch by batch (``Writer.write_batch``), each file cost eight statements whatever
its size — the sessions upsert, two key look-ups, the event rows, the raw block, the
session counters, the file's counters and cursor — so at a few lines a file the per-file
statements cost more than the rows.  Here each is one statement (or one ``executemany``)
for all the run's files, in this order:

1. the sessions of every batch upserted in one multi-row statement (``RETURNING`` their
   ids, ``next_seq`` and parents);
2. the keys of the events of the sessions that already had events looked up in one
   statement per key column (a join on the run's ``(session, key)`` pairs);
3. ``seq`` and ``parent_seq`` assigned batch by batch, in order, in memory: a session
   read twice in a run (two batches of one file, two files of one session) continues
   where its previous batch ended, exactly as a look-up after that batch's rows would;
4. the event rows (one ``executemany``), the full-text entries, the usage facts (one
   write for the run), the session counters (one ``executemany``), the raw blocks (one
   multi-row statement ``RETURNING`` the blocks it stored), the files' counters and
   cursors (one ``executemany``).

All in the caller's one transaction: records and every file's cursor commit together.
Only batches of known files with nothing unusual take this path (``fits``): a new file
(it needs its id first), a file rewritten whole, a re-normalization replay, bad lines —
the whole run then goes batch by batch as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from helixd.store.batch import MESSAGE_KINDS, Batch, Prepared, batch_owner, merge_infos, record_uids
from helixd.store.write_sql import (
    FILE_PART,
    INSERT_EVENT,
    SESSION_VALUES,
    file_part_values,
    session_values,
    upsert_sessions_sql,
)
from helixd.store.writer import Writer

PAIRS_PER_STATEMENT: Final = 2_000  # (session, key) pairs per look-up (4 000 variables)
ROWS_PER_STATEMENT: Final = 500  # multi-row statements: sessions (20 values), blocks (6)


def fits(batches: Sequence[Batch]) -> bool:
    """Whether every batch can be written by ``write_run``: a known file's plain append."""
    return all(
        b.cursor.file_id is not None and not b.replay and not b.replace_events and not b.parsed.bad
        for b in batches
    )


@dataclass(slots=True)
class _Session:
    """One session's state through the run: the next ``seq`` to give, the keys stored (from
    the store, then as given), the anchors' earliest ``seq``."""

    uid: str
    next_seq: int
    first_seq: int
    seen: dict[int, int] = field(default_factory=dict)
    anchors: dict[int, int] = field(default_factory=dict)
    rows: int = 0
    messages: int = 0


def write_run(w: Writer, batches: Sequence[Batch], now: int) -> list[int]:
    """Write ``batches`` (``fits``) inside the open transaction; their files' ids."""
    for batch in batches:
        batch.prepare()
    owners = [batch_owner(b.rows or (), b.parsed.usage) for b in batches]
    ids, sessions = _upsert_sessions(w, batches, owners, now)
    _look_up_keys(w, batches, ids, sessions)
    rows: list[tuple[Any, ...]] = []
    docs: list[tuple[int, int, list[tuple[int, str, str, int | None]], dict[int, int]]] = []
    for batch in batches:
        file_id = batch.cursor.file_id
        assert batch.rows is not None and file_id is not None
        _assign(w, batch.rows, ids, sessions, file_id, rows, docs)
    stored_all = True
    if rows:
        stored_all = w.con.executemany(INSERT_EVENT, rows).rowcount == len(rows)
        w.count_events(rows, stored_all)
    for session_id, first_seq, texts, doc_ids in docs:
        w.search.index(session_id, first_seq, texts, {}, doc_ids if stored_all else None)
    _write_usage(w, batches, ids, now)
    counted = [(s.next_seq, s.rows, s.messages, now, sid) for sid, s in sessions.items() if s.rows]
    if counted:
        w.con.executemany(
            "UPDATE sessions SET next_seq = ?, events = events + ?, messages = messages + ?,"
            " changed_at = ? WHERE id = ?",
            counted,
        )
    for s in sessions.values():
        if s.rows and s.first_seq == 0:
            w.changes[s.uid] = True
    stored = _insert_raw_blocks(w, batches)
    w.con.executemany(
        FILE_PART,
        [
            file_part_values(b, stored.get(i, 0), ids.get(own) if own else None, now)
            for i, (b, own) in enumerate(zip(batches, owners, strict=True))
        ],
    )
    return [int(b.cursor.file_id or 0) for b in batches]


def _upsert_sessions(
    w: Writer, batches: Sequence[Batch], owners: Sequence[str | None], now: int
) -> tuple[dict[str, int], dict[int, _Session]]:
    """Every batch's sessions, in batch order, in one multi-row upsert (a session named by
    two batches is merged in turn, as two upserts would); ``({uid: id}, {id: state})``."""
    params: list[Any] = []
    for batch, own in zip(batches, owners, strict=True):
        assert batch.rows is not None
        merged = merge_infos(batch.parsed.sessions)
        for uid in record_uids(batch.rows, batch.parsed.usage):
            merged.setdefault(
                uid, {"uid": uid, "agent": batch.cursor.agent, "native_id": uid.partition(":")[2]}
            )
        for uid, row in merged.items():
            params.extend(session_values(row, batch.cursor, uid == own, now))
    ids: dict[str, int] = {}
    sessions: dict[int, _Session] = {}
    step = ROWS_PER_STATEMENT * SESSION_VALUES
    for i in range(0, len(params), step):
        part = params[i : i + step]
        for uid, sid, next_seq, parent in w.con.execute(
            upsert_sessions_sql(len(part) // SESSION_VALUES), part
        ).fetchall():
            ids[uid] = sid = int(sid)
            w.parents[sid] = parent
            w.changes.setdefault(uid, False)
            if sid not in sessions:
                sessions[sid] = _Session(uid, int(next_seq), int(next_seq))
    return ids, sessions


def _look_up_keys(
    w: Writer, batches: Sequence[Batch], ids: dict[str, int], sessions: dict[int, _Session]
) -> None:
    """The stored events' keys (``seen``) and parents' anchors of the sessions that had
    events before the run, for every event of the run: two statements, not two a file."""
    keys: set[tuple[int, int]] = set()
    parents: set[tuple[int, int]] = set()
    for batch in batches:
        assert batch.rows is not None
        for uid, key, _anchor, parent, *_ in batch.rows:
            sid = ids[uid]
            if sessions[sid].first_seq:
                keys.add((sid, key))
                if parent is not None:
                    parents.add((sid, parent))
    for column, pairs, into in (("ekey", keys, "seen"), ("akey", parents, "anchors")):
        found = list(pairs)
        for i in range(0, len(found), PAIRS_PER_STATEMENT):
            part = found[i : i + PAIRS_PER_STATEMENT]
            for sid, key, seq in w.con.execute(
                _look_up_sql(column, len(part)), [v for pair in part for v in pair]
            ):
                getattr(sessions[sid], into)[key] = seq


def _look_up_sql(column: str, n: int) -> str:
    # The pairs drive the join (CROSS JOIN: the planner otherwise may build an automatic
    # index over the whole events table for a few hundred pairs), one index search each.
    index = " INDEXED BY events_anchor" if column == "akey" else ""
    return (
        f"SELECT e.session_id, e.{column}, min(e.seq) FROM"
        f" (VALUES {','.join(['(?,?)'] * n)}) AS k CROSS JOIN events AS e{index}"
        f" ON e.session_id = k.column1 AND e.{column} = k.column2 GROUP BY 1, 2"
    )


def _assign(
    w: Writer,
    items: Sequence[Prepared],
    ids: dict[str, int],
    sessions: dict[int, _Session],
    file_id: int,
    rows: list[tuple[Any, ...]],
    docs: list[tuple[int, int, list[tuple[int, str, str, int | None]], dict[int, int]]],
) -> None:
    """One batch's new events get their session's next ``seq`` (a key stored already is
    skipped) and their parent's; the rows go to ``rows``, the texts to ``docs``."""
    texts: dict[int, tuple[int, list[tuple[int, str, str, int | None]], dict[int, int]]] = {}
    for uid, key, anchor, parent, content, text, kind, ts in items:
        sid = ids[uid]
        s = sessions[sid]
        if key in s.seen:
            continue
        seq = s.seen[key] = s.next_seq
        s.next_seq += 1
        s.anchors.setdefault(anchor, seq)
        parent_seq = s.anchors.get(parent) if parent is not None else None
        rows.append((w.next_id, sid, seq, parent_seq, key, anchor, file_id, *content))
        if text:
            entry = texts.get(sid)
            if entry is None:
                entry = texts[sid] = (seq, [], {})
            entry[1].append((seq, text, kind, ts))
            entry[2][seq] = w.next_id
        w.next_id += 1
        s.rows += 1
        s.messages += kind in MESSAGE_KINDS
    docs.extend((sid, first, found, doc_ids) for sid, (first, found, doc_ids) in texts.items())


def _write_usage(w: Writer, batches: Sequence[Batch], ids: dict[str, int], now: int) -> None:
    """The run's usage facts in one ``UsageWriter.write`` (its facts merged by key, its
    summaries rolled up once: the same rows as a write per batch, since merging is the
    upsert's own rule and the roll-up sums what changed).  Facts that replace (in order,
    the last wins) are written batch by batch, as before."""
    facts = [u for b in batches for u in b.parsed.usage]
    if not facts:
        return
    if any(u.replace for u in facts):
        for batch in batches:
            if batch.parsed.usage:
                w.mark_parents_changed(w.usage.write(batch.parsed.usage, ids), now)
        return
    w.mark_parents_changed(w.usage.write(facts, ids), now)


def _insert_raw_blocks(w: Writer, batches: Sequence[Batch]) -> dict[int, int]:
    """The raw blocks, one multi-row statement; ``{batch index: bytes stored}`` (a block
    held already — a replay after a crash — stores nothing)."""
    where: dict[tuple[int, int, int], int] = {}
    params: list[Any] = []
    for i, b in enumerate(batches):
        if b.raw_z is None:
            continue
        c = b.cursor
        where[(int(c.file_id or 0), c.generation, b.start)] = i
        params.extend((c.file_id, c.generation, b.start, c.offset, b.parsed.lines, b.raw_z))
    stored: dict[int, int] = {}
    step = ROWS_PER_STATEMENT * 6
    for i in range(0, len(params), step):
        part = params[i : i + step]
        marks = ",".join(["(?,?,?,?,?,?)"] * (len(part) // 6))
        for file_id, generation, start in w.con.execute(
            "INSERT OR IGNORE INTO raw_blocks (file_id, generation, start, end, lines, data)"
            f" VALUES {marks} RETURNING file_id, generation, start",
            part,
        ).fetchall():
            at = where[(file_id, generation, start)]
            stored[at] = len(batches[at].raw_z or b"")
    return stored

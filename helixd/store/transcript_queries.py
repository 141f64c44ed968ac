"""Read queries behind a transcript: a page of a session's events in order, and the stored
raw lines (zstd blocks) that hold the events' bulky bodies while they are kept."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, Final

EVENT_COLS: Final = (
    "id, seq, parent_seq, ekey, ts, kind, role, tool, call_id, summary, body, tokens,"
    " is_error, is_sidechain, payload_bytes, file_id, offset, lines_added, lines_removed,"
    " status, test_framework, tests_passed, tests_failed, tests_skipped"
)
EVENT_NAMES: Final = tuple(c.strip() for c in EVENT_COLS.split(","))


def event_span(con: sqlite3.Connection, session_id: int) -> tuple[int, int | None, int | None]:
    """``(count, first seq, last seq)`` of a session's stored events."""
    n, lo, hi = con.execute(
        "SELECT count(*), min(seq), max(seq) FROM events WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(n), lo, hi


def events(
    con: sqlite3.Connection,
    session_id: int,
    after: int | None,
    before: int | None,
    limit: int,
    newest: bool,
) -> list[dict[str, Any]]:
    """Up to ``limit`` events with ``after < seq < before``, in seq order; ``newest`` takes
    the last ones of that range (a tail) rather than the first."""
    where = ["session_id = ?"]
    params: list[Any] = [session_id]
    if after is not None:
        where.append("seq > ?")
        params.append(after)
    if before is not None:
        where.append("seq < ?")
        params.append(before)
    order = "DESC" if newest else "ASC"
    rows = con.execute(
        f"SELECT {EVENT_COLS} FROM events WHERE {' AND '.join(where)} ORDER BY seq {order} LIMIT ?",
        [*params, limit],
    ).fetchall()
    if newest:
        rows.reverse()
    return [dict(zip(EVENT_NAMES, r, strict=True)) for r in rows]


def source_file(con: sqlite3.Connection, file_id: int) -> dict[str, Any] | None:
    row = con.execute(
        "SELECT path, root, agent, sidecar, generation FROM files WHERE id = ?", (file_id,)
    ).fetchone()
    if row is None:
        return None
    path, root, agent, sidecar, generation = row
    return {
        "path": path,
        "root": root,
        "agent": agent,
        "sidecar": bytes(sidecar) if sidecar is not None else None,
        "generation": generation,
    }


def raw_blocks_covering(
    con: sqlite3.Connection, file_id: int, offsets: Iterable[int]
) -> list[tuple[int, int, int, int, bytes]]:
    """``(id, generation, start, end, zstd data)`` of the newest stored block holding each
    offset (distinct blocks, in file order)."""
    found: dict[int, tuple[int, int, int, int, bytes]] = {}
    for offset in sorted(set(offsets)):
        if any(b[2] <= offset < b[3] for b in found.values()):
            continue
        row = con.execute(
            "SELECT id, generation, start, end, data FROM raw_blocks"
            " WHERE file_id = ? AND start <= ? AND end > ? ORDER BY generation DESC LIMIT 1",
            (file_id, offset, offset),
        ).fetchone()
        if row is not None:
            found[row[0]] = (row[0], row[1], row[2], row[3], bytes(row[4]))
    return sorted(found.values(), key=lambda b: b[2])


def evict_stage(con: sqlite3.Connection, session_id: int) -> int:
    row = con.execute("SELECT evict_stage FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return int(row[0]) if row else 0

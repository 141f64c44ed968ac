"""Quarantined lines read back: where, why, and the first bytes of each.

A bad line (malformed, refused by a value check, raising in its adapter, or refused by the
store) is counted per file and recorded in ``bad_lines`` (file, generation, offset, length,
reason); its bytes stay in the file's raw block like every other line's.  A session's
digest lists its first ``SHOWN`` bad lines with a preview of those bytes (``helixctl
lookup``); ``helixctl status`` shows the store's latest.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any, Final

SHOWN: Final = 10
PREVIEW_BYTES: Final = 160


def of_sessions(con: sqlite3.Connection, want: str) -> dict[int, list[dict[str, Any]]]:
    """The first bad lines of each session in ``want`` (a SQL list of session ids, e.g.
    ``SELECT id FROM temp.want``), in file and offset order."""
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    blocks: dict[tuple[int, int, int], bytes] = {}
    for sid, file_id, path, generation, offset, length, reason in con.execute(
        "SELECT f.session_id, f.id, f.path, b.generation, b.offset, b.length, b.reason"
        f" FROM bad_lines b JOIN files f ON f.id = b.file_id WHERE f.session_id IN ({want})"
        " ORDER BY f.session_id, f.path, b.generation, b.offset"
    ).fetchall():
        if len(found[sid]) >= SHOWN:
            continue
        raw = _preview(con, blocks, file_id, generation, offset, length)
        found[sid].append(
            {"path": path, "offset": offset, "length": length, "reason": reason, "raw": raw}
        )
    return dict(found)


def _preview(
    con: sqlite3.Connection,
    blocks: dict[tuple[int, int, int], bytes],
    file_id: int,
    generation: int,
    offset: int,
    length: int,
) -> str | None:
    """The line's first bytes from the raw block holding it (None once evicted)."""
    row = con.execute(
        "SELECT start, end, data FROM raw_blocks WHERE file_id = ? AND generation = ?"
        " AND start <= ? ORDER BY start DESC LIMIT 1",
        (file_id, generation, offset),
    ).fetchone()
    if row is None or offset >= row[1]:
        return None
    key = (file_id, generation, int(row[0]))
    if key not in blocks:
        import zstandard  # here: `status` reads this module's counts, never a raw block

        try:
            blocks[key] = zstandard.ZstdDecompressor().decompress(
                row[2], max_output_size=max(int(row[1]) - int(row[0]), 1) + 1
            )
        except zstandard.ZstdError:
            return None
    at = offset - key[2]
    piece = blocks[key][at : at + min(length or PREVIEW_BYTES, PREVIEW_BYTES)]
    return piece.decode("utf-8", "replace")


LATEST_SQL: Final = (
    "SELECT f.agent, f.path, b.offset, b.length, b.reason FROM bad_lines b"
    " JOIN files f ON f.id = b.file_id ORDER BY f.updated_at DESC, b.offset DESC LIMIT ?"
)
BY_AGENT_SQL: Final = (
    "SELECT agent, sum(bad_lines) FROM files GROUP BY agent HAVING sum(bad_lines) > 0"
)

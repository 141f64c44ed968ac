"""A comparable picture of a store's content (no wall-clock timestamps), for idempotence
and crash tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import zstandard


def snapshot(db: Path) -> dict[str, Any]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = con.execute
        sessions = q("SELECT id, uid FROM sessions").fetchall()
        uid = dict(sessions)
        out: dict[str, Any] = {
            "sessions": sorted(
                q(
                    "SELECT uid, agent, native_id, parent_uid, cwd, repo, git_branch, model, title,"
                    " version, agent_type, started_at, ended_at, messages, events, next_seq"
                    " FROM sessions"
                ).fetchall()
            ),
            "events": sorted(
                (uid[r[0]], *r[1:])
                for r in q(
                    "SELECT session_id, seq, parent_seq, ekey, ts, kind, role, tool, call_id,"
                    " summary, body, tokens, is_error, is_sidechain, payload_bytes, offset"
                    " FROM events"
                )
            ),
            "usage": sorted(
                (r[0], uid[r[1]], *r[2:])
                for r in q(
                    "SELECT key, session_id, rank, ts, model, input, output, cache_read,"
                    " cache_write_5m, cache_write_1h, reasoning FROM usage"
                )
            ),
            "files": sorted(
                q(
                    "SELECT path, offset, generation, lines, bad_lines, unknown_records, redactions"
                    " FROM files"
                )
            ),
            "bad_lines": sorted(
                q(
                    "SELECT f.path, b.generation, b.offset, b.length, b.reason"
                    " FROM bad_lines b JOIN files f ON f.id = b.file_id"
                )
            ),
        }
        raw: dict[tuple[str, int], bytes] = {}
        dctx = zstandard.ZstdDecompressor()
        for path, gen, _start, data in q(
            "SELECT f.path, r.generation, r.start, r.data FROM raw_blocks r"
            " JOIN files f ON f.id = r.file_id ORDER BY f.path, r.generation, r.start"
        ):
            raw[(path, gen)] = raw.get((path, gen), b"") + dctx.decompress(
                data, max_output_size=1 << 30
            )
        out["raw"] = raw
        return out
    finally:
        con.close()


def raw_of(db: Path, path: str) -> bytes:
    return snapshot(db)["raw"].get((path, 0), b"")

"""A session's conversation, for reading: its events in order, a page at a time, each with
its bulky body (tool input and output, thinking, long text) recovered from the stored raw
lines while they are kept — and marked ``evicted`` once the retention pass dropped them.

The bodies are not stored twice: ingest keeps them only in the raw lines (zstd blocks).  To
show one, the line that holds it is decompressed and read again by the agent's adapter with
``FileContext.payloads`` on, and the event with the same natural key gives its payload.  The
digest, the rows and the search index do not depend on this: it is the viewer's path only.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any, Final, NamedTuple

import zstandard

from helixd.adapters import AGENT_NAMES, Adapter, Chunk, FileContext, adapter_named
from helixd.core.timeparse import iso
from helixd.store import session_queries as sq
from helixd.store import transcript_queries as tq
from helixd.store.keys import key64

PAYLOAD_CHARS: Final = 64 * 1024  # a body longer than this is cut (the size is said)
MAX_PAGE: Final = 2000


class Transcript(NamedTuple):
    """One page of a session's events.  ``total`` events are stored for the session (seq
    ``first_seq``..``last_seq``); ``raw`` says whether bodies can still be shown (``kept``),
    were dropped by eviction (``evicted``), or the events themselves are gone (``gone``)."""

    session: dict[str, Any]
    events: list[dict[str, Any]]
    total: int
    first_seq: int | None
    last_seq: int | None
    raw: str
    children: list[dict[str, Any]]

    @property
    def has_before(self) -> bool:
        return (
            bool(self.events)
            and self.first_seq is not None
            and self.events[0]["seq"] > self.first_seq
        )

    @property
    def has_after(self) -> bool:
        return (
            bool(self.events)
            and self.last_seq is not None
            and self.events[-1]["seq"] < self.last_seq
        )


def _text(payload: bytes) -> tuple[str, int]:
    text = payload.decode("utf-8", "replace")
    return (
        (text, 0)
        if len(text) <= PAYLOAD_CHARS
        else (text[:PAYLOAD_CHARS], len(text) - PAYLOAD_CHARS)
    )


def _rel(path: str, root: str) -> str:
    try:
        return PurePosixPath(path).relative_to(root).as_posix()
    except ValueError:
        return PurePosixPath(path).name


def _lines_of(block: tuple[int, int, int, int, bytes], offsets: set[int]) -> dict[int, bytes]:
    """The raw line at each offset inside one block (a block ends on a line boundary)."""
    _, _, start, _, data_z = block
    data = zstandard.ZstdDecompressor().decompress(data_z)
    out: dict[int, bytes] = {}
    for offset in offsets:
        pos = offset - start
        if 0 <= pos < len(data):
            end = data.find(b"\n", pos)
            out[offset] = data[pos : end if end >= 0 else len(data)]
    return out


def _payloads(con: sqlite3.Connection, events: list[dict[str, Any]]) -> dict[int, bytes]:
    """``{event id: payload}`` for the events whose body is in a stored raw line."""
    wanted: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for ev in events:
        if ev["file_id"] is not None and ev["offset"] is not None:
            wanted[ev["file_id"]].append(ev)
    found: dict[int, bytes] = {}
    for file_id, evs in wanted.items():
        src = tq.source_file(con, file_id)
        if src is None or src["agent"] not in AGENT_NAMES:
            continue
        adapter: Adapter = adapter_named(src["agent"])  # only this agent's parser is loaded
        ctx = FileContext(src["path"], _rel(src["path"], src["root"]), src["sidecar"], True)
        offsets = {ev["offset"] for ev in evs}
        whole = adapter.whole_file(ctx.rel)
        by_key = {ev["ekey"]: ev["id"] for ev in evs}
        for block in tq.raw_blocks_covering(con, file_id, offsets):
            if whole:
                chunks = [(block[2], zstandard.ZstdDecompressor().decompress(block[4]))]
            else:
                inside = {o for o in offsets if block[2] <= o < block[3]}
                chunks = sorted(_lines_of(block, inside).items())
            for base, line in chunks:
                try:
                    parsed = adapter.parse(Chunk(line + b"\n", base, True, ctx), {})
                except Exception:  # a line the adapter cannot read again shows without body
                    continue
                for rec in parsed.events:
                    eid = by_key.get(key64(rec.key))
                    if eid is not None and rec.payload:
                        found[eid] = rec.payload
    return found


def _shape(ev: dict[str, Any], payload: bytes | None, raw: str) -> dict[str, Any]:
    out = {k: v for k, v in ev.items() if k not in ("ekey", "file_id", "offset")}
    out["timestamp"] = iso(ev["ts"])
    out["is_error"] = bool(ev["is_error"])
    out["is_sidechain"] = bool(ev["is_sidechain"])
    if payload is not None:
        out["payload"], out["payload_cut"] = _text(payload)
        out["payload_state"] = "kept"
    else:
        out["payload"], out["payload_cut"] = None, 0
        has_body = ev["payload_bytes"] > 0
        out["payload_state"] = "evicted" if has_body and raw != "kept" else "none"
    return out


def transcript(
    con: sqlite3.Connection,
    session: dict[str, Any],
    *,
    after: int | None = None,
    before: int | None = None,
    tail: bool = False,
    limit: int = 200,
    payloads: bool = True,
) -> Transcript:
    """A page of ``session``'s events (a row from ``query.sessions``): those with ``after <
    seq < before``, the first ``limit`` of them, or the last ``limit`` with ``tail``."""
    sid = session["id"]
    total, first, last = tq.event_span(con, sid)
    stage = tq.evict_stage(con, sid)
    raw = "kept" if stage == 0 else "evicted" if stage == 1 else "gone"
    rows = tq.events(con, sid, after, before, max(1, min(limit, MAX_PAGE)), tail)
    found = _payloads(con, rows) if payloads and raw == "kept" else {}
    return Transcript(
        session=session,
        events=[_shape(ev, found.get(ev["id"]), raw) for ev in rows],
        total=total,
        first_seq=first,
        last_seq=last,
        raw=raw,
        children=sq.children(con, session["uid"]),
    )


def raw_lines(con: sqlite3.Connection, t: Transcript) -> list[bytes]:
    """The stored (redacted) source lines that hold the page's events, in file order, each
    once; empty once the raw lines were evicted."""
    rows = tq.events(
        con,
        t.session["id"],
        (t.events[0]["seq"] - 1) if t.events else None,
        (t.events[-1]["seq"] + 1) if t.events else None,
        MAX_PAGE,
        False,
    )
    wanted: dict[int, set[int]] = defaultdict(set)
    for ev in rows:
        if ev["file_id"] is not None and ev["offset"] is not None:
            wanted[ev["file_id"]].add(ev["offset"])
    out: list[bytes] = []
    for file_id, offsets in wanted.items():
        for block in tq.raw_blocks_covering(con, file_id, offsets):
            inside = {o for o in offsets if block[2] <= o < block[3]}
            out.extend(line for _, line in sorted(_lines_of(block, inside).items()))
    return out

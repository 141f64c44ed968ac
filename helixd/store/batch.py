"""What one read of one file hands the writer (``helixd.store.writer``): the ``Batch`` — its
cursor, raw bytes and records —, its events prepared as rows (keys, column values, search
text) and its raw bytes compressed, both done off the store's thread; the merge of a
batch's session facts and the sessions its records belong to.  No SQL."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import zstandard

from helixd.core.records import Cursor, Event, Parsed, SessionInfo, UsageFact
from helixd.store.keys import key64
from helixd.store.search_write import search_doc

# Raw blocks: zstd level 2 with an 8 MiB window (a parse piece is at most 8 MiB).  Level 3
# (a 2 MiB window) cost 0.95 s for 53.4 MB of blocks from the 204 MB corpus; this 0.73 s
# for 53.1 MB: a session repeats its context further back than 2 MiB (docs/performance.md).
RAW_LEVEL: Final = 2
RAW_WINDOW_LOG: Final = 23
MESSAGE_KINDS: Final = frozenset({"user_msg", "assistant_msg"})
_NO_TESTS: Final = (None, None, None, None)


@dataclass(slots=True)
class Batch:
    """What one read of one file produced.  ``raw`` is the (redacted) source bytes
    ``[start, cursor.offset)``; ``reset`` says the file was re-read from 0 as a new
    generation.  ``raw_z`` may be filled by ``prepare`` off the event loop.  Once ``rows``
    are given, ``parsed.events`` may be empty: a parse worker sends the rows only (the
    events would cross the process boundary twice, their bulky payloads included)."""

    cursor: Cursor
    start: int
    raw: bytes
    parsed: Parsed
    redactions: int = 0
    replace_events: bool = False
    raw_z: bytes | None = None
    rows: list[Prepared] | None = None
    replay: bool = False  # re-normalization: records from stored raw lines, raw untouched
    sidecar: bytes | None = None  # the companion file's bytes the adapter was given
    source: bytes = b""  # re-normalization: the bytes parsed (``raw`` is not rewritten)
    # a parse worker's batch: its block and rows kept, ``raw`` dropped (``held_bytes``)
    raw_dropped: bool = False

    def prepare(self) -> None:
        """Off the store's thread (which is the ingest's critical path): compress the raw
        bytes (zstd releases the GIL) and turn each event into its keys, its column values
        and its search text, so that the writer only has to run SQL."""
        if self.raw_z is None and self.raw:
            self.raw_z = compress_raw(self.raw)
        if self.rows is None:
            self.rows = [prepare_event(ev) for ev in self.parsed.events]

    def held_bytes(self) -> int:
        """The source bytes this batch stands for while it waits for the writer: ``raw``, or
        the bytes consumed when a parse worker compressed and prepared them and ``raw`` was
        dropped (``raw_dropped``: said by whoever dropped them, never inferred from the
        rows — a batch prepared while it waits would change its count between the queue's
        addition and its subtraction)."""
        return len(self.raw) or (self.parsed.consumed if self.raw_dropped else 0)

    def line_length(self, offset: int) -> int:
        """The length of the source line at ``offset`` (0 when the bytes are not at hand).
        A batch that dropped its raw bytes reads them back from its block (salvage only)."""
        if self.raw_dropped and not self.raw and self.raw_z is not None and not self.source:
            # a streamed block (``compress_range``) has no content size: decompress as a stream
            self.raw = zstandard.ZstdDecompressor().decompressobj().decompress(self.raw_z)
        data = self.raw or self.source
        at = offset - self.start
        if not 0 <= at < len(data):
            return 0
        end = data.find(b"\n", at)
        return (end if end >= 0 else len(data)) - at


_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    """This thread's compressor (one is not safe across threads): a new one per batch cost
    26 us of its 31 us on a 3 kB batch, and the daemon's live batches are that small."""
    c: zstandard.ZstdCompressor | None = getattr(_local, "zstd", None)
    if c is None:
        params = zstandard.ZstdCompressionParameters.from_level(
            RAW_LEVEL, window_log=RAW_WINDOW_LOG
        )
        c = _local.zstd = zstandard.ZstdCompressor(compression_params=params)
    return c


def compress_raw(raw: bytes) -> bytes:
    """A raw block as stored: zstd at ``RAW_LEVEL`` with a ``RAW_WINDOW_LOG`` window, with
    this thread's compressor (the writer's threads, and a parse worker's one thread)."""
    return _compressor().compress(raw)


Prepared = tuple[str, int, int, int | None, tuple[Any, ...], str, str, int | None]
ROW_OFFSET: Final = 11  # where the event's line offset is in a prepared row's ``content``


def prepare_event(ev: Event) -> Prepared:
    """``(session_uid, key, anchor, parent, content, search text, kind, ts)`` of an event;
    ``content`` holds the values of ``_EVENT_CONTENT`` in order."""
    key = key64(ev.key)
    content = (
        ev.ts,
        ev.kind,
        ev.role,
        ev.tool,
        ev.call_id,
        ev.summary,
        ev.body or None,
        ev.tokens,
        int(ev.is_error),
        int(ev.is_sidechain),
        ev.payload_size or len(ev.payload or b""),
        ev.offset,
        ev.lines_added,
        ev.lines_removed,
        ev.status,
        *(ev.tests or _NO_TESTS),
    )
    return (
        ev.session_uid,
        key,
        key64(ev.anchor) if ev.anchor else key,
        key64(ev.parent_key) if ev.parent_key else None,
        content,
        search_doc(ev.kind, ev.summary, ev.body, ev.search_text),
        ev.kind,
        ev.ts,
    )


def merge_infos(infos: Iterable[SessionInfo]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for info in infos:
        row = merged.setdefault(
            info.uid, {"uid": info.uid, "agent": info.agent, "native_id": info.native_id}
        )
        for field in (
            "parent_uid",
            "cwd",
            "git_branch",
            "git_commit",
            "model",
            "title",
            "version",
            "agent_type",
        ):
            value = getattr(info, field)
            if value is not None:
                row[field] = value
        if info.first_ts is not None:
            row["first_ts"] = min(info.first_ts, row.get("first_ts", info.first_ts))
        if info.last_ts is not None:
            row["last_ts"] = max(info.last_ts, row.get("last_ts", info.last_ts))
        if info.ended:
            row["ended"] = 1
    return merged


def batch_owner(rows: Sequence[Prepared], usage: Sequence[UsageFact]) -> str | None:
    """The session a batch's file belongs to: that of its first record (``rows`` are the
    prepared events, in the events' order)."""
    return rows[0][0] if rows else usage[0].session_uid if usage else None


def record_uids(rows: Iterable[Prepared], usage: Iterable[UsageFact]) -> set[str]:
    return {r[0] for r in rows} | {u.session_uid for u in usage}

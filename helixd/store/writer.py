"""The write path: one ingest batch (records + cursor) in one ``BEGIN IMMEDIATE`` transaction.

Idempotence comes from natural keys, not from offsets: an event is unique per
(session, hash of its adapter key), a usage fact per hash of its dedup key, a raw block per
(file, generation, start offset).  Replaying a batch after a crash, re-reading a truncated
or replaced file from 0, or meeting a resumed session's replayed prefix therefore adds
nothing twice.  ``seq`` is assigned here, in arrival order, and ``parent_seq`` is resolved
from the adapter's parent key (the turn DAG).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Final

import aiosqlite
import orjson
import zstandard

from helixd.records import Cursor, Event, Parsed, SessionInfo

RAW_LEVEL: Final = 3
PAYLOAD_LEVEL: Final = 3
PAYLOAD_COMPRESS_MIN: Final = 256
IN_CHUNK: Final = 500
MESSAGE_KINDS: Final = frozenset({"user_msg", "assistant_msg"})


def key64(text: str) -> int:
    """A signed 64-bit hash of a natural key (collisions: ~1e-7 at 1e6 keys per session)."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
        "little",
        signed=True,
    )


@dataclass(slots=True)
class Batch:
    """What one read of one file produced.  ``raw`` is the (redacted) source bytes
    ``[start, cursor.offset)``; ``reset`` says the file was re-read from 0 as a new
    generation.  ``raw_z`` may be filled by ``prepare`` off the event loop."""

    cursor: Cursor
    start: int
    raw: bytes
    parsed: Parsed
    redactions: int = 0
    replace_events: bool = False
    raw_z: bytes | None = None
    payloads_z: list[tuple[bytes, int]] | None = None

    def prepare(self) -> None:
        """Compress the raw bytes and payloads (CPU work that releases the GIL)."""
        cctx = zstandard.ZstdCompressor(level=RAW_LEVEL)
        if self.raw_z is None and self.raw:
            self.raw_z = cctx.compress(self.raw)
        if self.payloads_z is None:
            pctx = zstandard.ZstdCompressor(level=PAYLOAD_LEVEL)
            out: list[tuple[bytes, int]] = []
            for ev in self.parsed.events:
                if ev.payload is None:
                    continue
                if len(ev.payload) >= PAYLOAD_COMPRESS_MIN:
                    out.append((pctx.compress(ev.payload), 1))
                else:
                    out.append((ev.payload, 0))
            self.payloads_z = out


def _merge_infos(infos: Iterable[SessionInfo]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for info in infos:
        row = merged.setdefault(
            info.uid, {"uid": info.uid, "agent": info.agent, "native_id": info.native_id}
        )
        for field in ("parent_uid", "cwd", "git_branch", "model", "title", "version", "agent_type"):
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


_UPSERT_SESSION: Final = """
INSERT INTO sessions (uid, agent, native_id, parent_uid, cwd, repo, git_branch, model, title,
    version, agent_type, started_at, ended_at, ended, adapter_version, source_path,
    discovered_at, ingested_at, changed_at)
VALUES (:uid, :agent, :native_id, :parent_uid, :cwd, :repo, :git_branch, :model, :title,
    :version, :agent_type, :first_ts, :last_ts, :ended, :adapter_version, :source_path,
    :now, :now, :now)
ON CONFLICT (uid) DO UPDATE SET
    parent_uid = coalesce(excluded.parent_uid, parent_uid),
    cwd = coalesce(excluded.cwd, cwd),
    repo = coalesce(excluded.repo, repo),
    git_branch = coalesce(excluded.git_branch, git_branch),
    model = coalesce(excluded.model, model),
    title = coalesce(excluded.title, title),
    version = coalesce(excluded.version, version),
    agent_type = coalesce(excluded.agent_type, agent_type),
    started_at = min(coalesce(excluded.started_at, started_at),
                     coalesce(started_at, excluded.started_at)),
    ended_at = max(coalesce(excluded.ended_at, ended_at), coalesce(ended_at, excluded.ended_at)),
    ended = max(ended, excluded.ended),
    adapter_version = coalesce(excluded.adapter_version, adapter_version),
    source_path = coalesce(source_path, excluded.source_path),
    ingested_at = excluded.ingested_at,
    changed_at = excluded.changed_at
RETURNING id, next_seq
"""

_UPSERT_USAGE: Final = """
INSERT INTO usage (key, session_id, rank, ts, model, input, output, cache_read,
    cache_write_5m, cache_write_1h, reasoning)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
    session_id = CASE WHEN excluded.rank < rank THEN excluded.session_id ELSE session_id END,
    ts = CASE WHEN excluded.rank < rank THEN excluded.ts ELSE ts END,
    rank = min(rank, excluded.rank),
    input = max(input, excluded.input),
    output = max(output, excluded.output),
    cache_read = max(cache_read, excluded.cache_read),
    cache_write_5m = max(cache_write_5m, excluded.cache_write_5m),
    cache_write_1h = max(cache_write_1h, excluded.cache_write_1h),
    reasoning = max(reasoning, excluded.reasoning)
"""

_REPLACE_USAGE: Final = (
    _UPSERT_USAGE[: _UPSERT_USAGE.index("ON CONFLICT")]
    + """
ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, rank = excluded.rank,
    ts = excluded.ts, model = excluded.model, input = excluded.input, output = excluded.output,
    cache_read = excluded.cache_read, cache_write_5m = excluded.cache_write_5m,
    cache_write_1h = excluded.cache_write_1h, reasoning = excluded.reasoning
"""
)

_INSERT_EVENT: Final = """
INSERT OR IGNORE INTO events (session_id, seq, parent_seq, ekey, ts, kind, role, tool, call_id,
    summary, body, tokens, is_error, is_sidechain, file_id, offset)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def repo_of(cwd: Any) -> str | None:
    """The repository name for a working directory: its last path component (Windows paths
    included, since transcripts travel between machines)."""
    if not isinstance(cwd, str) or not cwd:
        return None
    path = PureWindowsPath(cwd) if "\\" in cwd else PurePosixPath(cwd)
    return path.name or cwd


class Writer:
    """Owns the write statements.  Not safe for concurrent use: one writer per store."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    async def commit(self, batch: Batch, now: int) -> int:
        batch.prepare()
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            file_id = await self._write(batch, now)
            await self.db.execute("COMMIT")
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        return file_id

    async def _write(self, batch: Batch, now: int) -> int:
        c, p = batch.cursor, batch.parsed
        file_id = await self._upsert_file(c, now)
        own_uid = (
            p.events[0].session_uid if p.events else p.usage[0].session_uid if p.usage else None
        )
        ids = await self._upsert_sessions(p, c, own_uid, now)
        await self._insert_events(
            p.events, ids, file_id, batch.payloads_z or [], now, batch.replace_events
        )
        if p.usage:
            await self.db.executemany(
                _UPSERT_USAGE,
                [
                    (
                        key64(u.dedup_key),
                        ids[u.session_uid],
                        u.rank,
                        u.ts,
                        u.model,
                        u.input_tokens,
                        u.output_tokens,
                        u.cache_read_tokens,
                        u.cache_write_5m_tokens,
                        u.cache_write_1h_tokens,
                        u.reasoning_tokens,
                    )
                    for u in p.usage
                ],
            )
        if batch.raw_z is not None:
            await self.db.execute(
                "INSERT OR IGNORE INTO raw_blocks (file_id, generation, start, end, lines, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (file_id, c.generation, batch.start, c.offset, p.lines, batch.raw_z),
            )
        if p.bad:
            await self.db.executemany(
                "INSERT OR IGNORE INTO bad_lines (file_id, generation, offset, length, reason)"
                " VALUES (?, ?, ?, ?, ?)",
                [(file_id, c.generation, b.offset, b.length, b.reason[:500]) for b in p.bad],
            )
        await self.db.execute(
            "UPDATE files SET lines = lines + ?, bad_lines = bad_lines + ?,"
            " unknown_records = unknown_records + ?, redactions = redactions + ?,"
            " raw_bytes = raw_bytes + ?, session_id = coalesce(?, session_id) WHERE id = ?",
            (
                p.lines,
                len(p.bad),
                sum(p.unknown_types.values()),
                batch.redactions,
                len(batch.raw_z or b""),
                ids.get(own_uid) if own_uid else None,
                file_id,
            ),
        )
        return file_id

    async def _upsert_file(self, c: Cursor, now: int) -> int:
        params = (
            c.agent,
            c.path,
            c.root,
            c.dev,
            c.ino,
            c.size,
            c.mtime_ns,
            c.offset,
            c.head_hash,
            c.head_len,
            c.generation,
            c.adapter_version,
            orjson.dumps(c.state),
            now,
        )
        if c.file_id is not None:
            await self.db.execute(
                "UPDATE files SET agent=?, path=?, root=?, dev=?, ino=?, size=?, mtime_ns=?,"
                " offset=?, head_hash=?, head_len=?, generation=?, adapter_version=?, state=?,"
                " updated_at=?, gone_at=NULL WHERE id=?",
                (*params, c.file_id),
            )
            return c.file_id
        async with self.db.execute(
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
        ) as cur:
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    async def _upsert_sessions(
        self, p: Parsed, c: Cursor, own_uid: str | None, now: int
    ) -> dict[str, int]:
        merged = _merge_infos(p.sessions)
        for uid in {e.session_uid for e in p.events} | {u.session_uid for u in p.usage}:
            merged.setdefault(
                uid, {"uid": uid, "agent": c.agent, "native_id": uid.partition(":")[2]}
            )
        ids: dict[str, int] = {}
        for uid, row in merged.items():
            cwd = row.get("cwd")
            params = {
                "parent_uid": None,
                "cwd": None,
                "git_branch": None,
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
            async with self.db.execute(_UPSERT_SESSION, params) as cur:
                found = await cur.fetchone()
            assert found is not None
            ids[uid] = int(found[0])
        return ids

    async def _existing_seqs(self, session_id: int, keys: Sequence[int]) -> dict[int, int]:
        found: dict[int, int] = {}
        for i in range(0, len(keys), IN_CHUNK):
            part = keys[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            async with self.db.execute(
                f"SELECT ekey, seq FROM events WHERE session_id = ? AND ekey IN ({marks})",
                (session_id, *part),
            ) as cur:
                found.update({int(k): int(s) for k, s in await cur.fetchall()})
        return found

    async def _insert_events(
        self,
        events: Sequence[Event],
        ids: dict[str, int],
        file_id: int,
        payloads_z: Sequence[tuple[bytes, int]],
        now: int,
        replace: bool,
    ) -> None:
        by_session: dict[int, list[tuple[Event, bytes, int] | tuple[Event, None, int]]] = (
            defaultdict(list)
        )
        payload_iter = iter(payloads_z)
        for ev in events:
            if ev.payload is not None:
                data, compressed = next(payload_iter)
                by_session[ids[ev.session_uid]].append((ev, data, compressed))
            else:
                by_session[ids[ev.session_uid]].append((ev, None, 0))
        for session_id, items in by_session.items():
            await self._insert_session_events(session_id, items, file_id, now, replace)

    async def _insert_session_events(
        self,
        session_id: int,
        items: Sequence[tuple[Event, bytes | None, int]],
        file_id: int,
        now: int,
        replace: bool,
    ) -> None:
        keys = [key64(ev.key) for ev, _, _ in items]
        parents = [key64(ev.parent_key) if ev.parent_key else None for ev, _, _ in items]
        wanted = list({*keys, *(k for k in parents if k is not None)})
        seen = await self._existing_seqs(session_id, wanted)
        async with self.db.execute(
            "SELECT next_seq FROM sessions WHERE id = ?", (session_id,)
        ) as cur:
            row = await cur.fetchone()
        next_seq = int(row[0]) if row else 0
        rows: list[tuple[Any, ...]] = []
        payload_rows: list[tuple[Any, ...]] = []
        messages = 0
        updates: list[tuple[Any, ...]] = []
        done: set[int] = set()
        for (ev, data, compressed), key, parent in zip(items, keys, parents, strict=True):
            if key in seen:
                if replace and key not in done:
                    done.add(key)
                    updates.append(
                        (
                            ev.ts,
                            ev.kind,
                            ev.role,
                            ev.tool,
                            ev.call_id,
                            ev.summary,
                            ev.body or None,
                            ev.tokens,
                            int(ev.is_error),
                            file_id,
                            ev.offset,
                            session_id,
                            key,
                        )
                    )
                    if data is not None and ev.payload is not None:
                        payload_rows.append((session_id, key, len(ev.payload), compressed, data))
                continue
            done.add(key)
            seq = next_seq
            next_seq += 1
            seen[key] = seq
            rows.append(
                (
                    session_id,
                    seq,
                    seen.get(parent) if parent is not None else None,
                    key,
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
                    file_id,
                    ev.offset,
                )
            )
            if ev.kind in MESSAGE_KINDS:
                messages += 1
            if data is not None and ev.payload is not None:
                payload_rows.append((session_id, key, len(ev.payload), compressed, data))
        if rows:
            await self.db.executemany(_INSERT_EVENT, rows)
        if updates:
            await self.db.executemany(
                "UPDATE events SET ts=?, kind=?, role=?, tool=?, call_id=?, summary=?, body=?,"
                " tokens=?, is_error=?, file_id=?, offset=? WHERE session_id=? AND ekey=?",
                updates,
            )
        if payload_rows:
            await self.db.executemany(
                "INSERT OR REPLACE INTO payloads (session_id, ekey, size, compressed, data)"
                " VALUES (?, ?, ?, ?, ?)",
                payload_rows,
            )
        await self.db.execute(
            "UPDATE sessions SET next_seq = ?, events = events + ?, messages = messages + ?,"
            " changed_at = ? WHERE id = ?",
            (next_seq, len(rows), messages, now, session_id),
        )

    async def mark_gone(self, path: str, now: int) -> bool:
        async with self.db.execute(
            "UPDATE files SET gone_at = ? WHERE path = ? AND gone_at IS NULL", (now, path)
        ) as cur:
            return cur.rowcount > 0

    async def save_digest(
        self,
        session_id: int,
        digest: dict[str, Any],
        provisional: bool,
        schema_version: int,
        now: int,
    ) -> None:
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            await self.db.execute(
                "INSERT INTO digests (session_id, schema_version, built_at, provisional, json)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " schema_version = excluded.schema_version, built_at = excluded.built_at,"
                " provisional = excluded.provisional, json = excluded.json",
                (session_id, schema_version, now, int(provisional), orjson.dumps(digest)),
            )
            await self.db.execute(
                "UPDATE sessions SET analyzed_at = ? WHERE id = ?", (now, session_id)
            )
            await self.db.execute("COMMIT")
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise

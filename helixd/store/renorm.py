"""What re-normalization reads: the groups of sessions to rebuild and their stored raw lines.

A group is a connected set of sessions and files: every file holding an event of one of its
sessions, and every session with an event (or its main record) in one of its files.  A
group is rebuilt as one unit, so that a resumed session whose earlier turns were replayed
into a later file, or an archive copy of a session, comes out exactly as a fresh ingest
would make it.  A group is rebuildable only when every file's current generation is
stored whole, from byte 0 to its cursor, and none of its sessions was evicted.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from helixd.core.records import Cursor
from helixd.store.reader import _CURSOR_COLS, _cursor

OVERSIZED_REASON: Final = "line longer than"


@dataclass(slots=True)
class Group:
    session_ids: list[int]
    cursors: list[Cursor]
    stale: int  # how many of its files an older adapter version produced
    complete: bool = True
    why: str = ""


@dataclass(slots=True)
class StoredRaw:
    """One file's stored raw lines: ``blocks`` are ``(generation, start, end, zstd data)``
    in order; ``oversized`` maps ``(generation, offset)`` of each line kept raw unparsed
    to its recorded reason."""

    cursor: Cursor | None = None  # the file's cursor when its raw lines were read
    blocks: list[tuple[int, int, int, bytes]] = field(default_factory=list)
    oversized: dict[tuple[int, int], str] = field(default_factory=dict)
    sidecar: bytes | None = None
    whole: bool = False  # the current generation is stored from byte 0 to the cursor


class _Union:
    def __init__(self) -> None:
        self.parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(self, x: tuple[str, int]) -> tuple[str, int]:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: tuple[str, int], b: tuple[str, int]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def groups(con: sqlite3.Connection, versions: Mapping[str, int]) -> list[Group]:
    """The groups holding at least one file an older adapter version produced, oldest
    files first.  One scan of ``events`` (file, session pairs) builds the graph."""
    stale_ids: set[int] = set()
    cursors: dict[int, Cursor] = {}
    for row in con.execute(f"SELECT {_CURSOR_COLS} FROM files"):
        c = _cursor(row)
        assert c.file_id is not None
        cursors[c.file_id] = c
        if c.agent in versions and c.adapter_version < versions[c.agent]:
            stale_ids.add(c.file_id)
    if not stale_ids:
        return []
    links = _Union()
    for fid, sid in con.execute(
        "SELECT DISTINCT file_id, session_id FROM events WHERE file_id IS NOT NULL"
        " UNION SELECT id, session_id FROM files WHERE session_id IS NOT NULL"
    ):
        links.join(("f", fid), ("s", sid))
    members: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)
    for fid in cursors:
        members[links.find(("f", fid))].append(("f", fid))
    for node in list(links.parent):
        if node[0] == "s":
            members[links.find(node)].append(node)
    evicted = {int(r[0]) for r in con.execute("SELECT id FROM sessions WHERE evict_stage > 0")}
    out: list[Group] = []
    for nodes in members.values():
        fids = sorted(i for k, i in nodes if k == "f")
        stale = sum(1 for f in fids if f in stale_ids)
        if not stale:
            continue
        sids = sorted(i for k, i in nodes if k == "s")
        group = Group(sids, [cursors[f] for f in fids], stale)
        if any(s in evicted for s in sids):
            group.complete, group.why = False, "raw lines evicted"
        else:
            for c in group.cursors:
                if not _stored_whole(con, c):
                    group.complete, group.why = False, f"raw lines incomplete: {c.path}"
                    break
        out.append(group)
    out.sort(key=lambda g: g.cursors[0].file_id or 0)
    return out


SKIPPED_KEY: Final = "renormalize_skipped"


def skipped_mark(con: sqlite3.Connection) -> str | None:
    """What the last pass left because it could not rebuild it (see ``set_skipped_mark``)."""
    row = con.execute("SELECT value FROM meta WHERE key = ?", (SKIPPED_KEY,)).fetchone()
    return str(row[0]) if row else None


def set_skipped_mark(con: sqlite3.Connection, mark: str) -> None:
    """Remember that the stale files left are the ones no pass can rebuild (their raw lines
    were evicted): the next pass then costs one count instead of a scan of every event."""
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (SKIPPED_KEY, mark))
    con.commit()


def _stored_whole(con: sqlite3.Connection, c: Cursor) -> bool:
    """The current generation's raw blocks cover ``[0, offset)`` without a gap."""
    at = 0
    for start, end in con.execute(
        "SELECT start, end FROM raw_blocks WHERE file_id = ? AND generation = ? ORDER BY start",
        (c.file_id, c.generation),
    ):
        if start != at:
            return False
        at = end
    return at == c.offset


def stored_raw(con: sqlite3.Connection, file_id: int) -> StoredRaw:
    """One file's cursor, raw blocks, oversized lines and sidecar, read in one go (the
    store's thread runs nothing else meanwhile, so they agree with each other)."""
    raw = StoredRaw()
    row = con.execute(f"SELECT {_CURSOR_COLS}, sidecar FROM files WHERE id = ?", (file_id,))
    found = row.fetchone()
    if found is None:
        return raw
    raw.cursor = _cursor(found[:-1])
    raw.sidecar = bytes(found[-1]) if found[-1] is not None else None
    raw.whole = _stored_whole(con, raw.cursor)
    for gen, start, end, data in con.execute(
        "SELECT generation, start, end, data FROM raw_blocks WHERE file_id = ?"
        " ORDER BY generation, start",
        (file_id,),
    ):
        raw.blocks.append((int(gen), int(start), int(end), bytes(data)))
    for gen, offset, reason in con.execute(
        "SELECT generation, offset, reason FROM bad_lines WHERE file_id = ? AND reason LIKE ?",
        (file_id, OVERSIZED_REASON + "%"),
    ):
        raw.oversized[(int(gen), int(offset))] = str(reason)
    return raw

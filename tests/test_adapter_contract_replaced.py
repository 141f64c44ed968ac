"""Contract, run over every registered adapter: a file replaced by a different one under the
same name (issue 3, item 4).

For each adapter two different fixture files ``A`` and ``B`` it claims are put, in turn, at
the same path: ``A`` is ingested, then ``B`` is moved over it (``os.replace``: a new inode,
like an agent rewriting its log) and the root is ingested again.  The store must then hold
what ``B`` alone gives - the new file is read from byte 0, nothing of it dropped because an
event key of ``A`` looked the same - and, for appended formats, still everything ``A`` gave
(Helix keeps the memory of vanished content), without a duplicate.  Files rewritten whole
(``whole_file``) may replace ``A``'s events that share a key, so only ``B`` is required.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from helixd.adapters import Adapter, Chunk, FileContext
from helixd.adapters.registry import REGISTRY
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store
from tests.contract_helpers import FIXTURES, sample_bytes, samples


def _gives_events(adapter: Adapter, path: Path, rel: str) -> bool:
    data = sample_bytes(adapter, path)
    return bool(data) and bool(
        adapter.parse(Chunk(data, 0, True, FileContext(str(path), rel)), {}).events
    )


def pairs(adapter: Adapter) -> dict[str, tuple[Path, Path, str]]:
    """Per kind of file, the two smallest distinct fixture files that give events and can
    stand in for each other at one path (the same file name where an agent's names are
    fixed, as Grok's ``updates.jsonl``; else the same extension), and the rel of the first."""
    found = [(p, rel) for p, rel in samples(adapter) if _gives_events(adapter, p, rel)]
    names = [rel.rsplit("/", 1)[-1] for _, rel in found]

    def kind(rel: str) -> str:
        name = rel.rsplit("/", 1)[-1]
        return name if names.count(name) > 1 else "*." + name.rsplit(".", 1)[-1]

    out: dict[str, tuple[Path, Path, str]] = {}
    for i, (a, rel_a) in enumerate(found):
        for b, rel_b in found[i + 1 :]:
            k = kind(rel_a)
            differ = sample_bytes(adapter, a) != sample_bytes(adapter, b)
            if k not in out and k == kind(rel_b) and differ:
                out[k] = (a, b, _placed(adapter, rel_a))
    return out


def _placed(adapter: Adapter, rel: str) -> str:
    """Where the file goes below a root: a per-project file (``project_files``) right in
    the project directory, where discovery looks for it."""
    return next((p for p in adapter.project_files if rel.endswith("/" + p)), rel)


CASES = [pytest.param(a, k, id=f"{a.name}-{k}") for a in REGISTRY for k in pairs(a)]


def test_every_adapter_has_a_replacement_case() -> None:
    covered = {case.values[0].name for case in CASES}  # type: ignore[union-attr]
    assert covered == {a.name for a in REGISTRY}


Rows = tuple[set[tuple[object, ...]], list[tuple[object, ...]], set[str | bytes]]


def rows(db: Path) -> Rows:
    """(event contents, event keys with duplicates, usage keys) of a store."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        content = set(
            con.execute(
                "SELECT s.uid, e.kind, e.role, e.tool, e.call_id, e.summary, e.body, e.is_error"
                " FROM events e JOIN sessions s ON s.id = e.session_id"
            ).fetchall()
        )
        keys = con.execute(
            "SELECT s.uid, e.ekey FROM events e JOIN sessions s ON s.id = e.session_id"
        ).fetchall()
        usage = {r[0] for r in con.execute("SELECT key FROM usage")}
    finally:
        con.close()
    return content, keys, usage


async def ingest_as(adapter: Adapter, root: Path, db: Path, *files: Path, rel: str) -> list[int]:
    """Ingest each file in turn at ``root/rel``; returns the ``replaced`` count of each run."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    replaced = []
    store = await Store.open(db)
    try:
        for f in files:
            tmp = target.with_name(target.name + ".tmp-new")
            shutil.copyfile(f, tmp)
            os.replace(tmp, target)
            _companions(f, target)
            _members(adapter, f, root, rel)
            stats = await Ingestor(store).backfill(discover([(adapter, root)]))
            assert not stats.errors
            replaced.append(stats.replaced)
    finally:
        await store.close()
    return replaced


def _companions(f: Path, target: Path) -> None:
    """A database's ``-wal`` travels with it (the agent replacing its database replaces
    both); the reader's ``-shm`` index of the old one goes."""
    for suffix in ("-wal", "-shm"):
        old = target.with_name(target.name + suffix)
        old.unlink(missing_ok=True)
        new = f.with_name(f.name + suffix)
        if suffix == "-wal" and new.exists():
            shutil.copyfile(new, old)


def _members(adapter: Adapter, f: Path, root: Path, rel: str) -> None:
    """A file read with a directory of members (OpenCode's message and its parts,
    ``helixd/sources/bundle.py``): the new file's members replace the old ones, in the
    directory the name ``rel`` points at."""
    where = adapter.bundle(rel)
    if where is None:
        return
    base = FIXTURES / adapter.name
    shutil.rmtree(root / where, ignore_errors=True)
    found = adapter.bundle(f.relative_to(base).as_posix())
    if found is not None and (base / found).is_dir():
        shutil.copytree(base / found, root / where)


@pytest.mark.parametrize(("adapter", "kind"), CASES)
async def test_a_file_replaced_under_the_same_name(
    adapter: Adapter, kind: str, tmp_path: Path
) -> None:
    a, b, rel = pairs(adapter)[kind]
    await ingest_as(adapter, tmp_path / "ra", tmp_path / "a.db", a, rel=rel)
    await ingest_as(adapter, tmp_path / "rb", tmp_path / "b.db", b, rel=rel)
    replaced = await ingest_as(adapter, tmp_path / "rab", tmp_path / "ab.db", a, b, rel=rel)
    assert replaced == [0, 1]
    only_a, keys_a, usage_a = rows(tmp_path / "a.db")
    only_b, keys_b, usage_b = rows(tmp_path / "b.db")
    both, keys_ab, usage_ab = rows(tmp_path / "ab.db")
    assert only_b, f"{b} gives no events"
    assert only_b <= both, f"events of the new file missing: {sorted(map(str, only_b - both))[:3]}"
    assert usage_b <= usage_ab
    assert len(keys_ab) == len(set(keys_ab)), "an event stored twice"
    assert set(keys_ab) == set(keys_a) | set(keys_b)
    if not adapter.whole_file(rel):
        assert only_a <= both, "content of the replaced file was lost"
        assert usage_ab == usage_a | usage_b

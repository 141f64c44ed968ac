"""Two stores built from the same corpus, compared: what a change of the write path must
leave exactly as it was (issue 12: "compare a store built by main and by your branch").

For every table of the first store (the full-text index's own shadow tables aside): the
row count and the rows themselves (all columns but the build-time ones: a column whose name
ends in ``_at``, and any ``--ignore TABLE.COLUMN``), as a sorted multiset, so row order and
``rowid`` allocation of tables without meaning in them do not matter; raw blocks are
compared decompressed; and the full-text index by the event ids each of ``--word`` finds.
A table that differs names the columns whose values differ.  Exits 1 on any difference.

    HOME=/tmp/c python -m helixd.cli.main ingest  # once with each build, two store paths
    .venv/bin/python bench/compare_stores.py /tmp/a/helix.db /tmp/b/helix.db
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import zstandard

WORDS = ("error", "test", "function", "import", "file", "python", "the", "fix")
_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")


def _tables(con: sqlite3.Connection) -> list[str]:
    virtual = {
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'")
    }
    names = [
        r[0]
        for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
    ]
    shadow = {v + s for v in virtual for s in _SHADOW_SUFFIXES}
    return [n for n in names if n not in virtual and n not in shadow]


def _columns(con: sqlite3.Connection, table: str, ignore: set[str]) -> list[str]:
    cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
    return [c for c in cols if not c.endswith("_at") and f"{table}.{c}" not in ignore]


def _value(table: str, column: str, value: Any) -> Any:
    if table == "raw_blocks" and column == "data" and isinstance(value, bytes):
        return zstandard.ZstdDecompressor().decompressobj().decompress(value)  # streamed blocks too
    return value


def _digest(values: Iterable[Any]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for v in sorted(repr(x) for x in values):
        h.update(v.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _rows(con: sqlite3.Connection, table: str, cols: Sequence[str]) -> list[tuple[Any, ...]]:
    quoted = ", ".join(f'"{c}"' for c in cols)
    return [
        tuple(_value(table, c, v) for c, v in zip(cols, row, strict=True))
        for row in con.execute(f'SELECT {quoted} FROM "{table}"')
    ]


def compare(a: Path, b: Path, ignore: set[str], words: Sequence[str]) -> list[str]:
    """The differences between the stores at ``a`` and ``b`` (empty: the same)."""
    ca = sqlite3.connect(f"file:{a}?mode=ro", uri=True)
    cb = sqlite3.connect(f"file:{b}?mode=ro", uri=True)
    diffs: list[str] = []
    figures = 0
    for table in _tables(ca):
        cols = _columns(ca, table, ignore)
        if cols != _columns(cb, table, ignore):
            diffs.append(f"{table}: columns differ")
            continue
        ra, rb = _rows(ca, table, cols), _rows(cb, table, cols)
        figures += 2
        if len(ra) != len(rb):
            diffs.append(f"{table}: {len(ra)} rows against {len(rb)}")
            continue
        if _digest(ra) == _digest(rb):
            continue
        differ = [
            c for i, c in enumerate(cols) if _digest(r[i] for r in ra) != _digest(r[i] for r in rb)
        ]
        diffs.append(f"{table}: rows differ (columns {', '.join(differ) or 'combined'})")
    for word in words:
        figures += 1
        query = "SELECT rowid FROM search WHERE search MATCH ? ORDER BY rowid"
        ha = [r[0] for r in ca.execute(query, (word,))]
        hb = [r[0] for r in cb.execute(query, (word,))]
        if ha != hb:
            diffs.append(f"search {word!r}: {len(ha)} hits against {len(hb)}")
    print(f"{figures} figures compared, {len(diffs)} differences")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--ignore", action="append", default=[], help="TABLE.COLUMN to leave out")
    ap.add_argument("--word", action="append", default=None, help="a full-text query")
    args = ap.parse_args()
    diffs = compare(args.a, args.b, set(args.ignore), args.word or WORDS)
    for d in diffs:
        print("DIFF", d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())

"""The search-as-you-type window: where the newest ``n`` documents matching an FTS5 query
begin, so that a prefix common to tens of thousands of documents (``test*``) is ranked
(bm25) among its newest ``n`` matches only.

The index is contentless (``content=''``) and has no prefix table: a prefix query merges
the doclists of every term it covers, which is cheap, but ranking every match costs about a
microsecond a document.  Walking the merged doclist from its end (rowid descending: event
ids only grow, so the newest first) to the ``n``-th match costs a fraction of that, and the
answer depends on the store alone: the same query gives the same hits.
"""

from __future__ import annotations

import sqlite3


def newest_floor(con: sqlite3.Connection, match: str, n: int) -> int | None:
    """The smallest rowid among the newest ``n`` documents matching ``match``; None when
    fewer match (every match is then ranked).  Raises sqlite3.OperationalError on a query
    FTS5 cannot parse."""
    row = con.execute(
        "SELECT rowid FROM search WHERE search MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (match, max(0, int(n) - 1)),
    ).fetchone()
    return None if row is None else int(row[0])

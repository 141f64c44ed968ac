"""Full-text search of every session.

By default the text is searched as typed: every word becomes a quoted FTS5 phrase, so
``next.js``, ``foo-bar``, ``src/app/page.tsx``, ``it's`` and ``C++`` are words to find, not
syntax (the index splits them into the same tokens, and a phrase needs them adjacent).
``fts=True`` hands the text to FTS5 as written (``"a phrase"``, ``prefix*``, ``AND``/``OR``/
``NOT``, ``NEAR``).  ``prefix=True`` makes the last word a prefix (search as you type).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from helixd.core.snippets import query_terms, snippet
from helixd.core.timeparse import iso
from helixd.store import queries

__all__ = ["SearchError", "SearchQuery", "search", "searchable_kinds", "to_fts"]


def searchable_kinds() -> frozenset[str]:
    """The event kinds the index holds (loaded with the index writer's module, which a
    search without ``--kind`` does not need: it pulls hashlib in)."""
    from helixd.store.search_write import SEARCH_KINDS

    return frozenset(SEARCH_KINDS)


def __getattr__(name: str) -> Any:
    if name == "SEARCH_KINDS":
        return searchable_kinds()
    raise AttributeError(name)


_WORD: Final = re.compile(r"\w", re.UNICODE)


class SearchError(ValueError):
    """The search cannot run as asked; the message says why in plain words."""


class SearchQuery(NamedTuple):
    text: str
    fts: bool = False
    prefix: bool = False
    agents: Sequence[str] = ()
    repo: str | None = None
    since: int | None = None
    until: int | None = None
    kinds: Sequence[str] = ()
    limit: int = 20
    offset: int = 0
    # search as you type: rank only the newest this many matches (0: all); applied to a
    # query without filters (a filtered one is narrowed by its filters)
    newest: int = 0


# The shortest last word ``prefix`` makes a prefix: every term under a one- or two-letter
# prefix (t*, co*) is a large share of the index, whose doclists alone take 35-140 ms to
# merge on a 1 GB store (a three-letter one ~7 ms); shorter words match whole.
MIN_PREFIX: Final = 3


def to_fts(text: str, prefix: bool = False) -> str:
    """The FTS5 query for text typed by a person: each whitespace-separated word a quoted
    phrase (words without a letter or digit dropped), all required; with ``prefix`` the last
    word matches as a prefix when it has ``MIN_PREFIX`` characters or more.  Empty when
    nothing searchable is left."""
    words = [w for w in text.split() if _WORD.search(w)]
    phrases = ['"' + w.replace('"', '""') + '"' for w in words]
    if prefix and phrases and len(words[-1]) >= MIN_PREFIX:
        phrases[-1] += "*"
    return " ".join(phrases)


def _plain_error(message: str) -> str:
    if "syntax error" in message or "unterminated string" in message:
        return "the query is not valid FTS5 syntax (" + message + ")"
    if "no such column" in message:
        return "a word followed by ':' is read as a column name (" + message + ")"
    return message


def search(
    con: sqlite3.Connection, q: SearchQuery, mark: tuple[str, str] = ("[", "]")
) -> list[dict[str, Any]]:
    """Hits best first: the event (``event_id``, its ``seq`` in the session, ``kind``,
    ``timestamp``), its session (``session_uid``, ``agent``, ``repo``, ``title``), a
    ``snippet`` with each hit between ``mark``, and a ``score`` (higher is better)."""
    if q.kinds:
        kinds = searchable_kinds()
        unknown = sorted(set(q.kinds) - kinds)
        if unknown:
            raise SearchError(
                f"unknown kind {', '.join(unknown)} (searchable kinds: {', '.join(sorted(kinds))})"
            )
    match = q.text.strip() if q.fts else to_fts(q.text, q.prefix)
    if not match:
        raise SearchError("nothing to search for: type a word")
    filtered = q.agents or q.repo or q.since is not None or q.until is not None or q.kinds
    try:
        floor = None
        if q.newest and not filtered:
            from helixd.store.search_window import newest_floor

            try:
                floor = newest_floor(con, match, q.newest)
            except sqlite3.OperationalError as exc:
                raise queries.QueryError(str(exc)) from exc
        hits = queries.search(
            con, match, q.limit, q.agents, q.repo, q.since, q.until, q.kinds, q.offset, floor
        )
    except queries.QueryError as exc:
        raise SearchError(_plain_error(str(exc))) from None
    terms = query_terms(match)
    for h in hits:
        text = h.pop("body") or h["summary"] or h["title"] or ""
        h["snippet"] = snippet(text, terms, mark=mark)
        h["timestamp"] = iso(h["ts"])
        h["score"] = round(-h["score"], 4)  # bm25: lower is better; shown higher-is-better
    return hits

"""Search snippets: the words of an FTS5 query, and a window of text around their first hit
with every hit marked (``helixctl search``, the web's search, the MCP server's).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

_OPERATORS: Final = frozenset({"AND", "OR", "NOT", "NEAR"})
_TERM = re.compile(r'"([^"]*)"|([\w]+\*?)', re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The words of an FTS5 query (phrases split, operators and column filters dropped);
    a trailing ``*`` stays as a prefix marker."""
    terms: list[str] = []
    for phrase, word in _TERM.findall(query):
        if phrase:
            terms.extend(re.findall(r"\w+", phrase))
        elif word and word not in _OPERATORS:
            terms.append(word)
    return terms


def _stem(term: str) -> str:
    """A crude stem so that highlighting roughly follows the porter tokenizer."""
    word = term.rstrip("*").lower()
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def snippet(
    text: str, terms: Sequence[str], width: int = 160, mark: tuple[str, str] = ("[", "]")
) -> str:
    """A window of ``text`` around the first hit of ``terms`` with every hit marked."""
    flat = " ".join(text.split())
    stems = sorted({_stem(t) for t in terms if _stem(t)}, key=len, reverse=True)
    if not stems:
        return flat[:width]
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(s) for s in stems) + r")\w*", re.I)
    first = pattern.search(flat)
    start = max(0, (first.start() if first else 0) - width // 3)
    end = min(len(flat), start + width)
    if start and end == len(flat):
        start = max(0, end - width)
    window = flat[start:end]
    marked = pattern.sub(lambda m: f"{mark[0]}{m.group(0)}{mark[1]}", window)
    return ("…" if start else "") + marked + ("…" if end < len(flat) else "")

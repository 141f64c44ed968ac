"""Questions about sessions: which there are (a page of them, with cost), which one a person
means by what they typed, and everything known about one (its digest, its links, its files'
problems)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from helixd.core.timeparse import iso
from helixd.core.usage_report import priced, priced_usd
from helixd.store import session_queries as sq
from helixd.store.session_queries import SessionFilter

if TYPE_CHECKING:
    from helixd.core.pricing import Prices

__all__ = ["Lookup", "Resolution", "SessionFilter", "SessionPage", "list_sessions", "lookup"]

TITLE_CHARS: Final = 120
_TIMES: Final = (
    "started_at",
    "ended_at",
    "discovered_at",
    "ingested_at",
    "changed_at",
    "analyzed_at",
    "evicted_at",
)


class SessionPage(NamedTuple):
    """``sessions`` of ``total`` kept by the filter, from ``offset``."""

    sessions: list[dict[str, Any]]
    total: int
    offset: int
    limit: int | None

    @property
    def shown(self) -> int:
        return len(self.sessions)


def _title(row: Mapping[str, Any]) -> str:
    """The agent's title, else the first prompt (one line, cut), else ''."""
    text = row.get("title") or row.get("first_prompt") or ""
    text = " ".join(str(text).split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _costs(
    con: sqlite3.Connection, ids: Sequence[int], prices: Prices, mode: str = "auto"
) -> dict[int, tuple[float, int]]:
    """``{session_id: (usd, tokens)}`` of each session's own usage at today's prices, or the
    cost its agent recorded (``mode``: one of ``COST_MODES``)."""
    out: dict[int, tuple[float, int]] = {}
    for sid, model, *c in sq.usage_of_sessions(con, ids):
        usd, tokens = out.get(sid, (0.0, 0))
        row = priced(c, model, prices, mode)
        out[sid] = (usd + priced_usd(prices, model, row), tokens + sum(c[:5]))
    return out


def with_cost_mode(digest: dict[str, Any], mode: str) -> dict[str, Any]:
    """The digest with each cost's ``usd`` and ``usd_source`` those of ``mode`` (the digest
    keeps every mode's, ``usd_by_mode``; one built before them is priced by the table).
    ``auto`` is the digest as stored; another mode adds ``cost_mode``."""
    if mode == "auto":
        return digest
    out = {**digest, "cost_mode": mode}
    for key in ("cost", "subagent_cost", "cost_with_subagents"):
        part = digest.get(key)
        chosen = (part or {}).get("usd_by_mode", {}).get(mode)
        if part and chosen:
            out[key] = {**part, "usd": chosen["usd"], "usd_source": chosen["source"]}
    return out


def list_sessions(
    con: sqlite3.Connection,
    f: SessionFilter,
    prices: Prices,
    limit: int | None = 50,
    offset: int = 0,
    mode: str = "auto",
) -> SessionPage:
    """Sessions newest first (those with no known time last), each with a display title, its
    cost and tokens at today's prices, and ISO times beside the epoch-ms ones."""
    rows, total = sq.list_sessions(con, f, limit, offset)
    costs = _costs(con, [r["id"] for r in rows], prices, mode)
    for r in rows:
        usd, tokens = costs.get(r["id"], (0.0, 0))
        r["cost_usd"] = round(usd, 6)
        r["tokens"] = tokens
        r["display_title"] = _title(r)
        for k in _TIMES:
            r[k + "_iso"] = iso(r[k])
    return SessionPage(rows, total, offset, limit)


class Resolution(NamedTuple):
    """What a typed reference (``claude:<id>``, a bare id, a prefix) names: ``found`` one
    session, several (``ambiguous``: the candidates), or ``none``."""

    status: Literal["found", "ambiguous", "none"]
    session: dict[str, Any] | None
    candidates: list[str]


def resolve(con: sqlite3.Connection, ref: str) -> Resolution:
    matches = sq.find_sessions(con, ref.strip())
    if not matches:
        return Resolution("none", None, [])
    if len(matches) > 1:
        return Resolution("ambiguous", None, [m["uid"] for m in matches])
    return Resolution("found", matches[0], [])


class Lookup(NamedTuple):
    """One session: its row, its digest (None until the analyze pass built it), the sessions
    it spawned (subagents, forks) and its parent's row, and its files' problems."""

    resolution: Resolution
    digest: dict[str, Any] | None
    children: list[dict[str, Any]]
    parent: dict[str, Any] | None
    problems: dict[str, int]


def lookup(con: sqlite3.Connection, ref: str) -> Lookup:
    res = resolve(con, ref)
    if res.session is None:
        return Lookup(res, None, [], None, {})
    s = res.session
    raw = sq.digest_json(con, s["id"])
    parent = None
    if s["parent_uid"]:
        found = sq.find_sessions(con, s["parent_uid"], limit=1)
        parent = found[0] if found and found[0]["uid"] == s["parent_uid"] else None
    return Lookup(
        resolution=res,
        digest=json.loads(raw) if raw else None,  # orjson's import costs ~8 ms more
        children=sq.children(con, s["uid"]),
        parent=parent,
        problems=sq.file_problems(con, s["id"]),
    )


def complete_sessions(
    con: sqlite3.Connection, prefix: str, limit: int = 50
) -> list[dict[str, Any]]:
    """Sessions whose uid or native id starts with ``prefix``, for shell completion: their
    ``uid`` and ``title``."""
    return [
        {"uid": s["uid"], "title": _title(s)} for s in sq.find_sessions(con, prefix, limit=limit)
    ]


def complete_repos(con: sqlite3.Connection, prefix: str, limit: int = 50) -> list[str]:
    """Repo names and working directories starting with ``prefix``."""
    return sq.repos_starting(con, prefix, limit)

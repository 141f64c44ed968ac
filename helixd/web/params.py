"""URL query parameters -> the query layer's filters, the same for every page and endpoint.

``range`` (``24h``, ``7d``, ``30d``, ``90d``, ``1y``, ``all``) or ``since`` / ``until`` (as
``helixctl`` reads them: ``7d``, ``yesterday``, ISO-8601 …); ``agent`` (repeatable), ``repo``,
``model``, ``outcome``; ``limit`` / ``offset``; ``tz`` (the page's UTC offset in minutes, for
what a day is).  A bad value is a ``BadParam`` (HTTP 400) naming the parameter.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from helixd.adapters.registry import REGISTRY
from helixd.core.when import HELP, BadTime, parse_when

if TYPE_CHECKING:  # the query layer loads at the first request, not with the server
    from helixd.query.metrics import Scope
    from helixd.query.sessions import SessionFilter

RANGES: Final = {"24h": 86_400, "7d": 7 * 86_400, "30d": 30 * 86_400, "90d": 90 * 86_400,
                 "1y": 365 * 86_400, "all": None}  # fmt: skip
DEFAULT_RANGE: Final = "30d"
MAX_LIMIT: Final = 500
HOUR_MS: Final = 3_600_000
AGENTS: Final = frozenset(a.name for a in REGISTRY)


class BadParam(ValueError):
    """A query parameter this server does not accept; the message names it."""


def local_offset_s() -> int:
    return -time.altzone if time.daylight and time.localtime().tm_isdst else -time.timezone


@dataclass(frozen=True, slots=True)
class Filters:
    """The filters of one request, and how to write them back into a URL."""

    range: str | None = DEFAULT_RANGE
    since: int | None = None
    until: int | None = None
    since_text: str | None = None
    until_text: str | None = None
    agents: tuple[str, ...] = ()
    repo: str | None = None
    model: str | None = None
    outcome: str | None = None
    offset_s: int = 0
    extra: Mapping[str, str] = field(default_factory=dict)

    def scope(self) -> Scope:
        from helixd.query.metrics import Scope

        return Scope(self.since, self.until, self.agents, self.repo, self.model)

    def sessions(self) -> SessionFilter:
        from helixd.query.sessions import SessionFilter

        return SessionFilter(
            agents=self.agents,
            repo=self.repo,
            since=self.since,
            until=self.until,
            outcome=self.outcome,
            model=self.model,
        )

    def pairs(self, **change: Any) -> list[tuple[str, str]]:
        """The filters as URL parameters (``change``: values replaced; None drops one)."""
        out: list[tuple[str, str]] = []
        values: dict[str, Any] = {
            "range": self.range if self.range != DEFAULT_RANGE else None,
            "since": self.since_text,
            "until": self.until_text,
            "agent": list(self.agents),
            "repo": self.repo,
            "model": self.model,
            "outcome": self.outcome,
            **self.extra,
        }
        values.update(change)
        for k, v in values.items():
            if isinstance(v, list | tuple):
                out.extend((k, str(x)) for x in v)
            elif v not in (None, ""):
                out.append((k, str(v)))
        return out

    def query(self, **change: Any) -> str:
        q = urlencode(self.pairs(**change))
        return "?" + q if q else ""

    def with_(self, **change: Any) -> Filters:
        return replace(self, **change)


def _int(q: QueryParams, name: str, default: int, lo: int, hi: int) -> int:
    raw = q.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParam(f"{name}: want a whole number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise BadParam(f"{name}: want {lo}..{hi}, got {value}")
    return value


def page(q: QueryParams, default: int = 50) -> tuple[int, int]:
    """``(limit, offset)``."""
    return _int(q, "limit", default, 1, MAX_LIMIT), _int(q, "offset", 0, 0, 10**9)


def number(q: QueryParams, name: str, default: int, lo: int = 0, hi: int = 10**12) -> int:
    return _int(q, name, default, lo, hi)


def choice(q: QueryParams, name: str, options: tuple[str, ...], default: str) -> str:
    value = q.get(name) or default
    if value not in options:
        raise BadParam(f"{name}: want one of {', '.join(options)}, got {value!r}")
    return value


def filters(
    q: QueryParams, now_ms: int | None = None, default_range: str = DEFAULT_RANGE
) -> Filters:
    """The filters a request asks for (``BadParam`` naming the first bad one)."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    tz_min = _int(q, "tz", local_offset_s() // 60, -14 * 60, 14 * 60)
    since_text, until_text = q.get("since") or None, q.get("until") or None
    rng: str | None = q.get("range") or (None if since_text or until_text else default_range)
    since = until = None
    if rng is not None:
        if rng not in RANGES:
            raise BadParam(f"range: want one of {', '.join(RANGES)}, got {rng!r}")
        span = RANGES[rng]
        # whole hours: the hourly rollup answers (and the answer is the same all hour)
        since = None if span is None else (now - span * 1000) // HOUR_MS * HOUR_MS
    else:
        try:
            since = parse_when(since_text, now) if since_text else None
            until = parse_when(until_text, now) if until_text else None
        except BadTime as exc:
            raise BadParam(f"since/until: {exc} ({HELP})") from None
    agents = tuple(a for a in q.getlist("agent") if a)
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        raise BadParam(f"agent: unknown {unknown[0]!r} (known: {', '.join(sorted(AGENTS))})")
    return Filters(
        range=rng,
        since=since,
        until=until,
        since_text=since_text if rng is None else None,
        until_text=until_text if rng is None else None,
        agents=agents,
        repo=q.get("repo") or None,
        model=q.get("model") or None,
        outcome=q.get("outcome") or None,
        offset_s=tz_min * 60,
    )

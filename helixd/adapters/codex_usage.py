"""Codex token usage as ``UsageFact``s (pure): the rules X1-X7 of formats.md §9.2.

``UsageMapper`` is the usage half of the Codex adapter's per-file parser (``codex.py`` has the
plumbing).  Everything it remembers between reads lives in the file state: ``tot`` (the last
cumulative total), ``tur`` (``token_usage_record`` lines not yet paired with a compaction) and
``cids`` (compaction response ids not yet paired with a record).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters.base import Chunk
from helixd.core.records import Parsed, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import MAX_TOKENS, tokens

USAGE_KEYS: Final = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "cache_write_input_tokens",
)
STASH: Final = 64


def usage_counts(usage: Any, where: str) -> list[int]:
    """The usage counters in ``USAGE_KEYS`` order (missing ones are 0); a counter that is
    not a count (negative, too large, not a number) rejects the line."""
    if not isinstance(usage, dict):
        return [0] * len(USAGE_KEYS)
    values = [usage.get(key, 0) for key in USAGE_KEYS]
    if all(type(v) is int for v in values) and min(values) >= 0 and max(values) <= MAX_TOKENS:
        return values  # the usual case: plain integers in range
    return [tokens(v, f"{where}.{key}") for v, key in zip(values, USAGE_KEYS, strict=True)]


class UsageMapper(ABC):
    """``token_count`` and ``token_usage_record`` lines -> usage facts (a mixin of the
    Codex file parser, which supplies ``first_ts``)."""

    st: dict[str, Any]
    out: Parsed
    uid: str
    ts: int | None
    offset: int
    chunk: Chunk

    @abstractmethod
    def first_ts(self) -> int | None: ...

    def token_usage_record(self, p: Mapping[str, Any]) -> None:
        """Usage of one response (0.151+).  ``token_count`` already carries every response but
        a compaction request, so a record counts only once a ``compacted`` line names it."""
        rid = p.get("response_id")
        if not isinstance(rid, str) or not rid:
            return
        values = usage_counts(p.get("usage"), "payload.usage")
        model = self.st.get("model") or "unknown"
        cids: list[str] = self.st.get("cids", [])
        if rid in cids:
            self.st["cids"] = [c for c in cids if c != rid]
            self.fact(f"codex:resp:{rid}", values, self.ts, model)
            return
        stash: dict[str, list[Any]] = self.st.setdefault("tur", {})
        stash[rid] = [self.ts, model, *values]
        while len(stash) > STASH:
            stash.pop(next(iter(stash)))

    def token_count(self, p: Mapping[str, Any], replay: bool = False) -> None:
        """One fact per advance of the cumulative total (``replay``: only move the baseline)."""
        info = p.get("info")
        if not isinstance(info, dict):
            return  # rate limits only
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        prev: list[int] | None = self.st.get("tot")
        if isinstance(total, dict):
            cum = usage_counts(total, "info.total_token_usage")
            if cum == prev:
                return  # a re-emit: the total did not advance
            if isinstance(last, dict):
                delta = usage_counts(last, "info.last_token_usage")
            elif prev is not None and all(a >= b for a, b in zip(cum, prev, strict=True)):
                delta = [a - b for a, b in zip(cum, prev, strict=True)]
            elif prev is None and not self.st.get("derived"):
                delta = cum
            else:
                delta = [0] * len(USAGE_KEYS)  # a reset, or a derived file's baseline
        elif isinstance(last, dict):
            delta = usage_counts(last, "info.last_token_usage")
            cum = [a + b for a, b in zip(prev or [0] * len(USAGE_KEYS), delta, strict=True)]
        else:
            return
        self.st["tot"] = cum
        if not replay and any(delta):
            self.st["turn_out"] = (
                int(self.st.get("turn_out") or 0) + delta[USAGE_KEYS.index("output_tokens")]
            )
            key = f"codex:{self.st['sid']}:" + "/".join(map(str, cum))
            self.fact(key, delta, self.ts, self.st.get("model") or "unknown")

    def fact(self, key: str, c: list[int], ts: int | None, model: str) -> None:
        """Cached input and cache writes are parts of ``input_tokens``, reasoning of output."""
        inp, cached, out, reasoning, write = c
        cached = min(cached, inp)
        write = min(write, inp - cached)
        rank = f"{1 if self.st.get('sub') else 0}{self.first_ts() or 0:015d}"
        self.out.usage.append(
            UsageFact(
                dedup_key=key,
                session_uid=self.uid,
                ts=ts,
                model=model,
                input_tokens=inp - cached - write,
                output_tokens=out,
                cache_read_tokens=cached,
                cache_write_5m_tokens=write,
                reasoning_tokens=reasoning,
                rank=rank + self.chunk.ctx.path,
                offset=self.offset,
            )
        )

    def compaction(self, rid: str) -> None:
        """A ``compacted`` line names its request's response id: pair it with the record."""
        stash: dict[str, list[Any]] = self.st.setdefault("tur", {})
        if rid in stash:
            ts, model, *counts = stash.pop(rid)  # state a file's earlier reads stored
            counts = usage_counts(dict(zip(USAGE_KEYS, counts, strict=False)), "stashed")
            self.fact(f"codex:resp:{rid}", counts, parse_ts(ts), str(model))
        else:
            self.st["cids"] = [*self.st.get("cids", []), rid][-STASH:]

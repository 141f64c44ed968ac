"""Tier 2: the per-session digest (design spec §11.2, the stable JSON shape).

``build(facts, now)`` is pure: it turns the facts the store gathered for one session
(``Store.digest_facts``) into the digest dict.  ``analyze`` is the thin async runner that
rebuilds the digests of the given sessions and saves them.

Fields consumers may rely on (spec §11.2): session_uid, flavor, repo, domain, model,
started_at, ended_at, outcome, cost {input_tokens, output_tokens, cache_tokens, wall_clock_s,
turns, retries}, tool_histogram, event_count, kind_counts, markers, first_prompt,
last_assistant, error_snippets [{fingerprint, sample, count, tool}], schema_version.
Helix adds: provisional, outcome_rule, outcome_confidence, usage (the token split),
parent_uid, subagents, subagent_cost, cost_with_subagents, source.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from helixd.timeparse import iso

if TYPE_CHECKING:
    from helixd.store import Store

SCHEMA_VERSION: Final = 1
SNIPPET_CHARS: Final = 280
IDLE_CLOSE_MS: Final = 30 * 60 * 1000
FAIL_STREAK: Final = 3
DIGEST_BATCH: Final = 500

_NOISE = (
    (re.compile(r"(?:/[\w.\-@]+)+/?"), "<path>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"\d+"), "#"),
    (re.compile(r"(['\"`]).*?\1"), "<str>"),
    (re.compile(r"\s+"), " "),
)


def error_fingerprint(message: str) -> tuple[str, str]:
    """``(fingerprint, normalized)``: numbers, paths, hex ids and quoted strings are masked
    so that the same error with different details groups together."""
    text = message.strip().splitlines()[0] if message.strip() else ""
    norm = text.lower()
    for pattern, repl in _NOISE:
        norm = pattern.sub(repl, norm)
    norm = norm.strip()[:200]
    return hashlib.blake2b(norm.encode(), digest_size=6).hexdigest(), norm


def _snip(text: str | None) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _errors(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for tool, body, summary in rows:
        fp, _ = error_fingerprint(body or summary or "")
        entry = groups.setdefault(
            fp, {"fingerprint": fp, "sample": _snip(body or summary), "count": 0, "tool": tool}
        )
        entry["count"] += 1
    return sorted(groups.values(), key=lambda e: (-e["count"], e["fingerprint"]))[:20]


def count_retries(sequence: Iterable[Sequence[Any]]) -> int:
    """Tool calls repeating (same tool, same command/path) a call whose result failed.

    ``sequence`` holds ``(kind, tool, summary, is_error)`` of tool calls and results in
    ``seq`` order."""
    retries = 0
    last_call: tuple[Any, Any] | None = None
    failed: tuple[Any, Any] | None = None
    for kind, tool, summary, is_error in sequence:
        if kind == "tool_call":
            if failed is not None and (tool, summary) == failed:
                retries += 1
            failed = None
            last_call = (tool, summary)
        elif kind == "tool_result":
            failed = last_call if is_error else None
    return retries


def outcome(
    kinds_tail: Sequence[str], results_tail: Sequence[bool], messages: int
) -> tuple[str, float, str]:
    """``(outcome, confidence, rule)`` from the end of the session (spec OQ2 heuristic)."""
    if messages == 0:
        return "unknown", 0.2, "no conversation"
    if len(results_tail) >= FAIL_STREAK and all(results_tail[-FAIL_STREAK:]):
        return "fail", 0.6, f"last {FAIL_STREAK} tool results failed"
    last = kinds_tail[-1] if kinds_tail else None
    if last in ("user_msg", "human_intervention"):
        return "abandoned", 0.5, "session ends on a user turn"
    if last == "assistant_msg":
        return "success", 0.5, "session ends on an assistant reply"
    return "unknown", 0.3, f"session ends on {last}"


_PRICES: tuple[str, dict[str, dict[str, float]]] | None = None


def prices() -> tuple[str, dict[str, dict[str, float]]]:
    """The bundled offline price table ``(date, {model: USD per million tokens})``."""
    global _PRICES
    if _PRICES is None:
        from helixd.usage_report import load_prices

        _PRICES = load_prices((Path(__file__).parent / "prices.json").read_bytes())
    return _PRICES


def usd(by_model: dict[str, dict[str, int]]) -> float:
    """USD of per-model usage (unpriced models count 0; reasoning is inside output)."""
    from helixd.usage_report import cost

    table = prices()[1]
    return round(
        sum(
            cost(
                table,
                model,
                [
                    u["input_tokens"],
                    u["output_tokens"],
                    u["cache_read_tokens"],
                    u["cache_write_5m_tokens"],
                    u["cache_write_1h_tokens"],
                ],
            )
            for model, u in by_model.items()
        ),
        6,
    )


def _cost(usage: dict[str, int], wall: float, turns: int, retries: int) -> dict[str, Any]:
    cache_write = usage["cache_write_5m_tokens"] + usage["cache_write_1h_tokens"]
    return {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cache_tokens": usage["cache_read_tokens"] + cache_write,
        "cache_read_tokens": usage["cache_read_tokens"],
        "cache_write_tokens": cache_write,
        "reasoning_tokens": usage["reasoning_tokens"],
        "wall_clock_s": wall,
        "turns": turns,
        "retries": retries,
    }


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


def build(facts: dict[str, Any], now: int, idle_ms: int = IDLE_CLOSE_MS) -> dict[str, Any]:
    """The digest of one session from its ``Store.digest_facts`` entry (``tail`` holds the
    kinds of its last events and whether its last tool results failed)."""
    tail = facts["tail"]
    s = facts["session"]
    kinds: dict[str, int] = facts["kinds"]
    span_lo, span_hi = facts["span"] or (None, None)
    started = s["started_at"] if s["started_at"] is not None else span_lo
    ended = s["ended_at"] if s["ended_at"] is not None else span_hi
    wall = round(((ended or 0) - (started or 0)) / 1000, 3) if started and ended else 0.0
    retries = count_retries(facts["tool_sequence"])
    turns = kinds.get("user_msg", 0)
    messages = kinds.get("user_msg", 0) + kinds.get("assistant_msg", 0)
    label, confidence, rule = outcome(tail["kinds"], tail["errors"], messages)
    closed = bool(s["ended"]) or (ended is not None and now - ended > idle_ms)
    first = facts["first"]
    last = facts["last"]
    usage = facts["usage"]
    sub_usage = facts["subagent_usage"]
    problems = facts["problems"]
    own_usd = usd(facts["usage_by_model"])
    sub_usd = usd(facts.get("subagent_usage_by_model", {}))
    return {
        "session_uid": s["uid"],
        "flavor": s["agent"],
        "native_session_id": s["native_id"],
        "repo": s["repo"],
        "domain": None,
        "cwd": s["cwd"],
        "git_branch": s["git_branch"],
        "title": s["title"],
        "model": s["model"],
        "models": sorted(m for m in facts["usage_by_model"] if m),
        "started_at": iso(started),
        "ended_at": iso(ended),
        "outcome": label,
        "outcome_confidence": confidence,
        "outcome_rule": rule,
        "provisional": not closed,
        "cost": {**_cost(usage, wall, turns, retries), "usd": own_usd},
        "usage": {"responses": usage["responses"], "by_model": facts["usage_by_model"]},
        "tool_histogram": dict(sorted(((k or "?"), v) for k, v in facts["tools"].items())),
        "event_count": sum(kinds.values()),
        "kind_counts": dict(sorted(kinds.items())),
        "markers": {
            "errors": kinds.get("error", 0),
            "human_interventions": kinds.get("human_intervention", 0),
            "test_runs": kinds.get("test_run", 0),
            "edits": kinds.get("edit", 0),
            "retries": retries,
            "malformed_lines": problems["malformed_lines"],
            "unknown_records": problems["unknown_records"],
            "redactions": problems["redactions"],
            "source_files": problems["files"],
            "source_files_gone": problems["files_gone"],
        },
        "first_prompt": _snip(first[1] or first[0]) if first else "",
        "last_assistant": _snip(last[1] or last[0]) if last else "",
        "error_snippets": _errors(facts["errors"]),
        "parent_uid": s["parent_uid"],
        "agent_type": s["agent_type"],
        "subagents": facts["subagents"],
        "subagent_cost": {**_cost(sub_usage, 0.0, 0, 0), "usd": sub_usd}
        if facts["subagents"]
        else None,
        "cost_with_subagents": {
            **_cost(_add(usage, sub_usage), wall, turns, retries),
            "usd": round(own_usd + sub_usd, 6),
        },
        "price_table_date": prices()[0],
        "source": {
            "path": s["source_path"],
            "bytes": problems["source_bytes"],
            "adapter_version": s["adapter_version"],
        },
        "schema_version": SCHEMA_VERSION,
    }


async def analyze(
    store: Store, session_ids: Iterable[int], now: int, idle_ms: int = IDLE_CLOSE_MS
) -> int:
    """Rebuild and save the digests of ``session_ids``; returns how many were written."""
    ids = list(session_ids)
    for i in range(0, len(ids), DIGEST_BATCH):
        part = ids[i : i + DIGEST_BATCH]
        facts = await store.digest_facts(part)
        built = [(sid, build(f, now, idle_ms)) for sid, f in facts.items()]
        await store.save_digests([(sid, d, d["provisional"]) for sid, d in built], SCHEMA_VERSION)
    return len(ids)

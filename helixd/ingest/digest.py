"""Tier 2: the per-session digest (design spec §11.2, the stable JSON shape).

``build(facts, now)`` is pure: it turns the facts the store gathered for one session
(``Store.digest_facts``) into the digest dict.  ``analyze`` is the thin async runner that
rebuilds the digests of the given sessions and saves them.

Fields consumers may rely on (spec §11.2): session_uid, flavor, repo, domain, model,
started_at, ended_at, outcome, cost {input_tokens, output_tokens, cache_tokens, wall_clock_s,
turns, retries}, tool_histogram, event_count, kind_counts, markers, first_prompt,
last_assistant, error_snippets [{fingerprint, sample, count, tool}], schema_version.
Helix adds: provisional (and closed_by: session end / turn completed / idle), outcome_rule,
outcome_confidence, usage (the token split),
parent_uid, subagents, subagent_cost, cost_with_subagents, source, price_table_date,
tool_calls {total, by_status, duration_ms_p50, duration_ms_max}, test_runs {total, by_status,
last}, files {operations, paths, lines_added, lines_removed, by_language, accepted,
rejected}; each error snippet's ``first_seq``; bad_lines (the first quarantined lines of its
files: path, offset, length, reason and the first bytes of the line, kept raw).  The signals
themselves (with their event pointers) are saved beside the digest (``helixd.core.signals``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from helixd.adapters import adapter_named
from helixd.core.attribution import DEFAULT_DOMAIN, Naming, commit_message, is_commit_command
from helixd.core.pricing import bundled
from helixd.core.signals import Marker, Signals, extract, summarize
from helixd.core.timeparse import iso

if TYPE_CHECKING:
    from helixd.core.pricing import PriceTable
    from helixd.store.database import Store

# 2: tool_calls / test_runs / files summaries, first_seq; 3: domain a string, repo through
# git (repo_root), task_ref, commits
SCHEMA_VERSION: Final = 3
SNIPPET_CHARS: Final = 280
IDLE_CLOSE_MS: Final = 30 * 60 * 1000
FAIL_STREAK: Final = 3
DIGEST_BATCH: Final = 500


def _snip(text: str | None) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _errors(markers: Iterable[Marker]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for m in markers:
        if m.kind != "error" or m.fingerprint is None:
            continue
        entry = groups.setdefault(
            m.fingerprint,
            {
                "fingerprint": m.fingerprint,
                "sample": _snip(m.sample),
                "count": 0,
                "tool": m.tool,
                "first_seq": m.seq,
            },
        )
        entry["count"] += 1
    return sorted(groups.values(), key=lambda e: (-e["count"], e["fingerprint"]))[:20]


def outcome(
    kinds_tail: Sequence[str], results_tail: Sequence[bool], messages: int
) -> tuple[str, float, str]:
    """``(outcome, confidence, rule)`` from the end of the session (spec OQ2 heuristic:
    agentsview's rules, plus session errors, replies admitting failure and lost edits).

    ``kinds_tail`` holds the kinds of the last conversational events, oldest first, as
    ``store.facts._tails`` refines them: ``error`` is an error of the session itself (API
    error, timeout, expired login; a tool's error is its failed result), ``gave_up`` an
    assistant reply whose opening sentence admits failure, ``edit_result`` the result of a
    file change.  ``results_tail`` holds the error flags of the tool and edit results among
    them, in the same order."""
    if messages == 0:
        return "unknown", 0.2, "no conversation"
    if len(results_tail) >= FAIL_STREAK and all(results_tail[-FAIL_STREAK:]):
        return "fail", 0.6, f"last {FAIL_STREAK} tool results failed"
    last = kinds_tail[-1] if kinds_tail else None
    if last == "error":
        return "fail", 0.6, "session ends on errors, not a reply"
    if last in ("user_msg", "human_intervention"):
        return "abandoned", 0.5, "session ends on a user turn"
    if last == "gave_up":
        return "fail", 0.45, "final reply admits failure"
    if last == "assistant_msg":
        flags = iter(results_tail)
        edit_failed = False  # the last file change of the final turn
        for kind in kinds_tail:
            if kind in ("user_msg", "human_intervention"):
                edit_failed = False
            elif kind in ("tool_result", "edit_result"):
                failed = next(flags, False)
                edit_failed = failed if kind == "edit_result" else edit_failed
        if edit_failed:
            return "fail", 0.4, "last file edit failed and was not redone"
        return "success", 0.5, "session ends on an assistant reply"
    return "unknown", 0.3, f"session ends on {last}"


_BUNDLED: PriceTable | None = None


def prices() -> PriceTable:
    """The bundled offline price table ``(date, {model: USD per million tokens})``."""
    global _BUNDLED
    if _BUNDLED is None:
        _BUNDLED = bundled()
    return _BUNDLED


_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "reasoning_tokens",
    "responses",
    "recorded_cost_usd",
    "costed",
)


def usd(
    by_model: dict[str, dict[str, Any]], table: PriceTable | None = None, mode: str = "auto"
) -> float:
    """USD of per-model usage in a ``--cost`` mode (``helixd.core.usage_report.COST_MODES``;
    unpriced models count 0; reasoning is inside output)."""
    return costs(by_model, table)[mode][0]


def costs(
    by_model: dict[str, dict[str, Any]], table: PriceTable | None = None
) -> dict[str, tuple[float, str]]:
    """``{mode: (usd, source)}`` for every ``--cost`` mode: what ``lookup`` shows and says
    priced it (``auto``: the cost the agent recorded where it did, else the table's)."""
    from helixd.core.usage_report import COST_MODES, cost_source, priced, priced_usd

    rates = (table or prices())[1]
    out: dict[str, tuple[float, str]] = {}
    for mode in COST_MODES:
        spent, by_recorded, by_table = 0.0, 0, 0
        for model, u in by_model.items():
            row = priced([u.get(k) or 0 for k in _FIELDS], model, rates, mode)
            spent += priced_usd(rates, model, row)
            by_recorded, by_table = by_recorded + row[10], by_table + row[11]
        out[mode] = (round(spent, 6), cost_source([0] * 10 + [by_recorded, by_table]))
    return out


def _by_mode(priced: dict[str, tuple[float, str]]) -> dict[str, Any]:
    """``usd_source`` (what priced ``usd``: a key of ``COST_SOURCES``) and the dollars in
    each ``--cost`` mode (``usd_by_mode``) with their sources, for ``lookup --cost``."""
    return {
        "usd_source": priced["auto"][1],
        "usd_by_mode": {m: {"usd": round(v, 6), "source": s} for m, (v, s) in priced.items()},
    }


def _both(a: str, b: str) -> str:
    """The source of a sum of two priced parts."""
    parts = {p for s in (a, b) if s != "none" for p in s.split("+")}
    return "+".join(p for p in ("recorded", "table") if p in parts) or "none"


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


def usage_recorded(agent: str, responses: int) -> dict[str, Any]:
    """``usage_recorded`` (the session has token usage at all) and, when it has none,
    ``usage_note``: why — the agent's own declaration (``Adapter.usage_note``);
    ``usage_approximate``: why the counts are not exact (``Adapter.usage_approximate``),
    None when they are."""
    try:
        adapter = adapter_named(agent)
    except KeyError:
        adapter = None
    approximate = (adapter.usage_approximate or None) if adapter is not None else None
    if responses:
        return {"usage_recorded": True, "usage_note": None, "usage_approximate": approximate}
    if adapter is None:
        return {
            "usage_recorded": False,
            "usage_note": "no token usage recorded",
            "usage_approximate": None,
        }
    default = "the agent records no token usage" if not adapter.records_usage else ""
    note = adapter.usage_note or default or "no token usage recorded for this session"
    return {"usage_recorded": False, "usage_note": note, "usage_approximate": None}


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


def build(
    facts: dict[str, Any],
    now: int,
    idle_ms: int = IDLE_CLOSE_MS,
    table: PriceTable | None = None,
    sig: Signals | None = None,
) -> dict[str, Any]:
    """The digest of one session from its ``Store.digest_facts`` entry (``tail`` holds the
    kinds of its last events and whether its last tool results failed); ``sig`` are its
    signals (extracted from ``facts["signal_rows"]`` when not given)."""
    if sig is None:
        sig = extract(facts["signal_rows"])
    table = table or prices()
    tail = facts["tail"]
    s = facts["session"]
    kinds: dict[str, int] = facts["kinds"]
    span_lo, span_hi = facts["span"] or (None, None)
    started = s["started_at"] if s["started_at"] is not None else span_lo
    ended = s["ended_at"] if s["ended_at"] is not None else span_hi
    wall = round(((ended or 0) - (started or 0)) / 1000, 3) if started and ended else 0.0
    retries = sig.count("retry")
    turns = kinds.get("user_msg", 0)
    messages = kinds.get("user_msg", 0) + kinds.get("assistant_msg", 0)
    label, confidence, rule = outcome(tail["kinds"], tail["errors"], messages)
    closed_by = (
        "session end"
        if s["ended"]
        else "turn completed"
        if facts.get("ends_on_completion")
        else "idle"
        if ended is not None and now - ended > idle_ms
        else None
    )
    closed = closed_by is not None
    first = facts["first"]
    last = facts["last"]
    usage = facts["usage"]
    sub_usage = facts["subagent_usage"]
    problems = facts["problems"]
    own = costs(facts["usage_by_model"], table)
    sub = costs(facts.get("subagent_usage_by_model", {}), table)
    own_usd, sub_usd = own["auto"][0], sub["auto"][0]
    return {
        "session_uid": s["uid"],
        "flavor": s["agent"],
        "native_session_id": s["native_id"],
        "repo": s["repo"],
        "domain": s.get("domain") or DEFAULT_DOMAIN,
        "repo_root": s.get("repo_root"),
        "task_ref": s.get("task_ref"),
        "cwd": s["cwd"],
        "git_branch": s["git_branch"],
        "git_commit": s.get("git_commit"),
        "title": s["title"],
        "model": s["model"],
        "models": sorted(m for m in facts["usage_by_model"] if m),
        "started_at": iso(started),
        "ended_at": iso(ended),
        "outcome": label,
        "outcome_confidence": confidence,
        "outcome_rule": rule,
        "provisional": not closed,
        "closed_by": closed_by,
        "cost": {**_cost(usage, wall, turns, retries), "usd": own_usd, **_by_mode(own)},
        "usage": {"responses": usage["responses"], "by_model": facts["usage_by_model"]},
        **usage_recorded(s["agent"], usage["responses"]),
        "tool_histogram": dict(sorted(((k or "?"), v) for k, v in facts["tools"].items())),
        "event_count": sum(kinds.values()),
        "kind_counts": dict(sorted(kinds.items())),
        "markers": {
            "errors": kinds.get("error", 0),
            "human_interventions": kinds.get("human_intervention", 0),
            "test_runs": len(sig.test_runs),
            "edits": kinds.get("edit", 0),
            "retries": retries,
            "malformed_lines": problems["malformed_lines"],
            "unknown_records": problems["unknown_records"],
            "redactions": problems["redactions"],
            "source_files": problems["files"],
            "source_files_gone": problems["files_gone"],
        },
        "bad_lines": facts.get("bad_lines", []),
        "first_prompt": _snip(first[1] or first[0]) if first else "",
        "last_assistant": _snip(last[1] or last[0]) if last else "",
        "error_snippets": _errors(sig.markers),
        "commits": commits(sig),
        **summarize(sig),
        "parent_uid": s["parent_uid"],
        "agent_type": s["agent_type"],
        "subagents": facts["subagents"],
        "subagent_cost": {**_cost(sub_usage, 0.0, 0, 0), "usd": sub_usd, **_by_mode(sub)}
        if facts["subagents"]
        else None,
        "cost_with_subagents": {
            **_cost(_add(usage, sub_usage), wall, turns, retries),
            "usd": round(own_usd + sub_usd, 6),
            **_by_mode({m: (own[m][0] + sub[m][0], _both(own[m][1], sub[m][1])) for m in own}),
        },
        "price_table_date": table[0],
        "source": {
            "path": s["source_path"],
            "bytes": problems["source_bytes"],
            "adapter_version": s["adapter_version"],
        },
        "schema_version": SCHEMA_VERSION,
    }


def commits(sig: Signals) -> list[dict[str, Any]]:
    """The ``git commit`` runs among the session's tool calls (code-o11y: sessions ↔
    commits): the call's ``seq``, time, status and the message given inline (``-m``)."""
    found = []
    for call in sig.tool_calls:
        if "commit" not in call.target:  # most calls: no regex, no split
            continue
        command = call.target.split(": ", 1)[1] if call.target.startswith(f"{call.tool}: ") else ""
        if command and is_commit_command(command):
            found.append(
                {
                    "seq": call.call_seq,
                    "ts": iso(call.ts),
                    "status": call.status,
                    "message": commit_message(command),
                }
            )
    return found


Built = tuple[int, dict[str, Any], bool, Signals]  # (session id, digest, provisional, signals)
# ``builder(ids, now, idle_ms)``: ``(read_at, built)`` for the sessions, built elsewhere with
# the same price table (``ParsePool.digest_builder``: a parse worker reads the facts, builds)
Builder = Callable[[Sequence[int], int, int], Awaitable[tuple[int, list[Built]]]]


def build_all(
    facts: dict[int, dict[str, Any]], now: int, idle_ms: int, table: PriceTable
) -> list[Built]:
    """The digests and signals of the sessions whose facts are given (pure)."""
    saved = []
    for sid, f in facts.items():
        sig = extract(f["signal_rows"])
        d = build(f, now, idle_ms, table, sig)
        saved.append((sid, d, d["provisional"], sig))
    return saved


_TABLES: dict[int, PriceTable] = {}  # in a parse worker: the tables sent, by their key


def build_from(
    db: str, ids: Sequence[int], now: int, idle_ms: int, key: int, table: PriceTable | None
) -> tuple[int, list[Built]]:
    """(in a parse worker) Read the sessions' facts from the store file, read-only, and
    build their digests: the whole of a digest but its save, off the ingesting process.
    ``table`` comes with a worker's first part and is kept under ``key`` for the next."""
    from helixd.store.facts import read_digest_facts

    if table is not None:
        _TABLES[key] = table
    read_at, facts = read_digest_facts(db, ids)
    return read_at, build_all(facts, now, idle_ms, _TABLES[key])


async def analyze_stale(
    store: Store,
    settings: Any,
    table: PriceTable,
    now: int | None = None,
    max_events: int | None = None,
    pick: Callable[[list[int]], list[int]] | None = None,
) -> int:
    """Rebuild the digests that are stale at ``now`` (``Store.sessions_to_analyze``; with
    ``max_events``, only of sessions that small; with ``pick``, only the ones it picks of
    them), with the idle time and the repo naming of ``settings`` (the full ``Settings``):
    the analyze step of every sweep, scheduled pass and command.  Returns how many."""
    from helixd.store.database import now_ms

    idle_ms = int(settings.daemon.idle_close_minutes * 60_000)
    now = now_ms() if now is None else now
    ids = await store.sessions_to_analyze(now, idle_ms, max_events)
    if pick is not None:
        ids = pick(ids)
    return await analyze(store, ids, now, idle_ms, table, Naming.from_settings(settings.repos))


async def analyze(
    store: Store,
    session_ids: Iterable[int],
    now: int,
    idle_ms: int = IDLE_CLOSE_MS,
    table: PriceTable | None = None,
    naming: Naming | None = None,
    builder: Builder | None = None,
) -> int:
    """Rebuild and save the digests and signals of ``session_ids``, with each session's
    repo, domain and task reference resolved first (``helixd.ingest.attribution``);
    returns how many.

    With a ``builder`` (after a backfill: the parse workers, warm and otherwise idle; made
    with this ``table``), parts of sessions are read and built there while this process
    saves them, and reads and builds a part itself whenever the builder already has enough
    to do (``helixd.ingest.digest_parts``): the digest phase runs on two cores instead of one
    (issue 12), each side taking what it has time for."""
    from helixd.ingest.attribution import resolve_projects, with_task_refs

    ids = list(session_ids)
    table = table or prices()
    naming = naming or Naming()
    if builder is not None:
        from helixd.ingest.digest_parts import analyze_in_parts

        return await analyze_in_parts(store, ids, now, idle_ms, table, naming, builder)
    for i in range(0, len(ids), DIGEST_BATCH):
        part = ids[i : i + DIGEST_BATCH]
        projects = await resolve_projects(store, part, naming)
        # what was read is what gets analyzed: a change committed after this instant (an
        # ingest between the read and the save) leaves the session to analyze again (one
        # committed within the same millisecond after the read waits for the next change)
        read_at = int(time.time() * 1000)
        facts = await store.digest_facts(part)
        saved = build_all(facts, now, idle_ms, table)
        await store.save_attribution(with_task_refs(projects, saved, naming))
        await store.save_digests(saved, SCHEMA_VERSION, read_at)
    return len(ids)

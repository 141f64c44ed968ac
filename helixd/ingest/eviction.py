"""The retention pass (design spec §5.2): measure, plan, analyze now if the hard cap asks
for it, drop, give the pages back.

``evict_pass`` is what the daemon's scheduled job and ``helixctl evict`` run.  The decision
is the pure ``helixd.core.retention.select_evictions``; the SQL is ``helixd.store.evict``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from helixd.core.retention import Plan, Policy, quick_plan, select_evictions
from helixd.ingest import digest
from helixd.store.faults import classify

if TYPE_CHECKING:
    from helixd.store.database import Store

log = structlog.get_logger("helixd.retention")

Analyze = Callable[[], Awaitable[Any]]
LOSS_REASON = "Tier 1 over the hard cap with only un-analyzed data left, after analyzing now"


async def plan_pass(
    store: Store, policy: Policy, now: int, analyze: Analyze | None
) -> tuple[Plan, dict[str, Any]]:
    """The plan, after analyzing now when the hard cap asks for it (and ``analyze`` is
    given); also returns what happened on the way (``analyzed_now``, errors) and the full-text
    index's part of Tier 1 (``index_bytes_before``).  When the running totals and the
    sessions' times show that nothing can be chosen (``quick_plan``), that empty plan, with
    the same figures, without measuring every session."""
    notes: dict[str, Any] = {"analyzed_now": False, "analyze_error": None}
    known = await store.retention_bounds(policy.backstop_stage)
    quick = quick_plan(
        known["tier1_bytes"],
        known["oldest_activity"],
        now,
        policy,
        distilled_bytes=known["distilled_bytes"],
    )
    if quick is not None:
        notes["index_bytes_before"] = known["index_bytes"]
        return quick, notes
    usage = await store.retention_usage()
    notes["index_bytes_before"] = usage["index_bytes"]
    plan = _plan(usage, now, policy, analyzed_now=False)
    if plan.analyze_first and analyze is not None:
        notes["analyzed_now"] = True
        try:
            await analyze()
        except Exception as exc:  # analysis failing is what the last resort is for
            if classify(exc, store.path) is not None:
                raise  # but not a locked or full store: the pass waits and is retried
            notes["analyze_error"] = f"{type(exc).__name__}: {exc}"
            log.warning("analyze_now_failed", error=notes["analyze_error"])
        usage = await store.retention_usage()
        plan = _plan(usage, now, policy, analyzed_now=True)
    return plan, notes


def _plan(usage: dict[str, Any], now: int, policy: Policy, analyzed_now: bool) -> Plan:
    return select_evictions(
        usage["rows"],
        now,
        policy,
        distilled_bytes=usage["distilled_bytes"],
        other_bytes=usage["other_bytes"],
        analyzed_now=analyzed_now,
    )


async def evict_pass(
    store: Store,
    retention_settings: Any,
    now: int,
    analyze: Analyze | None,
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    """One retention pass over ``store``.  ``analyze`` (async, no arguments) is called
    when Tier 1 is over the hard cap with un-analyzed bulk left; ``retention_settings`` is
    a ``RetentionSettings``.  Returns a summary (JSON-ready)."""
    policy = Policy.from_settings(retention_settings)
    t0 = time.perf_counter()
    size_before = store.file_bytes()
    plan, notes = await plan_pass(store, policy, now, analyze)
    summary: dict[str, Any] = {
        "dry_run": dry_run,
        "usage_before": plan.usage_before,
        "usage_after": plan.usage_after,
        "soft_cap": policy.soft_cap,
        "hard_cap": policy.hard_cap,
        "stage_payloads_first": policy.stage_payloads_first,
        "backstop_keeps_events": policy.backstop_keeps_events,
        "distilled_bytes": plan.distilled_bytes,
        "distilled_cap": policy.distilled_cap,
        "tier2_over_cap": plan.tier2_over,
        "analyze_first": plan.analyze_first or notes["analyzed_now"],
        **notes,
        "evictions": [e.as_dict() for e in plan.evictions],
        "data_loss": [e.as_dict() for e in plan.data_loss],
        "bytes_planned": plan.bytes_freed,
        "file_bytes_before": size_before,
    }
    if plan.tier2_over:
        log.warning("distilled_over_cap", bytes=plan.distilled_bytes, cap=policy.distilled_cap)
    if dry_run:
        summary["seconds"] = round(time.perf_counter() - t0, 3)
        return summary
    done = await store.evict(plan.evictions, now, LOSS_REASON) if plan.evictions else []
    summary["applied"] = len(done)
    summary["bytes_freed"] = sum(e.bytes for e in done)
    summary["usage_after"] = plan.usage_before - summary["bytes_freed"]
    summary["index_bytes_after"] = (
        (await store.retention_usage())["index_bytes"] if done else (summary["index_bytes_before"])
    )
    summary["vacuum"] = await store.shrink() if done else None
    summary["file_bytes_after"] = store.file_bytes()
    summary["seconds"] = round(time.perf_counter() - t0, 3)
    for e in done:
        if e.pass_ == "overflow":
            log.warning("data_loss", uid=e.uid, bytes=e.bytes, stage=e.stage, reason=LOSS_REASON)
    if done:
        log.info(
            "evicted",
            sessions=len({e.session_id for e in done}),
            bytes=summary["bytes_freed"],
            file_before=size_before,
            file_after=summary["file_bytes_after"],
        )
    return summary


async def sweep_evict(store: Store, settings: Any, table: Any, now: int) -> dict[str, Any]:
    """The retention pass that ends a one-shot sweep (``helixctl ingest``, ``helixd
    --once``; design spec §5.2 "runs after each ingest+analyze sweep"), with the sweep's own
    analysis as its "analyze now".  ``settings`` is the full ``Settings``."""

    async def analyze_now() -> int:
        return await digest.analyze_stale(store, settings, table, now)

    return await evict_pass(store, settings.retention, now, analyze_now)

"""Retention policy (design spec §5.2), pure: which sessions' Tier 1 rows go, and why.

No I/O: ``select_evictions(rows, now, policy)`` takes one ``SessionUsage`` per session (the
Tier 1 bytes it still holds and its watermarks) and returns a ``Plan``.  The store measures
the rows and applies the plan (``helixd.store.evict``); ``helixd.ingest.eviction`` runs the pass.

Tier 1 of a session is two stages deep:

* stage 1 drops its **raw blocks** (the verbatim source lines, the only place the bulky
  bodies live: tool outputs, thinking, images) and keeps its ``events`` rows (summaries and
  conversation text);
* stage 2 drops its ``events`` rows too, and its entries in the full-text index (design
  spec §9: eviction is a privacy bound; the index is Tier 1 and counted in its budget).

Its ``sessions`` row, usage facts and digest (Tier 2) are never dropped.  With
``stage_payloads_first`` every pass runs stage 1 over all its candidates before it takes
any session to stage 2; without it a session goes whole at once.

The algorithm, in order:

1. usage = the Tier 1 bytes of every session (plus ``other_bytes``: raw blocks of files
   that belong to no session, counted but never chosen);
2. backstop: analyzed sessions whose last activity is older than ``max_age_ms`` lose their
   whole Tier 1 (stage 2, as spec §5.2 says; only their raw blocks, stage 1, when
   ``backstop_keeps_events`` and staging are on), whatever the budget;
3. budget: while usage > soft cap, the analyzed session with the oldest ``analyzed_at``
   goes (stage by stage); when no analyzed bytes are left the pass stops — un-analyzed
   data is never dropped to meet the soft cap;
4. hard cap: if usage is still > hard cap and un-analyzed bytes remain, the plan asks the
   caller to analyze now (``analyze_first``) and plan again with ``analyzed_now=True``;
   only then, as a last resort, the oldest un-analyzed sessions go until usage ≤ hard cap,
   each listed in ``Plan.data_loss``;
5. Tier 2 guard: distilled bytes over ``distilled_cap`` set ``tier2_over``; nothing is
   dropped for it.

When the store's Tier 1 total is within both caps and no session is past the age, none of
these steps can choose anything: ``quick_plan`` answers that from the running totals and
the sessions' times, without measuring every session.

A session counts as analyzed when its digest is at least as new as its last change
(``analyzed_at`` set and ``changed_at <= analyzed_at``): bytes that arrived after the digest
was built have not been analyzed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

DAY_MS: Final = 86_400_000
Pass = Literal["backstop", "budget", "overflow"]


@dataclass(frozen=True, slots=True)
class SessionUsage:
    """One session's Tier 1 footprint and watermarks (epoch milliseconds)."""

    id: int
    uid: str
    raw_bytes: int
    event_bytes: int
    analyzed_at: int | None = None
    changed_at: int | None = None
    last_activity_at: int | None = None
    evicted_at: int | None = None
    index_bytes: int = 0  # its share of the full-text index (goes with the events)

    @property
    def analyzed(self) -> bool:
        return self.analyzed_at is not None and (
            self.changed_at is None or self.changed_at <= self.analyzed_at
        )


@dataclass(frozen=True, slots=True)
class Policy:
    soft_cap: int
    hard_cap: int
    max_age_ms: int
    distilled_cap: int
    stage_payloads_first: bool = True
    backstop_keeps_events: bool = False

    @classmethod
    def from_settings(cls, retention: Any) -> Policy:
        """From a ``RetentionSettings`` (read by attribute: the core does not import config)."""
        return cls(
            soft_cap=int(retention.raw_soft_cap_bytes),
            hard_cap=int(retention.raw_hard_cap_bytes),
            max_age_ms=int(float(retention.raw_max_age_days) * DAY_MS),
            distilled_cap=int(retention.distilled_cap_bytes),
            stage_payloads_first=bool(getattr(retention, "stage_payloads_first", True)),
            backstop_keeps_events=bool(getattr(retention, "backstop_keeps_events", False)),
        )

    @property
    def backstop_stage(self) -> int:
        return 1 if self.stage_payloads_first and self.backstop_keeps_events else 2


@dataclass(frozen=True, slots=True)
class Eviction:
    """Take session ``session_id`` to ``stage``; ``bytes`` is what that frees."""

    session_id: int
    uid: str
    pass_: Pass
    stage: int
    bytes: int
    analyzed_at: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "uid": self.uid,
            "pass": self.pass_,
            "stage": self.stage,
            "bytes": self.bytes,
            "analyzed_at": self.analyzed_at,
        }


@dataclass(slots=True)
class Plan:
    usage_before: int
    usage_after: int
    evictions: list[Eviction] = field(default_factory=list)
    analyze_first: bool = False
    distilled_bytes: int = 0
    tier2_over: bool = False

    @property
    def data_loss(self) -> list[Eviction]:
        return [e for e in self.evictions if e.pass_ == "overflow"]

    @property
    def bytes_freed(self) -> int:
        return self.usage_before - self.usage_after


class _Left:
    """What each session still holds while the plan is being made."""

    def __init__(self, rows: Sequence[SessionUsage]) -> None:
        self.raw = {r.id: max(r.raw_bytes, 0) for r in rows}
        self.events = {r.id: max(r.event_bytes, 0) + max(r.index_bytes, 0) for r in rows}

    def freed_by(self, sid: int, stage: int) -> int:
        return self.raw[sid] + (self.events[sid] if stage >= 2 else 0)

    def take(self, sid: int, stage: int) -> int:
        freed = self.freed_by(sid, stage)
        self.raw[sid] = 0
        if stage >= 2:
            self.events[sid] = 0
        return freed


def _stages(policy: Policy) -> tuple[int, ...]:
    return (1, 2) if policy.stage_payloads_first else (2,)


def quick_plan(
    tier1_bytes: int,
    oldest_activity: int | None,
    now: int,
    policy: Policy,
    *,
    distilled_bytes: int = 0,
) -> Plan | None:
    """The plan ``select_evictions`` would make, from bounds alone, when no step of it can
    choose anything; None when one might (then the caller measures every session).

    ``tier1_bytes`` is the store's whole Tier 1 (what ``select_evictions`` sums from the
    rows and ``other_bytes``); ``oldest_activity`` the earliest last activity (its
    ``analyzed_at`` where it has no other time) of the sessions step 2 could take —
    analyzed, and holding what the backstop's stage drops —: none past the age and a total
    within both caps leave the backstop, the budget and the hard cap nothing to do."""
    past_age = oldest_activity is not None and now - oldest_activity > policy.max_age_ms
    if past_age or tier1_bytes > policy.soft_cap or tier1_bytes > policy.hard_cap:
        return None
    plan = Plan(usage_before=tier1_bytes, usage_after=tier1_bytes, distilled_bytes=distilled_bytes)
    plan.tier2_over = distilled_bytes > policy.distilled_cap
    return plan


def select_evictions(
    rows: Iterable[SessionUsage],
    now: int,
    policy: Policy,
    *,
    distilled_bytes: int = 0,
    other_bytes: int = 0,
    analyzed_now: bool = False,
) -> Plan:
    """The §5.2 plan for ``rows`` at ``now``.  ``analyzed_now`` says the caller has just
    analyzed (step 4) and allows the recorded last-resort data-loss path."""
    rows = list(rows)
    left = _Left(rows)
    usage = sum(left.raw.values()) + sum(left.events.values()) + max(other_bytes, 0)
    plan = Plan(usage_before=usage, usage_after=usage, distilled_bytes=distilled_bytes)
    plan.tier2_over = distilled_bytes > policy.distilled_cap

    def evict(row: SessionUsage, pass_: Pass, stage: int) -> None:
        nonlocal usage
        freed = left.take(row.id, stage)
        if freed > 0:
            usage -= freed
            plan.evictions.append(Eviction(row.id, row.uid, pass_, stage, freed, row.analyzed_at))

    analyzed = sorted((r for r in rows if r.analyzed), key=lambda r: (r.analyzed_at, r.id))
    # 2. backstop
    backstop_stage = policy.backstop_stage
    for row in analyzed:
        last = row.last_activity_at if row.last_activity_at is not None else row.analyzed_at
        if last is not None and now - last > policy.max_age_ms:
            evict(row, "backstop", backstop_stage)
    # 3. budget
    for stage in _stages(policy):
        for row in analyzed:
            if usage <= policy.soft_cap:
                break
            evict(row, "budget", stage)
    # 4. hard cap
    pending = sorted(
        (r for r in rows if not r.analyzed and left.freed_by(r.id, 2) > 0),
        key=lambda r: (r.last_activity_at if r.last_activity_at is not None else 0, r.id),
    )
    if usage > policy.hard_cap and pending:
        if not analyzed_now:
            plan.analyze_first = True
        else:
            for stage in _stages(policy):
                for row in pending:
                    if usage <= policy.hard_cap:
                        break
                    evict(row, "overflow", stage)
    plan.usage_after = usage
    return plan

"""Time-range attribution (Hegel's phases, ``metrics-correlation-hegel.md``): the usage
records and the activity of a range summed per phase.

Pure: no I/O and no SQL (``helixd.query.usage`` reads the rows).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from helixd.core.usage_report import COUNTERS, Counts, entry_of, put_usage

if TYPE_CHECKING:
    from helixd.core.pricing import Prices


# -- time-range attribution --------------------------------------------------------------
BEFORE: Final = "(before first phase)"


ACTIVITY_LIST: Final = 100  # commands / edited paths listed per phase (all are counted)


def attribute(
    records: Iterable[Sequence[Any]],
    transitions: Sequence[tuple[int, str]],
    prices: Prices,
    activity: Iterable[tuple[int | None, str, str]] = (),
    mode: str = "auto",
) -> dict[str, Any]:
    """Sum usage records ``(ts, model, *COUNTERS)`` per phase: phase i owns
    ``[t_i, t_{i+1})`` (the last is open-ended), so a record exactly on a boundary belongs
    to the later phase.  Records before the first transition go to ``BEFORE``; without
    transitions there are no phases, only the total.  Every phase is reported, one with no
    usage as zeros; a phase that recurs keeps one window per occurrence (``index``).
    ``turns`` counts the responses (Hegel's assistant turns).  ``activity`` —
    ``(ts, "bash" | "edit", command or path)`` — is counted and listed per phase the same
    way (``bash_commands``, ``file_edits``; items of unknown time are left out)."""
    ordered = sorted(transitions)
    starts = [t for t, _ in ordered]
    windows: dict[int, dict[str, Counts]] = {}
    acts: dict[int, dict[str, list[str]]] = {}
    total: dict[str, Counts] = {}
    for ts, model, *c in records:
        i = bisect_right(starts, ts) - 1
        put_usage(windows.setdefault(i, {}), model, c, prices, mode)
        put_usage(total, model, c, prices, mode)
    for ts, what, text in activity:
        if ts is None:
            continue
        i = bisect_right(starts, ts) - 1
        acts.setdefault(i, {"bash": [], "edit": []}).setdefault(what, []).append(text)
    shown = set(range(len(ordered)))
    if -1 in windows or -1 in acts:
        shown.add(-1)
    phases = [
        {
            "index": i,
            "phase": ordered[i][1] if i >= 0 else BEFORE,
            "start": ordered[i][0] if i >= 0 else None,
            "end": ordered[i + 1][0] if 0 <= i < len(ordered) - 1 else None,
            **entry_of(windows.get(i, {}), prices),
            "turns": sum(c[COUNTERS.index("responses")] for c in windows.get(i, {}).values()),
            **_activity(acts.get(i, {})),
        }
        for i in sorted(shown)
        if ordered
    ]
    overall = entry_of(total, prices)
    overall["turns"] = sum(c[COUNTERS.index("responses")] for c in total.values())
    return {"total": overall, "phases": phases}


def _activity(acts: Mapping[str, list[str]]) -> dict[str, Any]:
    bash, edits = acts.get("bash", []), acts.get("edit", [])
    return {
        "bash_commands": len(bash),
        "file_edits": len(edits),
        "commands": bash[:ACTIVITY_LIST],
        "edited_files": sorted(set(edits))[:ACTIVITY_LIST],
    }

"""What the dashboard's metrics share: the time steps (a slot is ``(epoch seconds +
offset_s) // step_s``: days, hours or weeks in a fixed UTC offset) and how a rate is
rounded."""

from __future__ import annotations

from typing import Final

from helixd.core.timeparse import iso

DAY: Final = 86_400
HOUR: Final = 3_600
WEEK: Final = 7 * DAY
STEPS: Final = {"hour": HOUR, "day": DAY, "week": WEEK}


def rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def slot_start(slot: int, step_s: int, offset_s: int) -> str | None:
    return iso((slot * step_s - offset_s) * 1000)

"""Times as people type them, for every ``--since``/``--until`` and every filter of the API:
``7d``, ``12h``, ``30m``, ``2w`` (that long ago), ``today``, ``yesterday``, ``now``, an
ISO-8601 date or time, or ``YYYYMMDD``.  Pure: the current instant and the zone are passed in.

A day word or a bare date means the start of that local day in ``tz`` (None: the system's
zone); a time without a zone is read in ``tz`` too.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Final

_AGO: Final = re.compile(r"(\d+)\s*(m|min|mins|h|hr|hrs|d|day|days|w|wk|wks|week|weeks)")
_UNIT_S: Final = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
HELP: Final = "7d, 12h, 30m, 2w, today, yesterday, YYYY-MM-DD, YYYYMMDD or ISO-8601"
FIRST_YEAR: Final = 1970  # a day outside these years is a typo, not a time to report on
LAST_YEAR: Final = 2999


class BadTime(ValueError):
    """Not a time this module reads; the message lists the forms it does."""


def _local(moment: datetime, tz: tzinfo | None) -> datetime:
    return moment.astimezone(tz) if tz else moment.astimezone()


def parse_day(text: str, now_ms: int, tz: tzinfo | None = None) -> date:
    """A local calendar day: ``today``, ``yesterday``, ``Nd`` (N days ago), a date."""
    value = text.strip().lower()
    today = _local(datetime.fromtimestamp(now_ms / 1000).astimezone(), tz).date()
    if value == "today":
        return today
    if value == "yesterday":
        return today - timedelta(days=1)
    m = _AGO.fullmatch(value)
    if m and m.group(2)[0] in "dw":
        return today - timedelta(seconds=int(m.group(1)) * _UNIT_S[m.group(2)[0]])
    if re.fullmatch(r"\d{8}", value):
        value = f"{value[:4]}-{value[4:6]}-{value[6:]}"
    try:
        day = date.fromisoformat(value[:10]) if len(value) >= 10 else date.fromisoformat(value)
    except ValueError:
        raise BadTime(f"not a day: {text!r} (use {HELP})") from None
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise BadTime(f"{text!r} is outside the years {FIRST_YEAR}-{LAST_YEAR}")
    return day


def parse_when(text: str, now_ms: int, tz: tzinfo | None = None) -> int:
    """An instant in epoch ms."""
    value = text.strip().lower()
    if value == "now":
        return now_ms
    m = _AGO.fullmatch(value)
    if m:
        return now_ms - int(m.group(1)) * _UNIT_S[m.group(2)[0]] * 1000
    if value in ("today", "yesterday") or re.fullmatch(r"\d{8}|\d{4}-\d{2}-\d{2}", value):
        day = parse_day(value, now_ms, tz)
        start = datetime.combine(day, time())
        start = start.replace(tzinfo=tz) if tz else start.astimezone()
        return int(start.timestamp() * 1000)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadTime(f"not a time: {text!r} (use {HELP})") from None
    if not FIRST_YEAR <= moment.year <= LAST_YEAR:
        raise BadTime(f"{text!r} is outside the years {FIRST_YEAR}-{LAST_YEAR}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz) if tz else moment.astimezone()
    return int(moment.timestamp() * 1000)

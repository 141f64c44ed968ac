"""Pure timestamp helpers: agents write ISO-8601 strings or epoch numbers; we keep
integer milliseconds since the epoch (UTC) everywhere inside Helix.

Reading goes through ``helixd.core.values`` (the window of sane times); ``iso`` is total
over whatever a store holds, so rows written by older versions never break a reader."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any

from helixd.core.values import timestamp_ms


def parse_ts(value: Any) -> int | None:
    """Milliseconds since the epoch for an ISO-8601 string or epoch seconds/millis inside
    the sane window (``values.timestamp_ms``); None for anything else (never raises): a bad
    timestamp must not cost the record."""
    return timestamp_ms(value)


def iso(ms: int | None) -> str | None:
    """ISO-8601 UTC with millisecond precision and a ``Z`` suffix, as agents write it;
    None for None and for a time no calendar date can hold (never raises)."""
    if ms is None:
        return None
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, ValueError, OSError, TypeError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def local(ms: int | None, tz: tzinfo | None = None) -> datetime | None:
    """``ms`` as a wall-clock time in ``tz`` (None: the system's zone); None for None and for a
    time no calendar date can hold (never raises)."""
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz) if tz else datetime.fromtimestamp(ms / 1000)
    except (OverflowError, ValueError, OSError, TypeError):
        return None

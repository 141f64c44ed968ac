"""Pure timestamp helpers: agents write ISO-8601 strings or epoch numbers; we keep
integer milliseconds since the epoch (UTC) everywhere inside Helix."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_ts(value: Any) -> int | None:
    """Milliseconds since the epoch for an ISO-8601 string or epoch seconds/millis.

    Returns None for anything unparseable (never raises): a bad timestamp must not cost
    the record.
    """
    if isinstance(value, str) and value:
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return round(dt.timestamp() * 1000)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Heuristic: values above 1e11 are milliseconds (1e11 s is the year 5138).
        return int(value if value > 1e11 else value * 1000)
    return None


def iso(ms: int | None) -> str | None:
    """ISO-8601 UTC with millisecond precision and a ``Z`` suffix, as agents write it."""
    if ms is None:
        return None
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"

"""The value checks of the adapter boundary (pure): every timestamp, token count and record
type an adapter takes from an agent's file goes through here, once, so that whatever a file
says, what reaches the store is in range.

* **Timestamps** become integer milliseconds inside ``[TS_MIN_MS, TS_MAX_MS)`` (1990 to ten
  years from now); anything else (out of the window, not finite, not a number or a date) is
  ``None``: *unknown time*, never the epoch.  A bad timestamp costs its record nothing but
  its time.
* **Token counts** are integers in ``[0, MAX_TOKENS]``.  A count that is negative, not
  finite, too large or of a wrong type is *rejected* (``Rejected``): the line is quarantined
  whole (a bad line, kept raw), since a count that cannot be trusted would put wrong numbers
  in every report.  A missing count (``null``, absent) is 0; a numeric string (old files)
  is read as its number.
* **Counts read from text** (test summaries, line counts): ``bounded`` says whether they fit.
* **Record types** are strings; ``record_type`` rejects a list, an object or a number.

``Rejected`` is a ``ValueError``; the per-line guard (``helixd.adapters.guard``) turns it,
and any other exception a line raises, into a ``BadLine``.

The window's upper end is read from the clock once, when this module is imported (the only
clock read of the core): ten years of margin make a parse give the same records for the
whole life of a process, and for years after.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final

TS_MIN_MS: Final = 631_152_000_000  # 1990-01-01T00:00:00Z: no coding agent wrote logs before
TS_AHEAD_YEARS: Final = 10
_YEAR_MS: Final = 31_556_952_000  # a mean Gregorian year
TS_MAX_MS: Final = int(time.time() * 1000) + TS_AHEAD_YEARS * _YEAR_MS
# Epoch seconds or milliseconds?  Numbers above this are milliseconds (1e11 s is the year
# 5138; 1e11 ms is 1973).
MS_THRESHOLD: Final = 100_000_000_000
# A million times the largest context window, and 9 million facts at this bound still sum
# inside a signed 64-bit integer (SQLite's ``sum()`` raises on overflow).
MAX_TOKENS: Final = 1_000_000_000_000
MAX_COUNT: Final = 1_000_000_000  # tests in one run, lines of one edit


class Rejected(ValueError):
    """A value an adapter read is outside its domain: the line is quarantined as a bad
    line (the message names the field and the value)."""


def in_window(ms: int) -> bool:
    return TS_MIN_MS <= ms < TS_MAX_MS


def timestamp_ms(value: Any) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 string (no zone = UTC) or of an epoch
    number (seconds, or milliseconds above ``MS_THRESHOLD``), inside the window; ``None``
    for anything else.  Never raises."""
    if type(value) is str:
        return iso_ms(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    ms = int(value if abs(value) > MS_THRESHOLD else value * 1000)
    return ms if TS_MIN_MS <= ms < TS_MAX_MS else None


def iso_ms(text: str) -> int | None:
    """``timestamp_ms`` of an ISO-8601 string."""
    ms = instant_ms(text)
    return ms if ms is not None and TS_MIN_MS <= ms < TS_MAX_MS else None


def instant_ms(text: str) -> int | None:
    """Milliseconds of any ISO-8601 time ``datetime`` can hold (no window: a time a person
    typed, ``--since 1985-01-01``); ``None`` when it does not parse.  Never raises."""
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return round(dt.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None


def tokens(value: Any, field: str) -> int:
    """A token count in ``[0, MAX_TOKENS]``; 0 when missing (``None``).  Raises
    ``Rejected`` naming ``field`` for a negative, non-finite, too large or non-numeric
    value."""
    if type(value) is int:  # the usual case first
        if 0 <= value <= MAX_TOKENS:
            return value
        raise Rejected(f"{field} = {_show(value)}: a token count must be in 0..{MAX_TOKENS:,}")
    if value is None:
        return 0
    number = _number(value)
    if number is None:
        raise Rejected(f"{field} = {_show(value)}: a token count must be a number")
    if not 0 <= number <= MAX_TOKENS:
        raise Rejected(f"{field} = {_show(value)}: a token count must be in 0..{MAX_TOKENS:,}")
    return int(number)


MAX_USD: Final = 1e7  # no response or session costs ten million dollars


def usd(value: Any, field: str) -> float | None:
    """A dollar cost an agent recorded: None when missing or not above 0 (agents write 0 for
    a model they have no price for: not a cost, so it is priced from the table instead).
    Raises ``Rejected`` naming ``field`` for a negative, non-finite, too large or non-numeric
    value."""
    if value is None:
        return None
    number = _number(value)
    if number is None or not 0 <= number <= MAX_USD:
        raise Rejected(f"{field} = {_show(value)}: a cost must be a number of dollars in 0..1e7")
    return float(number) if number > 0 else None


def token_counts(values: Iterable[Any], fields: Iterable[str]) -> list[int]:
    """``tokens`` of each value, named by the matching field."""
    return [tokens(v, f) for v, f in zip(values, fields, strict=True)]


def bounded(*counts: int) -> bool:
    """Whether every count read from text fits in ``[0, MAX_COUNT]``."""
    return all(0 <= c <= MAX_COUNT for c in counts)


def record_type(value: Any, field: str = "type") -> str | None:
    """A record's type: a string, or ``None`` when absent.  Raises ``Rejected`` for any
    other JSON value (a list, an object, a number …)."""
    if value is None or type(value) is str:
        return value
    raise Rejected(f"{field} is {_kind(value)}, not a string: {_show(value)}")


def _number(value: Any) -> float | int | None:
    """A finite number from an int, a float or a numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and 0 < len(value) <= 40:
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean"}.get(type(value), "a number")


def _show(value: Any) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"<an integer of {value.bit_length()} bits>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

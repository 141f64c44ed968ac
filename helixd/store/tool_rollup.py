"""``tool_call_hours``: the tool calls summed per hour x session x tool x status (calls,
calls timed, sum and max of their durations), what the dashboard's tool figures read instead
of every call.

A session's rows are rebuilt from its ``tool_calls`` whenever the analyze pass replaces its
signals (``signals_write.replace_signals``), in the same transaction: the cost is that
session's calls, and the rollup always equals a GROUP BY over the facts.  A call of unknown
or impossible time (``ts`` NULL or <= 0) is in hour -1, so that hours >= 0 hold exactly the
calls with ``ts`` > 0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

HOUR_MS: Final = 3_600_000
HOUR_OF: Final = f"CASE WHEN ts > 0 THEN ts / {HOUR_MS} ELSE -1 END"
# The migration's and the refresh's SELECT (``{where}``: which calls).
SUMS: Final = (
    f"SELECT {HOUR_OF}, session_id, tool, status, count(*), count(duration_ms),"
    " coalesce(sum(duration_ms), 0), max(duration_ms) FROM tool_calls{where}"
    " GROUP BY 1, 2, 3, 4"
)


def refresh(con: sqlite3.Connection, session_ids: Sequence[int]) -> None:
    """Rebuild these sessions' rows from their tool calls (inside the caller's transaction)."""
    for i in range(0, len(session_ids), 500):
        part = list(session_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        con.execute(f"DELETE FROM tool_call_hours WHERE session_id IN ({marks})", part)
        con.execute(
            "INSERT INTO tool_call_hours " + SUMS.format(where=f" WHERE session_id IN ({marks})"),
            part,
        )

"""Writing usage facts: the dedup upsert (max per counter, credit to the earliest rank),
replacing facts, and the exact per-batch roll-up into the usage summary tables."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from helixd.core.records import UsageFact
from helixd.store.keys import IN_CHUNK, key64

_UPSERT_USAGE: Final = """
INSERT INTO usage (key, session_id, rank, ts, model, input, output, cache_read,
    cache_write_5m, cache_write_1h, reasoning, recorded_cost_usd)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
    session_id = CASE WHEN excluded.rank < rank THEN excluded.session_id ELSE session_id END,
    ts = CASE WHEN excluded.rank < rank THEN excluded.ts ELSE ts END,
    rank = min(rank, excluded.rank),
    input = max(input, excluded.input),
    output = max(output, excluded.output),
    cache_read = max(cache_read, excluded.cache_read),
    cache_write_5m = max(cache_write_5m, excluded.cache_write_5m),
    cache_write_1h = max(cache_write_1h, excluded.cache_write_1h),
    reasoning = max(reasoning, excluded.reasoning),
    recorded_cost_usd = CASE WHEN excluded.recorded_cost_usd IS NULL THEN recorded_cost_usd
        WHEN recorded_cost_usd IS NULL THEN excluded.recorded_cost_usd
        ELSE max(recorded_cost_usd, excluded.recorded_cost_usd) END
"""

_REPLACE_USAGE: Final = (
    _UPSERT_USAGE[: _UPSERT_USAGE.index("ON CONFLICT")]
    + """
ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, rank = excluded.rank,
    ts = excluded.ts, model = excluded.model, input = excluded.input, output = excluded.output,
    cache_read = excluded.cache_read, cache_write_5m = excluded.cache_write_5m,
    cache_write_1h = excluded.cache_write_1h, reasoning = excluded.reasoning,
    recorded_cost_usd = excluded.recorded_cost_usd
"""
)


def _as_stored(row: list[Any]) -> tuple[Any, ...] | None:
    """A new fact's row (the upsert's values) as ``_usage_rows`` reads it back once inserted:
    ``(session_id, ts, model, counters…, recorded cost)``; None when a value's type is not
    the one its column stores it as (then it is read back)."""
    ts, model, counts, cost = row[3], row[4], row[5:11], row[11]
    if not (ts is None or type(ts) is int) or type(model) is not str:
        return None
    if any(type(n) is not int for n in counts):
        return None
    if type(cost) is int:  # a REAL column stores an integer as a float
        cost = float(cost)
    elif cost is not None and type(cost) is not float:
        return None
    return (row[1], ts, model, *counts, cost)


def _zero_sums() -> list[Any]:
    return [0, 0, 0, 0, 0, 0, 0, 0.0, 0]


class UsageWriter:
    """Runs on the store's thread inside the writer's transaction."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con
        self._agent_of: dict[int, str] = {}  # a session's agent never changes

    def write(self, usage: Sequence[UsageFact], ids: dict[str, int]) -> set[int]:
        """Merging facts take the max of each counter; replacing facts (``replace=True``)
        overwrite, in order, so the last one of a batch wins.  Merging facts that share a key
        inside the batch (the streamed lines of one response) are merged here first, by the
        same rule as the upsert, so each response costs one statement.  Returns the sessions
        whose usage changed (credit moved away included)."""
        merged: dict[int, list[Any]] = {}
        for u in usage:
            if u.replace:
                continue
            key = key64(u.dedup_key)
            row: list[Any] = [
                key,
                ids[u.session_uid],
                u.rank,
                u.ts,
                u.model,
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_5m_tokens,
                u.cache_write_1h_tokens,
                u.reasoning_tokens,
                u.recorded_cost_usd,
            ]
            old = merged.get(key)
            if old is None:
                merged[key] = row
                continue
            if row[2] < old[2]:  # the earlier-ranked claimant takes the credit
                old[1], old[2], old[3] = row[1], row[2], row[3]
            for i in range(5, 11):
                old[i] = max(old[i], row[i])
            if row[11] is not None:  # a recorded cost merges like a counter
                old[11] = row[11] if old[11] is None else max(old[11], row[11])
        replaced = {key64(u.dedup_key) for u in usage if u.replace}
        keys = [*merged, *replaced]
        before = self._usage_rows(keys)
        # A merging fact whose key was not stored before is stored as it is: its row is
        # known without reading it back (a first ingest's facts, nearly all of them).
        known = {
            k: stored
            for k, r in merged.items()
            if k not in before and k not in replaced and (stored := _as_stored(r)) is not None
        }
        if merged:
            self.con.executemany(_UPSERT_USAGE, [tuple(r) for r in merged.values()])
        replacing = [
            (
                key64(u.dedup_key),
                ids[u.session_uid],
                u.rank,
                u.ts,
                u.model,
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_5m_tokens,
                u.cache_write_1h_tokens,
                u.reasoning_tokens,
                u.recorded_cost_usd,
            )
            for u in usage
            if u.replace
        ]
        if replacing:
            self.con.executemany(_REPLACE_USAGE, replacing)
        after = (
            self._usage_rows([k for k in keys if k not in known]) if len(known) < len(keys) else {}
        )
        after.update(known)
        return self._roll_up(before, after)

    def _usage_rows(self, keys: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """``{key: (session_id, ts, model, counters…, recorded cost)}`` of the stored facts
        among ``keys``."""
        found: dict[int, tuple[Any, ...]] = {}
        unique = list(set(keys))
        for i in range(0, len(unique), IN_CHUNK):
            part = unique[i : i + IN_CHUNK]
            for row in self.con.execute(
                "SELECT key, session_id, ts, model, input, output, cache_read, cache_write_5m,"
                " cache_write_1h, reasoning, recorded_cost_usd FROM usage"
                f" WHERE key IN ({','.join('?' * len(part))})",
                part,
            ):
                found[row[0]] = tuple(row[1:])
        return found

    def _roll_up(
        self, before: dict[int, tuple[Any, ...]], after: dict[int, tuple[Any, ...]]
    ) -> set[int]:
        """Keep the usage summary tables exact: subtract what a fact was, add what it is now
        (a fact's credit, time or counters can change on upsert), summed per 15-minute bucket
        x session x model and per hour x agent x model — one statement per touched row of
        the summaries rather than two per fact.  Each summary row: responses, the six
        counters, the recorded dollars and ``costed`` (its responses that carry them)."""
        buckets: dict[tuple[int, int, str], list[Any]] = defaultdict(_zero_sums)
        hours: dict[tuple[int, str, str], list[Any]] = defaultdict(_zero_sums)
        agents = self._agents({r[0] for r in (*before.values(), *after.values())})
        changed: set[int] = set()
        for key in before.keys() | after.keys():
            old, new = before.get(key), after.get(key)
            if old == new:
                continue
            for row, sign in ((old, -1), (new, 1)):
                if row is None:
                    continue
                # a fact of unknown time (ts NULL) is summed in bucket 0, shown as "unknown"
                sid, ts, model = row[0], row[1] or 0, row[2]
                changed.add(sid)
                for target in (
                    buckets[(ts // 900_000, sid, model)],
                    hours[(ts // 3_600_000, agents[sid], model)],
                ):
                    target[0] += sign
                    for i, value in enumerate(row[3:9], start=1):
                        target[i] += sign * value
                    if row[9] is not None:
                        target[7] += sign * row[9]
                        target[8] += sign
        for table, cols, rows in (
            ("usage_buckets", "bucket, session_id, model", buckets),
            ("usage_hours", "hour, agent, model", hours),
        ):
            if not rows:
                continue
            self.con.executemany(
                f"INSERT INTO {table} ({cols}, responses, input, output, cache_read,"
                " cache_write_5m, cache_write_1h, reasoning, recorded_cost_usd, costed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, nullif(?, 0), ?) ON CONFLICT DO"
                " UPDATE SET responses = responses + excluded.responses,"
                " input = input + excluded.input, output = output + excluded.output,"
                " cache_read = cache_read + excluded.cache_read,"
                " cache_write_5m = cache_write_5m + excluded.cache_write_5m,"
                " cache_write_1h = cache_write_1h + excluded.cache_write_1h,"
                " reasoning = reasoning + excluded.reasoning,"
                " recorded_cost_usd = CASE WHEN costed + excluded.costed = 0 THEN NULL"
                " ELSE coalesce(recorded_cost_usd, 0) + coalesce(excluded.recorded_cost_usd, 0)"
                " END, costed = costed + excluded.costed",
                [(*k, *v) for k, v in rows.items()],
            )
            a, b, c = (x.strip() for x in cols.split(","))
            self.con.executemany(
                f"DELETE FROM {table} WHERE responses = 0 AND {a} = ? AND {b} = ? AND {c} = ?",
                [k for k, v in rows.items() if v[0] < 0],
            )
        return changed

    def forget(self) -> None:
        """Drop what was learned inside a rolled-back savepoint (session ids can be reused)."""
        self._agent_of.clear()

    def _agents(self, session_ids: set[int]) -> dict[int, str]:
        missing = [i for i in session_ids if i not in self._agent_of]
        for i in range(0, len(missing), IN_CHUNK):
            part = missing[i : i + IN_CHUNK]
            self._agent_of.update(
                self.con.execute(
                    f"SELECT id, agent FROM sessions WHERE id IN ({','.join('?' * len(part))})",
                    part,
                ).fetchall()
            )
        return self._agent_of

"""The mirror's writes on the fleet database.

``register`` names this machine and ``prepare`` creates the connection's staging tables (once
per push); ``lock`` serialises the pushes of one machine (a CLI push beside the daemon's job)
for the rest of the caller's transaction, which then reads its batch from the store and
``apply``-s it: the rows' current state upserted on their natural keys plus the machine id
(a row identical to the server's is not rewritten), rows gone deleted, and the machine's
``shipped_through`` watermark advanced — all in that one transaction, so the server has a
batch whole or not at all, and a batch sent twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from uuid import UUID

import psycopg

from helixd.store.outbox_batch import (
    BUCKET_COLUMNS,
    DIGEST_COLUMNS,
    EVENT_COLUMNS,
    HOOK_COLUMNS,
    SESSION_COLUMNS,
    SIGNAL_COLUMNS,
    USAGE_COLUMNS,
    Tier2Batch,
)
from helixd.store.pg.connect import FleetDbError

Conn = psycopg.AsyncConnection[Any]


# Each batch is copied (COPY, one stream per table) into temporary staging tables emptied at
# every commit, then merged with one statement per table: a fraction of the client and server
# cost of a statement per row.
def _stage(table: str) -> str:
    return f"pg_temp.fleet_stage_{table}"


def _merge(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """Upsert the staged rows on ``(machine_id, *key)``; a row identical to the stored one is
    left alone (no new row version)."""
    cols = ", ".join(("machine_id", *columns))
    rest = [c for c in columns if c not in key]
    return (
        f"INSERT INTO helix.{table} ({cols}) SELECT {cols} FROM {_stage(table)}"
        f" ON CONFLICT (machine_id, {', '.join(key)}) DO UPDATE SET"
        f" {', '.join(f'{c} = excluded.{c}' for c in rest)}"
        f" WHERE ({', '.join(f'helix.{table}.{c}' for c in rest)})"
        f" IS DISTINCT FROM ({', '.join(f'excluded.{c}' for c in rest)})"
    )


def _append(table: str, columns: Sequence[str]) -> str:
    cols = ", ".join(("machine_id", *columns))
    return f"INSERT INTO helix.{table} ({cols}) SELECT {cols} FROM {_stage(table)}"


# table -> (its columns after machine_id, the merge statement)
_TABLES: Final[dict[str, tuple[tuple[str, ...], str]]] = {
    "sessions": (SESSION_COLUMNS, _merge("sessions", SESSION_COLUMNS, ("uid",))),
    "digests": (DIGEST_COLUMNS, _merge("digests", DIGEST_COLUMNS, ("session_uid",))),
    "usage": (USAGE_COLUMNS, _merge("usage", USAGE_COLUMNS, ("key",))),
    "usage_buckets": (
        BUCKET_COLUMNS,
        _merge("usage_buckets", BUCKET_COLUMNS, ("bucket", "session_uid", "model")),
    ),
    "events": (EVENT_COLUMNS, _merge("events", EVENT_COLUMNS, ("session_uid", "seq"))),
    "hook_events": (HOOK_COLUMNS, _merge("hook_events", HOOK_COLUMNS, ("id",))),
    **{
        t: (("session_uid", *cols), _append(t, ("session_uid", *cols)))
        for t, cols in SIGNAL_COLUMNS.items()
    },
}


async def prepare(conn: Conn) -> None:
    """Create this session's staging tables (once per connection, after the migrations)."""
    for table in _TABLES:
        await conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS fleet_stage_{table}"
            f" (LIKE helix.{table}) ON COMMIT DELETE ROWS"
        )


async def _copy(
    cur: psycopg.AsyncCursor[Any], table: str, machine_id: UUID, rows: Sequence[Sequence[Any]]
) -> None:
    columns, merge = _TABLES[table]
    async with cur.copy(
        f"COPY {_stage(table)} (machine_id, {', '.join(columns)}) FROM STDIN"
    ) as copy:
        for row in rows:
            await copy.write_row((machine_id, *row))
    await cur.execute(merge)


def lock_key(machine_id: UUID) -> int:
    """The machine's advisory lock key (signed 64-bit)."""
    return int.from_bytes(machine_id.bytes[:8], "big", signed=True)


async def register(
    conn: Conn, machine_id: UUID, name: str, user: str, version: str, include_text: bool
) -> int | None:
    """Record (or refresh) this machine's name and user; returns the outbox id the server has
    confirmed through, None when the server has never seen the machine.  FleetDbError when
    another role registered this machine id."""
    cur = await conn.execute(
        "SELECT shipped_through, owner = current_user, owner FROM helix.machines"
        " WHERE machine_id = %s",
        (machine_id,),
    )
    row = await cur.fetchone()
    if row is None:
        await conn.execute(
            "INSERT INTO helix.machines (machine_id, name, user_name, helix_version,"
            " include_text) VALUES (%s, %s, %s, %s, %s)",
            (machine_id, name, user, version, include_text),
        )
        return None
    if not row[1]:
        raise FleetDbError(
            f"machine {machine_id} is registered to the role {row[2]!r}, not to this one"
        )
    await conn.execute(
        "UPDATE helix.machines SET name = %s, user_name = %s, helix_version = %s,"
        " include_text = %s WHERE machine_id = %s",
        (name, user, version, include_text, machine_id),
    )
    return int(row[0])


async def lock(conn: Conn, machine_id: UUID) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(machine_id),))


async def apply(conn: Conn, machine_id: UUID, batch: Tier2Batch) -> None:
    """Write one batch (inside the caller's transaction, after ``lock``)."""
    m = machine_id
    async with conn.cursor() as cur:
        for table, rows in (
            ("sessions", batch.sessions),
            ("digests", batch.digests),
            ("usage", batch.usage),
            ("usage_buckets", batch.buckets),
        ):
            if rows:
                await _copy(cur, table, m, rows)
        if batch.usage_gone:
            await cur.execute(
                "DELETE FROM helix.usage WHERE machine_id = %s AND key = ANY(%s)",
                (m, batch.usage_gone),
            )
        if batch.buckets_gone:
            await cur.executemany(
                "DELETE FROM helix.usage_buckets WHERE machine_id = %s AND bucket = %s"
                " AND session_uid = %s AND model = %s",
                [(m, *k) for k in batch.buckets_gone],
            )
        if batch.signal_sessions:
            for table in SIGNAL_COLUMNS:
                await cur.execute(
                    f"DELETE FROM helix.{table} WHERE machine_id = %s AND session_uid = ANY(%s)",
                    (m, batch.signal_sessions),
                )
                if signal_rows := batch.signals.get(table):
                    await _copy(cur, table, m, signal_rows)
        if batch.hooks:
            await _copy(cur, "hook_events", m, batch.hooks)
        if batch.hooks_gone:
            await cur.execute(
                "DELETE FROM helix.hook_events WHERE machine_id = %s AND id = ANY(%s)",
                (m, batch.hooks_gone),
            )
        if batch.events:
            await _copy(cur, "events", m, batch.events)
        await cur.execute(
            "UPDATE helix.machines SET shipped_through = greatest(shipped_through, %s),"
            " last_push_at = now() WHERE machine_id = %s",
            (batch.last_id, m),
        )


async def drop_text(conn: Conn, machine_id: UUID) -> int:
    """Delete the conversation text this machine sent (``include_text`` turned off)."""
    cur = await conn.execute("DELETE FROM helix.events WHERE machine_id = %s", (machine_id,))
    return cur.rowcount


async def server_facts(conn: Conn, machine_id: UUID) -> dict[str, Any] | None:
    """What the server holds of this machine (for ``fleet status``)."""
    cur = await conn.execute(
        "SELECT name, user_name, owner, shipped_through, last_push_at,"
        " (SELECT count(*) FROM helix.sessions WHERE machine_id = %s),"
        " (SELECT count(*) FROM helix.usage WHERE machine_id = %s),"
        " (SELECT count(*) FROM helix.machines)"
        " FROM helix.machines WHERE machine_id = %s",
        (machine_id, machine_id, machine_id),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    names = ("name", "user", "owner", "shipped_through", "last_push_at", "sessions", "usage")
    out = dict(zip(names, row[:7], strict=True))
    out["last_push_at"] = out["last_push_at"].isoformat() if out["last_push_at"] else None
    out["machines_in_fleet"] = row[7]
    return out

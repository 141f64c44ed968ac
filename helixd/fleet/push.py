"""One push: this store's outbox to the fleet database, batch by batch.

1. The outbox is switched on; the first time, every Tier 2 row is enqueued (the server gets
   the whole history, and from then on every change, recorded by the store's triggers).
2. The server's schema is migrated if it is behind, and this store's machine id (a random
   UUID drawn once, kept in the store) is registered with its name and user.  A server that
   confirmed less than this store's watermark (a new database, or one restored from a backup)
   gets everything again.
3. Batch after batch, in one server transaction: lock this machine, read the oldest entries
   and the current state of their rows from the store, send them (upserts on natural keys +
   machine id, deletes of rows gone), advance the server's watermark.  After the commit the
   entries are deleted from the store and its watermark advanced.

A push that dies anywhere (the server killed, the network gone, this process killed) leaves
entries that the next push sends again: at least once.  Sending a batch twice changes
nothing: it carries rows' state, not increments.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, NoReturn

import psycopg

from helixd.fleet.shape import for_server
from helixd.fleet.target import Target
from helixd.store import outbox, outbox_batch
from helixd.store.database import Store, now_ms
from helixd.store.pg import mirror
from helixd.store.pg import schema as pg_schema
from helixd.store.pg.connect import FleetDbError, connect_async, describe, scrub


class PushError(RuntimeError):
    """The push stopped (the server unreachable or refusing); what was not confirmed stays in
    the outbox.  The message names the server and the cause, never the password."""


@dataclass(slots=True)
class PushResult:
    machine: str
    machine_id: str
    seeded: int = 0  # entries enqueued by switching the outbox on or by a resync
    resync: bool = False
    migrations: list[str] = field(default_factory=list)
    batches: int = 0
    entries: int = 0  # outbox entries confirmed
    rows: int = 0  # rows written or deleted on the server
    lag_ms: int | None = None  # the oldest change shipped: its age when the server confirmed
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _machine_id(store: Store) -> uuid.UUID:
    known = await store.call(outbox.machine_id)
    if known:
        return uuid.UUID(known)
    drawn = uuid.uuid4()
    await store.call(outbox.set_machine_id, str(drawn))
    return drawn


async def push(
    store: Store,
    target: Target,
    version: str,
    *,
    max_batches: int | None = None,
    on_batch: Callable[[PushResult], None] | None = None,
) -> PushResult:
    """Ship the outbox until it is empty (or ``max_batches``); PushError when the server
    cannot be used."""
    started = time.monotonic()
    seeded = await store.call(outbox.switch_on, now_ms(), target.include_text)
    mid = await _machine_id(store)
    result = PushResult(target.machine, str(mid), seeded=seeded)
    try:
        conn = await connect_async(
            target.dsn, target.password, connect_timeout=target.connect_timeout
        )
    except FleetDbError as exc:
        await _failed(store, str(exc))
    try:
        await _ship(store, conn, mid, target, version, result, max_batches, on_batch)
    except (psycopg.Error, FleetDbError) as exc:
        text = scrub(str(exc).strip() or type(exc).__name__, target.password)
        if isinstance(exc, psycopg.Error):
            text = f"{describe(target.dsn)}: {text}"
        await _failed(store, text)
    finally:
        await conn.close()
    await store.call(outbox.record_push, now_ms(), None)
    result.seconds = round(time.monotonic() - started, 3)
    return result


async def _failed(store: Store, message: str) -> NoReturn:
    await store.call(outbox.record_push, now_ms(), message)
    raise PushError(message)


async def _ship(
    store: Store,
    conn: psycopg.AsyncConnection[Any],
    mid: uuid.UUID,
    target: Target,
    version: str,
    result: PushResult,
    max_batches: int | None,
    on_batch: Callable[[PushResult], None] | None,
) -> None:
    result.migrations = await pg_schema.migrate(conn)
    async with conn.transaction():
        confirmed = await mirror.register(
            conn, mid, target.machine, target.user, version, target.include_text
        )
    await mirror.prepare(conn)
    mark = await store.call(outbox.watermark)
    if mark and (confirmed is None or confirmed < mark):
        result.resync = True
        result.seeded += await store.call(outbox.resync, now_ms())
    if await store.call(outbox.text_shipped) != target.include_text:
        if not target.include_text:  # the server forgets the text first, then we re-send
            async with conn.transaction():
                await mirror.drop_text(conn, mid)
        await store.call(outbox.set_text, now_ms(), target.include_text)
    while max_batches is None or result.batches < max_batches:
        async with conn.transaction():
            await mirror.lock(conn, mid)
            batch = await store.call(
                outbox_batch.next_batch, target.batch_rows, target.include_text, target.batch_rows
            )
            if not batch.entries:
                break
            await mirror.apply(conn, mid, for_server(batch, target.include_text))
        confirmed_at = now_ms()
        await store.call(outbox.confirm, batch, confirmed_at)
        result.batches += 1
        result.entries += len(batch.entries)
        result.rows += batch.rows()
        oldest = confirmed_at - min(e.at for e in batch.entries)
        result.lag_ms = max(result.lag_ms or 0, oldest)
        if on_batch is not None:
            on_batch(result)


async def migrate(target: Target) -> list[str]:
    """Bring the server's schema up to date (``helixctl fleet migrate``); the names applied.
    PushError when the server cannot be used or this role may not change the schema."""
    try:
        conn = await connect_async(
            target.dsn, target.password, connect_timeout=target.connect_timeout
        )
    except FleetDbError as exc:
        raise PushError(str(exc)) from None
    try:
        return await pg_schema.migrate(conn)
    except (psycopg.Error, FleetDbError) as exc:
        raise PushError(scrub(str(exc).strip(), target.password)) from None
    finally:
        await conn.close()


async def switch_off(store: Store) -> int:
    """Stop recording (``helixctl fleet off``); the entries dropped."""
    return int(await store.call(outbox.switch_off))

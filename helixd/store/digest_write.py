"""Tier 2's write: a part's digests, with the signals they were built from, in one
``BEGIN IMMEDIATE`` transaction on the store's thread (``Store.save_digests``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from helixd.core.signals import Signals
from helixd.store.faults import rollback
from helixd.store.signals_write import replace_signals


def save_digests(
    con: sqlite3.Connection,
    digests: Sequence[tuple[int, dict[str, Any], bool, Signals | None]],
    schema_version: int,
    now: int,
    analyzed_at: int | None = None,
) -> None:
    """Digests (and, where given, the signals they were built from) in one transaction.
    A session evicted down to its digest keeps the signals it had."""
    con.execute("BEGIN IMMEDIATE")
    try:
        replace_signals(con, [(sid, sig) for sid, _, _, sig in digests if sig])
        con.executemany(
            "INSERT INTO digests (session_id, schema_version, built_at, provisional, json)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " schema_version = excluded.schema_version, built_at = excluded.built_at,"
            " provisional = excluded.provisional, json = excluded.json",
            [(sid, schema_version, now, int(prov), orjson.dumps(d)) for sid, d, prov, _ in digests],
        )
        con.executemany(
            "UPDATE sessions SET analyzed_at = ? WHERE id = ?",
            [(analyzed_at or now, sid) for sid, _, _, _ in digests],
        )
        con.execute("COMMIT")
    except BaseException:
        rollback(con)  # never hides the error (SQLite may have rolled back already)
        raise

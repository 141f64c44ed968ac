"""Helpers of the fleet tests: stores built from the fixture transcripts, pushes, the real
``helixctl`` on a store, and the Tier 2 content of a store and of one machine on the server,
in comparable form."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from helixd.adapters.registry import REGISTRY
from helixd.fleet.target import Target
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.prices import effective
from helixd.store.database import Store, now_ms
from tests.conftest import FIXTURES, cli_env, run_helixctl

ADAPTERS = {a.name: a for a in REGISTRY}


async def build_store(db: Path, agents: tuple[str, ...]) -> None:
    """Ingest the fixture transcripts of ``agents`` into ``db`` and build the digests."""
    store = await Store.open(db)
    try:
        pairs = [(ADAPTERS[a], FIXTURES / a) for a in agents]
        await Ingestor(store).backfill(discover(pairs))
        ids = await store.sessions_to_analyze(now_ms(), 0)
        await digest.analyze(store, ids, now_ms(), 0, effective(None, {}))
    finally:
        await store.close()


def helixctl_on(db: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``helixctl *args`` in a subprocess on the store ``db`` (its folder as HOME), ``env``
    added; whatever its exit code."""
    return run_helixctl(args, cli_env(db.parent, db, **env), check=False, timeout=60)


def target(dsn: str, machine: str = "laptop", **kw: Any) -> Target:
    return Target(dsn=dsn, machine=machine, user=kw.pop("user", "alice"), **kw)


async def push_once(db: Path, tgt: Target, **kw: Any) -> Any:
    from helixd.fleet.push import push

    store = await Store.open(db)
    try:
        return await push(store, tgt, "test", **kw)
    finally:
        await store.close()


def add_hooks(db: Path, n: int, prefix: str = "pytest -q") -> None:
    """``n`` hook events into the store, as the daemon saves them."""
    from helixd.store import hook_events

    con = sqlite3.connect(db, isolation_level=None)
    try:
        for i in range(n):
            what, tool = ("bash", "Bash") if i % 2 == 0 else ("edit", "Edit")
            row = (1_760_000_000_000 + i, "claude", f"native-{i % 3}", what, tool, f"call-{i}",
                   f"{prefix} tests/test_{i}.py")  # fmt: skip
            hook_events.save(con, row)
    finally:
        con.close()


def local(db: Path, sql: str, params: Any = ()) -> list[Any]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def server(dsn: str, sql: str, params: Any = None) -> list[Any]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


# Tier 2 as comparable sets: the same columns from the store and from one machine's rows on
# the server (sessions by uid; the title is left out: it is text, sent only with include_text).
_SESSION = (
    "uid, agent, native_id, parent_uid, cwd, repo, git_branch, model, version, agent_type,"
    " started_at, ended_at, ended, messages, events, evict_stage, repo_root, domain, task_ref,"
    " git_commit"
)
_HOOK = "id, at, agent, native_id, what, tool, call_id, target"
_COUNTERS = "input, output, cache_read, cache_write_5m, cache_write_1h, reasoning"
LOCAL = {
    "sessions": f"SELECT {_SESSION} FROM sessions",
    "digests": "SELECT s.uid, d.schema_version, d.built_at, d.provisional FROM digests d"
    " JOIN sessions s ON s.id = d.session_id",
    "usage": f"SELECT u.key, s.uid, u.rank, u.ts, u.model, {_COUNTERS}, u.recorded_cost_usd"
    " FROM usage u JOIN sessions s ON s.id = u.session_id",
    "usage_buckets": f"SELECT b.bucket, s.uid, b.model, b.responses, {_COUNTERS},"
    " b.recorded_cost_usd, b.costed FROM usage_buckets b JOIN sessions s ON s.id = b.session_id",
    "tool_calls": "SELECT s.uid, call_seq, result_seq, ts, tool, target, status, duration_ms"
    " FROM tool_calls g JOIN sessions s ON s.id = g.session_id",
    "test_runs": "SELECT s.uid, call_seq, result_seq, ts, command, framework, passed, failed,"
    " skipped, status, duration_ms FROM test_runs g JOIN sessions s ON s.id = g.session_id",
    "file_operations": "SELECT s.uid, seq, ts, operation, file_path, language, lines_added,"
    " lines_removed, status, accepted FROM file_operations g JOIN sessions s"
    " ON s.id = g.session_id",
    "session_signals": "SELECT s.uid, kind, seq, ref_seq, tool, fingerprint"
    " FROM session_signals g JOIN sessions s ON s.id = g.session_id",
    "hook_events": f"SELECT {_HOOK} FROM hook_events",
}
SERVER = {
    "sessions": f"SELECT {_SESSION} FROM helix.sessions",
    "digests": "SELECT session_uid, schema_version, built_at, provisional FROM helix.digests",
    "usage": f"SELECT key, session_uid, rank, ts, model, {_COUNTERS}, recorded_cost_usd"
    " FROM helix.usage",
    "usage_buckets": f"SELECT bucket, session_uid, model, responses, {_COUNTERS},"
    " recorded_cost_usd, costed FROM helix.usage_buckets",
    "tool_calls": "SELECT session_uid, call_seq, result_seq, ts, tool, target, status,"
    " duration_ms FROM helix.tool_calls",
    "test_runs": "SELECT session_uid, call_seq, result_seq, ts, command, framework, passed,"
    " failed, skipped, status, duration_ms FROM helix.test_runs",
    "file_operations": "SELECT session_uid, seq, ts, operation, file_path, language,"
    " lines_added, lines_removed, status, accepted FROM helix.file_operations",
    "session_signals": "SELECT session_uid, kind, seq, ref_seq, tool, fingerprint"
    " FROM helix.session_signals",
    "hook_events": f"SELECT {_HOOK} FROM helix.hook_events",
}


def tier2_local(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every Tier 2 row of a store, sorted (lists, so that a doubled row would show)."""
    return {t: sorted(local(db, sql), key=repr) for t, sql in LOCAL.items()}


def tier2_server(dsn: str, machine: str) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of machine ``machine`` (by name) on the server, in the same form."""
    out = {}
    for table, sql in SERVER.items():
        where = " WHERE machine_id IN (SELECT machine_id FROM helix.machines WHERE name = %s)"
        rows = server(dsn, sql + where, (machine,))
        out[table] = sorted((tuple(_plain(v) for v in r) for r in rows), key=repr)
    return out


def _plain(value: Any) -> Any:
    from decimal import Decimal

    return int(value) if isinstance(value, Decimal) else value

"""What ``helixctl fleet status``, ``helixctl status`` and ``doctor`` say about the fleet.

``local`` (pure) turns the store's outbox facts into the status section: is the mirror on,
how many changes wait and since when (the lag), when the last push ran and how it ended.
``probe`` asks the server (with the connect timeout): can it be reached, is its schema
current, what it holds of this machine.  Neither ever includes the password.
"""

from __future__ import annotations

from typing import Any

from helixd.core.timeparse import iso
from helixd.fleet.target import Target


def local(
    facts: dict[str, Any] | None, configured: bool, warn_rows: int, now_ms: int
) -> dict[str, Any]:
    """The fleet section of the status document."""
    out: dict[str, Any] = {"configured": configured}
    if facts is None:
        return {**out, "recording": False, "pending": 0}
    oldest = facts["oldest_pending_at"]
    out.update(
        recording=facts["recording"],
        machine_id=facts["machine_id"],
        pending=facts["pending"],
        lag_s=round(max(0, now_ms - oldest) / 1000, 1) if oldest is not None else 0.0,
        over_warn_rows=facts["pending"] > warn_rows,
        warn_rows=warn_rows,
        watermark=facts["watermark"],
        rows_pushed=facts["rows_pushed"],
        include_text=facts["include_text"],
        last_push_at=iso(facts["last_push_at"]),
        last_error=facts["last_error"],
        failures=facts["failures"],
        resyncs=facts["resyncs"],
    )
    return out


def probe(target: Target, machine_id: str | None) -> dict[str, Any]:
    """The server's side: reachable, its schema, every machine of the fleet and this one's
    rows there.  Never raises: a problem is reported under ``error``."""
    from helixd.query.fleet import machines
    from helixd.store.pg import schema
    from helixd.store.pg.connect import FleetDbError, connect, describe, scrub

    out: dict[str, Any] = {"server": describe(target.dsn), "reachable": False}
    try:
        conn = connect(target.dsn, target.password, target.connect_timeout)
    except FleetDbError as exc:
        return {**out, "error": str(exc)}
    try:
        out["reachable"] = True
        done = schema.applied_sync(conn)
        out["schema"] = done
        out["migrations_due"] = schema.check_current(done)
        if done:
            fleet = machines(conn)
            out["machines"] = fleet
            out["this_machine"] = next((m for m in fleet if m["machine_id"] == machine_id), None)
    except Exception as exc:  # a probe reports, it never raises
        out["error"] = scrub(f"{exc}", target.password)
    finally:
        conn.close()
    return out

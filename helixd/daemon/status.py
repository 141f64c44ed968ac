"""What ``helixctl status`` shows: the daemon's published state plus what the store alone
can tell.

The daemon writes ``<store>.helixd.json`` (atomically, only when something changed) and
holds ``<store>.helixd.lock`` while it runs; ``gather`` combines those (or the live state
the daemon answers on its socket, which is fresher: the file cannot be written on a full
disk) with a read-only look at the store and a stat of every tracked source (the ingest
lag: bytes written by the agents and not read yet).  ``store.fault`` names a condition
that keeps the store from being used (as the daemon meets it, else as the file shows it).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from helixd.daemon.pidlock import holder


def status_path(db: Path) -> Path:
    return db.with_name(db.name + ".helixd.json")


class StatusFile:
    def __init__(self, db: Path) -> None:
        self.path = status_path(db)

    def write(self, snapshot: dict[str, Any]) -> None:
        """Replace the status file atomically; 0600 whatever the umask (it names every
        root and file problem)."""
        import orjson

        from helixd.filemodes import write_private

        write_private(self.path, orjson.dumps(snapshot, default=str))

    def read(self) -> dict[str, Any] | None:
        """The published state (None when absent or torn).  The standard library's parser:
        ``helixctl status`` reads one small file, and importing orjson costs it ~20 ms."""
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def store_bytes(db: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            total += os.stat(f"{db}{suffix}").st_size
    return total


def ingest_lag(files: list[tuple[str, int, int | None]]) -> dict[str, int]:
    """Bytes not yet read across tracked files still on disk (``(path, offset, gone_at)``)."""
    lag = behind = 0
    for path, offset, gone in files:
        if gone is not None:
            continue
        try:
            size = os.stat(path).st_size
        except OSError:
            continue
        if size > offset:
            lag += size - offset
            behind += 1
    return {"bytes": lag, "files": behind}


def gather(
    db: Path,
    store_facts: dict[str, Any] | None,
    budget: dict[str, int],
    live: dict[str, Any] | None = None,
    store_fault: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole status document (``helixctl status --json`` prints it as is).  ``live``:
    the daemon's state as its socket answered (None: read the published file);
    ``store_fault``: what kept the CLI from reading the store, if anything."""
    pid = holder(db)
    if pid is None and live is not None:
        pid = live.get("pid")  # the lock file went with its folder; the daemon still runs
    daemon: dict[str, Any] = {"running": pid is not None, "pid": pid}
    published = live or (StatusFile(db).read() if pid is not None else None)
    if published:
        daemon.update(
            version=published.get("version"),
            uptime_s=round(time.time() - float(published.get("started_at", time.time())), 1),
            roots=published.get("roots"),
            queue=published.get("queue"),
            ingest=published.get("ingest"),
            jobs=published.get("jobs"),
            store_fault=published.get("store_fault"),
            failing_files=published.get("failing_files"),
            hook_activity=published.get("hook_activity"),
            status_file_error=published.get("status_file_error"),
            web=published.get("web"),
        )
    size = store_bytes(db)
    doc: dict[str, Any] = {
        "daemon": daemon,
        "store": {
            "path": str(db),
            "exists": db.exists(),
            "bytes": size,
            "fault": daemon.get("store_fault") or store_fault,
        },
    }
    if store_facts is not None:
        doc["store"].update(store_facts["summary"])
        doc["ingest_lag"] = ingest_lag(store_facts["files"])
        raw = store_facts["summary"]["tier1"]["bytes"]  # what `evict` counts
        doc["retention"] = {
            **budget,
            "raw_bytes": raw,
            "over_soft_cap": raw > budget["raw_soft_cap_bytes"],
            "over_hard_cap": raw > budget["raw_hard_cap_bytes"],
        }
    return doc

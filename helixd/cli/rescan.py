"""``helixctl ingest`` when nothing changed, answered without the event loop, the config
models or the store package.

A re-scan is the command people (and cron) run most, and usually nothing is new.  When no
config file or ``HELIX_*`` setting could change the defaults, this walks the agents'
default roots, stats every file and compares it with its cursor (one read-only query);
only if every file is unchanged, none vanished, no session waits for its digest and the
store needs no migration does it print the summary itself.  Anything else — a new byte, a
first run, a custom config — goes through the full ``helixctl ingest``, which would have
done exactly nothing here.
"""

from __future__ import annotations

import os
import sqlite3
import stat as stat_mod
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Variables that name where things are, not what ingest does.
_PASSIVE = frozenset({"HELIX_STORE_DB", "HELIX_STATE_DIR", "HELIX_SOCKET"})


def quick_rescan(environ: Mapping[str, str], home: Path) -> dict[str, Any] | None:
    """The ``helixctl ingest --json`` summary when there is nothing to do, else None."""
    from helixd.paths import config_path_in_use

    if any(k.startswith("HELIX_") and k not in _PASSIVE for k in environ):
        return None
    if config_path_in_use(None).is_file():
        return None
    started = time.perf_counter()
    db = _store_path(environ)
    if not db.is_file():
        return None
    from helixd.adapters import REGISTRY
    from helixd.cli.common import store_module
    from helixd.ingest.stats import IngestStats
    from helixd.sources.discover import discover

    queries = store_module("queries")
    migrations = {name for name, _ in store_module("schema").MIGRATIONS}
    try:
        con = queries.connect(db)
    except queries.NoStore:
        return None
    try:
        facts = queries.rescan_facts(con, {a.name: a.version for a in REGISTRY})
    except sqlite3.Error:
        return None  # the full ingest names the store's problem (exit 3)
    finally:
        con.close()
    if facts["waiting"] or facts["migrations"] != migrations:
        return None
    known: dict[str, tuple[Any, ...]] = facts["files"]
    pairs = [(a, root) for a in REGISTRY for root in a.default_roots(environ, home)]
    seen: set[str] = set()
    found = 0
    for src in discover(pairs):
        found += 1
        try:
            st = os.stat(src.path)
        except OSError:
            continue  # gone since the walk: the check below sends it to the full ingest
        if not stat_mod.S_ISREG(st.st_mode):
            continue
        cursor = known.get(src.path)
        if cursor is None or cursor[:4] != (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev):
            return None  # new, or changed since its cursor
        seen.add(src.path)
    for path, (*_, gone_at) in known.items():
        if path not in seen and gone_at is None and not os.path.exists(path):
            return None  # vanished: the full ingest records it
    summary = IngestStats(files_seen=found, seconds=time.perf_counter() - started).as_dict()
    roots = sorted({str(root) for _, root in pairs if root.is_dir()})
    return {
        **summary,
        "digests_built": 0,
        "store": str(db),
        "roots": roots,
        "stale_files": facts["stale"],
    }


def _store_path(environ: Mapping[str, str]) -> Path:
    from helixd.paths import default_store_path

    value = environ.get("HELIX_STORE_DB")
    return Path(value).expanduser() if value else default_store_path()

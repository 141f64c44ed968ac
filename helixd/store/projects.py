"""The project directories Helix knows: where the sessions it holds ran (their ``cwd``).

Agents that keep their sessions inside each project (``Adapter.project_files``: Aider's
history, Crush's and legacy OpenCode's databases) are found there, a few ``stat`` calls
per directory, never by crawling the disk (docs/adapters.md, "Per-project files")."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final

from helixd.store.readonly import NoStore, open_reader

MAX_PROJECTS: Final = 5_000  # the most recently active directories


def known_projects(db: Path, limit: int = MAX_PROJECTS) -> list[str]:
    """Distinct absolute session cwds in the store at ``db``, most recent first; empty when
    there is no store yet (or it cannot be read now: the next scan asks again)."""
    if not db.is_file():
        return []
    try:
        con = open_reader(db, busy_timeout_ms=2_000)
    except NoStore:
        return []
    try:
        rows = con.execute(
            "SELECT cwd FROM sessions WHERE cwd IS NOT NULL AND cwd != ''"
            " GROUP BY cwd ORDER BY max(coalesce(ended_at, started_at, 0)) DESC LIMIT ?",
            (limit,),
        ).fetchall()
    except sqlite3.Error:
        return []
    finally:
        con.close()
    return [cwd for (cwd,) in rows if isinstance(cwd, str) and os.path.isabs(cwd)]

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
        return projects_of(con, limit)
    finally:
        con.close()


def projects_of(con: sqlite3.Connection, limit: int = MAX_PROJECTS) -> list[str]:
    """``known_projects`` on a connection the caller has open (``status`` reads its facts on
    it: a second connection costs it an open and a parse of the schema)."""
    try:
        rows = con.execute(
            "SELECT cwd FROM sessions WHERE cwd IS NOT NULL AND cwd != ''"
            " GROUP BY cwd ORDER BY max(coalesce(ended_at, started_at, 0)) DESC LIMIT ?",
            (limit,),
        ).fetchall()
    except sqlite3.Error:
        return []
    return [cwd for (cwd,) in rows if isinstance(cwd, str) and os.path.isabs(cwd)]

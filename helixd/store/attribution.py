"""A session's project as resolved by the analyze pass (``helixd.ingest.attribution``): repo,
its main worktree, domain and task reference (design spec §4.1)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any


def known_roots(con: sqlite3.Connection) -> dict[str, tuple[str, str | None]]:
    """Every main worktree resolved so far: ``{root: (repo, domain)}`` (the latest wins)."""
    return {
        str(root): (str(repo), domain)
        for root, repo, domain in con.execute(
            "SELECT repo_root, repo, domain FROM sessions WHERE repo_root IS NOT NULL"
            " AND repo IS NOT NULL ORDER BY coalesce(started_at, 0), id"
        )
    }


def session_inputs(con: sqlite3.Connection, session_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """``(id, cwd, git_branch)`` of these sessions."""
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(session_ids), 500):
        part = list(session_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        out.extend(
            con.execute(
                f"SELECT id, cwd, git_branch FROM sessions WHERE id IN ({marks})", part
            ).fetchall()
        )
    return out


def save(con: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """``(id, repo, repo_root, domain, task_ref)`` per session, in one transaction."""
    con.execute("BEGIN IMMEDIATE")
    try:
        con.executemany(
            "UPDATE sessions SET repo = coalesce(?, repo), repo_root = ?, domain = ?,"
            " task_ref = ? WHERE id = ?",
            [(repo, root, domain, task, sid) for sid, repo, root, domain, task in rows],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise

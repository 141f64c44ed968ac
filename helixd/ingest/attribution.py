"""The analyze pass's first step: each session's repo (through git when its directory is
still there), domain and task reference (design spec §4.1; rules in
``helixd.core.attribution``, git read by ``helixd.sources.gitrepo`` in a worker thread)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from helixd.core import attribution as rules
from helixd.sources import gitrepo

if TYPE_CHECKING:
    from helixd.store.database import Store

Project = tuple[str | None, str | None, str]  # repo, repo_root, domain


async def resolve_projects(
    store: Store, session_ids: Sequence[int], naming: rules.Naming
) -> dict[int, Project]:
    """``{session id: (repo, repo_root, domain)}``, saved at once (without task
    references) so the digests built next read them from the session rows."""
    inputs, known = await store.attribution_inputs(session_ids)
    cwds = sorted({cwd for _, cwd, _ in inputs if cwd})
    found = await asyncio.to_thread(_resolve_all, cwds) if naming.resolve_git else {}
    projects: dict[int, Project] = {}
    # the directories git answered for first: their roots name the gone ones beside them
    for sid, cwd, _ in sorted(inputs, key=lambda r: r[1] not in found):
        repo, root, domain, _remote = rules.attribute(cwd, found.get(cwd), known, naming)
        if root is not None and repo is not None:
            known.setdefault(root, (repo, domain))
        projects[sid] = (repo, root, domain)
    await store.save_attribution([(sid, *p, None) for sid, p in projects.items()])
    return projects


def _resolve_all(cwds: Sequence[str]) -> dict[str, rules.GitFacts]:
    out = {}
    for cwd in cwds:
        facts = gitrepo.resolve(cwd)
        if facts is not None:
            out[cwd] = facts
    return out


def with_task_refs(
    projects: dict[int, Project], digests: Sequence[tuple[Any, ...]], naming: rules.Naming
) -> list[tuple[Any, ...]]:
    """Set each digest's ``task_ref`` (branch, first prompt, commit messages) and return
    the session rows to save: ``(id, repo, repo_root, domain, task_ref)``."""
    patterns = naming.compiled()
    rows = []
    for sid, d, *_ in digests:
        ref = rules.task_ref(
            d.get("git_branch"),
            d.get("first_prompt"),
            [c["message"] for c in d.get("commits", []) if c.get("message")],
            patterns,
        )
        d["task_ref"] = ref
        repo, root, domain = projects.get(sid, (d.get("repo"), d.get("repo_root"), d["domain"]))
        rows.append((sid, repo, root, domain, ref))
    return rows

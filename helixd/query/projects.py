"""The project directories Helix knows (where its sessions ran), for the commands that look
for agents' per-project files (``helixd.store.projects``)."""

from __future__ import annotations

from helixd.store.projects import MAX_PROJECTS, known_projects, projects_of

__all__ = ["MAX_PROJECTS", "known_projects", "projects_of"]

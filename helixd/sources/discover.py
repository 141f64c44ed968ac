"""Finding the files to read: every file under an agent's roots that its adapter claims.

Light on purpose (no event loop, no store): ``helixd.ingest.pipeline`` reads what this finds,
and the quick re-scan (``helixd.cli.rescan``) stats the same files without starting the full CLI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from helixd.adapters import Adapter


class AgentConf(Protocol):
    @property
    def enabled(self) -> bool: ...
    @property
    def roots(self) -> Sequence[Path]: ...


class RootsConf(Protocol):
    """What finding the roots needs of the settings (the full model or the read settings)."""

    def agent(self, name: str) -> AgentConf: ...


def agent_roots(
    settings: RootsConf, adapters: Iterable[Adapter], environ: Mapping[str, str], home: Path
) -> list[tuple[Adapter, Path]]:
    """``[(adapter, root), ...]`` for every enabled adapter: configured roots, else its
    defaults (which honour the agents' own variables such as ``CLAUDE_CONFIG_DIR``)."""
    pairs: list[tuple[Adapter, Path]] = []
    for adapter in adapters:
        conf = settings.agent(adapter.name)
        if not conf.enabled:
            continue
        roots = [r.expanduser() for r in conf.roots] or adapter.default_roots(environ, home)
        pairs.extend((adapter, root) for root in roots)
    return pairs


@dataclass(frozen=True, slots=True)
class Source:
    """A file some adapter claims, found under one of its roots."""

    adapter: Adapter
    root: str
    path: str
    rel: str


def discover(roots: Iterable[tuple[Adapter, Path]]) -> Iterator[Source]:
    """Every file under each existing root that its adapter claims (no symlinked dirs)."""
    seen: set[str] = set()
    for adapter, root in roots:
        if not root.is_dir():
            continue
        root_s = str(root)
        cut = len(os.path.join(root_s, ""))
        for dirpath, dirnames, filenames in os.walk(root_s):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                rel = path[cut:].replace(os.sep, "/")
                if path not in seen and adapter.matches(rel):
                    seen.add(path)
                    yield Source(adapter, root_s, path, rel)

"""The adapter registry: plain data.  Adding an agent is one module plus one line here.

Nothing outside ``helixd/adapters/`` names an agent: ingest, store and CLI look adapters
up by name or by the root a file was found under.
"""

from __future__ import annotations

from typing import Final

from helixd.adapters import (
    aider,
    amp,
    claude,
    cline_cli,
    cline_tasks,
    codex,
    continue_dev,
    copilot,
    crush,
    cursor_agent,
    cursor_cli,
    cursor_ide,
    droid,
    gemini,
    goose,
    grok,
    kiro,
    kiro_cli,
    opencode,
    openhands,
    pi,
    qwen,
)
from helixd.adapters.base import Adapter, Chunk, FileContext, Table

REGISTRY: Final[tuple[Adapter, ...]] = (
    claude.ADAPTER,
    codex.ADAPTER,
    gemini.ADAPTER,
    grok.ADAPTER,
    # issue 16 part B: line files and JSON documents
    copilot.ADAPTER,
    pi.ADAPTER,
    cline_cli.ADAPTER,
    continue_dev.ADAPTER,
    openhands.ADAPTER,
    qwen.ADAPTER,
    droid.ADAPTER,
    amp.ADAPTER,
    # issue 16 part A: SQLite databases, directory trees, markdown histories
    crush.CRUSH,
    crush.OPENCODE_GO,
    goose.ADAPTER,
    aider.ADAPTER,
    cline_tasks.CLINE,
    cline_tasks.ROO,
    cline_tasks.KILO,
    cursor_ide.ADAPTER,
    # issue 16's missing agents
    opencode.ADAPTER,
    kiro.ADAPTER,
    kiro_cli.ADAPTER,
    cursor_agent.ADAPTER,
    cursor_cli.ADAPTER,
)


def adapter_named(name: str) -> Adapter:
    """The registered adapter called ``name``; KeyError names the known ones."""
    for adapter in REGISTRY:
        if adapter.name == name:
            return adapter
    known = ", ".join(a.name for a in REGISTRY)
    raise KeyError(f"unknown agent {name!r} (known: {known})")


__all__ = ["REGISTRY", "Adapter", "Chunk", "FileContext", "Table", "adapter_named"]

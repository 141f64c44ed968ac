"""The adapter catalogue: plain data.  Adding an agent is one parser module, one
declaration module and one line here (docs/architecture.md, "Adapters").

Each agent is two modules:

* its **declaration**, ``helixd/adapters/declared/<module>.py``: an ``Adapter`` of plain
  data (name, version, default roots, which files it claims, companion file, tables,
  project files, depth) and the cheap path predicates discovery, the plan, the status
  survey, the gate and the CLI need.  It imports only the standard library and
  ``helixd.adapters.base``;
* its **parser**, ``helixd/adapters/<module>.py`` (named by the declaration's ``parser``):
  ``PARSERS = {agent name: parse}``, imported the first time a file of the agent is parsed
  (``Adapter.parse`` is a ``base.LazyParser``).

Nothing outside ``helixd/adapters/`` names an agent: ingest, store and CLI look adapters
up by name (``adapter_named``) or take them all (``helixd.adapters.registry.REGISTRY``).
Importing this package costs nothing per agent; ``adapter_named`` imports one declaration
the first time it is asked for; ``REGISTRY`` imports every declaration and no parser.  A
re-scan with nothing new, ``status`` and completion load no parser; ``show`` loads its
agent's.
"""

from __future__ import annotations

import importlib
from typing import Final

from helixd.adapters.base import Adapter, Chunk, FileContext, Table

# (agent name, declaration module under helixd.adapters.declared, attribute holding its
# Adapter), in the order the agents are walked, listed and completed
CATALOGUE: Final[tuple[tuple[str, str, str], ...]] = (
    ("claude", "claude", "ADAPTER"),
    ("codex", "codex", "ADAPTER"),
    ("gemini", "gemini", "ADAPTER"),
    ("grok", "grok", "ADAPTER"),
    # issue 16 part B: line files and JSON documents
    ("copilot", "copilot", "ADAPTER"),
    ("pi", "pi", "ADAPTER"),
    ("cline-cli", "cline_cli", "ADAPTER"),
    ("continue", "continue_dev", "ADAPTER"),
    ("openhands", "openhands", "ADAPTER"),
    ("qwen", "qwen", "ADAPTER"),
    ("droid", "droid", "ADAPTER"),
    ("amp", "amp", "ADAPTER"),
    # issue 16 part A: SQLite databases, directory trees, markdown histories
    ("crush", "crush", "CRUSH"),
    ("opencode_go", "crush", "OPENCODE_GO"),
    ("goose", "goose", "ADAPTER"),
    ("aider", "aider", "ADAPTER"),
    ("cline_vscode", "cline_tasks", "CLINE"),
    ("roo", "cline_tasks", "ROO"),
    ("kilo", "cline_tasks", "KILO"),
    ("cursor_ide", "cursor_ide", "ADAPTER"),
    # issue 16's missing agents
    ("opencode", "opencode", "ADAPTER"),
    ("opencode_tree", "opencode_tree", "ADAPTER"),
    ("kiro", "kiro", "ADAPTER"),
    ("kiro_cli", "kiro_cli", "ADAPTER"),
    ("kiro_sessions", "kiro_sessions", "ADAPTER"),
    ("cursor_agent", "cursor_agent", "ADAPTER"),
    ("cursor_cli", "cursor_cli", "ADAPTER"),
)
AGENT_NAMES: Final[tuple[str, ...]] = tuple(name for name, _, _ in CATALOGUE)
_WHERE: Final = {name: (module, attribute) for name, module, attribute in CATALOGUE}


def adapter_named(name: str) -> Adapter:
    """The catalogued adapter called ``name``, its declaration imported on first use (its
    parser on its first ``parse``); KeyError names the known ones."""
    where = _WHERE.get(name)
    if where is None:
        raise KeyError(f"unknown agent {name!r} (known: {', '.join(AGENT_NAMES)})")
    module, attribute = where
    adapter = getattr(importlib.import_module(f"helixd.adapters.declared.{module}"), attribute)
    if not isinstance(adapter, Adapter):  # pragma: no cover - a catalogue typo
        raise TypeError(f"helixd.adapters.declared.{module}.{attribute} is not an Adapter")
    return adapter


__all__ = ["AGENT_NAMES", "CATALOGUE", "Adapter", "Chunk", "FileContext", "Table", "adapter_named"]

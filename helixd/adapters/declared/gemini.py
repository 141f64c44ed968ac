"""The declaration of the agent parsed by ``helixd.adapters.gemini``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "gemini"
# 2: tool results carry a status and the test counts of their output
# 3: a $rewindTo marker is keyed by its target and ordinal, not by its byte offset
VERSION: Final = 3


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$GEMINI_DATA_DIR`` (comma-separated, ccusage's name for ``~/.gemini/tmp``), else
    ``$GEMINI_CLI_HOME/.gemini/tmp`` (the CLI's home override), else ``~/.gemini/tmp``."""
    data = [p.strip() for p in environ.get("GEMINI_DATA_DIR", "").split(",") if p.strip()]
    if data:
        return [Path(p).expanduser() for p in data]
    base = environ.get("GEMINI_CLI_HOME", "").strip()
    return [(Path(base).expanduser() if base else home) / ".gemini" / "tmp"]


def _is_subagent(parts: list[str]) -> bool:
    return len(parts) >= 3 and parts[-3] == "chats"


def matches(rel: str) -> bool:
    """``session-*.json``/``.jsonl`` anywhere, and subagents' ``chats/<parent>/<id>.jsonl``;
    never ``logs.json``, checkpoints or settings."""
    parts = rel.split("/")
    name = parts[-1]
    if name.startswith("session-") and name.endswith((".json", ".jsonl")):
        return True
    return _is_subagent(parts) and name.endswith(".jsonl")


def whole_file(rel: str) -> bool:
    """Both forms: the ``.json`` is rewritten, the ``.jsonl`` rewrites message lines."""
    return True


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="gemini",
    default_roots=default_roots,
    matches=matches,
    whole_file=whole_file,
    description="Gemini CLI chat recordings (~/.gemini/tmp/<project>/chats)",
)

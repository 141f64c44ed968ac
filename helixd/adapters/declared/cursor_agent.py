"""The declaration of the agent parsed by ``helixd.adapters.cursor_agent``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "cursor_agent"
VERSION: Final = 1
DIR: Final = "agent-transcripts"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``~/.cursor/projects``."""
    return [home / ".cursor" / "projects"]


def _layout(rel: str) -> tuple[str, str | None] | None:
    """``(session id, parent id)`` of a transcript path, or None for another file."""
    parts = rel.split("/")
    if len(parts) < 3 or parts[1] != DIR or not parts[-1].endswith(".jsonl"):
        return None
    stem = parts[-1][: -len(".jsonl")]
    if len(parts) == 3:
        return stem, None
    if len(parts) == 4 and parts[2] == stem:
        return stem, None
    if len(parts) == 5 and parts[3] == "subagents":
        return stem, parts[2]
    return None


def matches(rel: str) -> bool:
    return _layout(rel) is not None


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="cursor_agent",
    default_roots=default_roots,
    matches=matches,
    description="Cursor agent transcripts (~/.cursor/projects/<slug>/agent-transcripts/)",
    records_usage=False,
    usage_note="Cursor's agent transcripts hold no token counts",
)

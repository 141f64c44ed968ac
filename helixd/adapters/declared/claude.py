"""The declaration of the agent parsed by ``helixd.adapters.claude``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "claude"
# 2: tool results carry a status and the test counts of their output; 3: retry events
VERSION: Final = 3


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$CLAUDE_CONFIG_DIR`` (comma-separated) or ``~/.claude`` and ``~/.config/claude``."""
    configured = [p.strip() for p in environ.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    bases = [Path(p).expanduser() for p in configured] or [
        home / ".claude",
        home / ".config/claude",
    ]
    return [base / "projects" for base in bases]


def matches(rel: str) -> bool:
    """Every ``*.jsonl`` under a projects root is a transcript; nothing else is opened."""
    return rel.endswith(".jsonl")


def sidecar(path: str) -> str | None:
    """A nested subagent's ``agent-<id>.meta.json`` (it names the agent type)."""
    if "subagents" not in path:  # every session file of a re-scan: no path parsing
        return None
    head, _, name = path.rpartition("/")  # string work: called for every file of a walk
    if "subagents" in head.split("/") and _agent_file(name):
        return f"{head}/{name[: -len('.jsonl')]}.meta.json"
    return None


def _agent_file(name: str) -> bool:
    """``agent-<id>.jsonl`` (as ``^agent-(.+)\\.jsonl$``; string tests: a compiled regex
    costs every command that loads the catalogue)."""
    middle = name[len("agent-") : -len(".jsonl")]
    return (
        name.startswith("agent-")
        and name.endswith(".jsonl")
        and middle != ""
        and "\n" not in middle
    )


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="claude",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    description="Claude Code transcripts (~/.claude/projects)",
)

"""The declaration of the agent parsed by ``helixd.adapters.grok``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "grok"

# 2: tool results carry a status and the test counts of their output
# 3: checked against grok-build's own serialized sessions: legacy ``raw_output`` reasoning
#    and backend tools, subagent directories linked to their parent
# 4: a turn's output tokens on its completion event
VERSION: Final = 4
_FILES = ("updates.jsonl", "events.jsonl", "summary.json", "chat_history.jsonl")
SESSION_FILES: Final = frozenset(_FILES)


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$GROK_HOME/sessions``, else ``~/.grok/sessions``."""
    base = environ.get("GROK_HOME", "").strip()
    return [(Path(base).expanduser() if base else home / ".grok") / "sessions"]


def matches(rel: str) -> bool:
    """The four session files inside a ``<cwd>/<session>/`` directory."""
    parts = rel.split("/")
    return len(parts) >= 3 and parts[-1] in SESSION_FILES


def whole_file(rel: str) -> bool:
    return rel.endswith("summary.json")


def sidecar(path: str) -> str | None:
    """``chat_history.jsonl`` sees its sibling ``updates.jsonl`` (is the log there?);
    ``updates.jsonl`` sees ``summary.json`` (the model when a turn names none)."""
    p = PurePosixPath(path)
    if p.name == "chat_history.jsonl":
        return str(p.with_name("updates.jsonl"))
    if p.name == "updates.jsonl":
        return str(p.with_name("summary.json"))
    return None


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="grok",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    usage_note="grok writes token usage only to updates.jsonl (turn_completed);"
    " this session has none",
    whole_file=whole_file,
    description="Grok Build sessions (~/.grok/sessions/<cwd>/<session>/)",
)

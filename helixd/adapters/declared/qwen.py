"""The declaration of the agent parsed by ``helixd.adapters.qwen``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "qwen"
VERSION: Final = 1


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$QWEN_RUNTIME_DIR/projects``, else ``$QWEN_HOME/projects``, else
    ``~/.qwen/projects``."""
    for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        base = environ.get(var, "").strip()
        if base:
            return [Path(base).expanduser() / "projects"]
    return [home / ".qwen" / "projects"]


def matches(rel: str) -> bool:
    """``<encoded cwd>/chats/<session id>.jsonl``."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[1] == "chats" and parts[2].endswith(".jsonl")


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="qwen",
    default_roots=default_roots,
    matches=matches,
    description="Qwen Code chat recordings (~/.qwen/projects/<cwd>/chats/<session id>.jsonl)",
)

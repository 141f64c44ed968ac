"""The declaration of the agent parsed by ``helixd.adapters.pi``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "pi"
VERSION: Final = 2  # 2: the recorded usage.cost.total


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``."""
    base = environ.get("PI_CODING_AGENT_DIR", "").strip()
    return [(Path(base).expanduser() if base else home / ".pi" / "agent") / "sessions"]


def matches(rel: str) -> bool:
    """``<project dir>/<file>.jsonl``: one level below the root."""
    parts = rel.split("/")
    return len(parts) == 2 and parts[1].endswith(".jsonl")


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="pi",
    default_roots=default_roots,
    matches=matches,
    description="Pi coding-agent sessions (~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl)",
)

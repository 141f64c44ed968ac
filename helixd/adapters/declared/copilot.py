"""The declaration of the agent parsed by ``helixd.adapters.copilot``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "copilot"
VERSION: Final = 1
SIDECAR: Final = "workspace.yaml"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$COPILOT_HOME/session-state``, else ``~/.copilot/session-state``."""
    base = environ.get("COPILOT_HOME", "").strip()
    return [(Path(base).expanduser() if base else home / ".copilot") / "session-state"]


def matches(rel: str) -> bool:
    """``<id>/events.jsonl`` and the flat ``<id>.jsonl`` directly under the root."""
    parts = rel.split("/")
    if len(parts) == 2:
        return parts[1] == "events.jsonl"
    return len(parts) == 1 and rel.endswith(".jsonl")


def sidecar(path: str) -> str | None:
    p = PurePosixPath(path)
    return str(p.with_name(SIDECAR)) if p.name == "events.jsonl" else None


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="copilot",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    description="GitHub Copilot CLI sessions (~/.copilot/session-state/<id>/events.jsonl)",
)

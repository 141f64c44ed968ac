"""The declaration of the agent parsed by ``helixd.adapters.kiro_sessions``: where its files
are and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "kiro_sessions"
VERSION: Final = 1
V2_DIR: Final = "cli"
V3_FILE: Final = "messages.jsonl"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$KIRO_HOME/sessions`` (else ``~/.kiro/sessions``)."""
    base = environ.get("KIRO_HOME", "").strip()
    return [(Path(base) if base else home / ".kiro") / "sessions"]


def matches(rel: str) -> bool:
    """``cli/<id>.jsonl`` (V2) and ``<workspace>/<session>/messages.jsonl`` (V3, IDE)."""
    parts = rel.split("/")
    if len(parts) == 2:
        return parts[0] == V2_DIR and parts[1].endswith(".jsonl")
    return len(parts) == 3 and parts[0] != V2_DIR and parts[2] == V3_FILE


def sidecar(path: str) -> str | None:
    """The session's header: ``<id>.json`` beside a V2 log, ``session.json`` beside V3's."""
    if path.endswith("/" + V3_FILE):
        return path[: -len(V3_FILE)] + "session.json"
    return path[: -len(".jsonl")] + ".json" if path.endswith(".jsonl") else None


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="kiro_sessions",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    description="Kiro CLI V2/V3 and Kiro IDE sessions (~/.kiro/sessions/)",
    records_usage=False,
    usage_note="Kiro records credits (V3 usage_summary), not tokens",
    max_depth=2,
)

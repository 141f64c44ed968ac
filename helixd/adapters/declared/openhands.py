"""The declaration of the agent parsed by ``helixd.adapters.openhands``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "openhands"
VERSION: Final = 1


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``~/.openhands`` (OpenHands' default file store)."""
    return [home / ".openhands"]


def matches(rel: str) -> bool:
    parts = rel.split("/")
    if not rel.endswith(".json"):
        return False
    if len(parts) >= 4 and parts[-2] == "events" and parts[-4] in ("sessions", "conversations"):
        return True
    return len(parts) >= 2 and parts[-2] == "trajectories"


def whole_file(rel: str) -> bool:
    return True


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="openhands",
    default_roots=default_roots,
    matches=matches,
    whole_file=whole_file,
    description="OpenHands event streams (~/.openhands/{sessions,conversations}/<id>/events/)",
)

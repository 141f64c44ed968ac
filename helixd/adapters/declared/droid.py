"""The declaration of the agent parsed by ``helixd.adapters.droid``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "droid"
VERSION: Final = 1
SETTINGS: Final = ".settings.json"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``~/.factory/sessions``."""
    return [home / ".factory" / "sessions"]


def matches(rel: str) -> bool:
    """``[<project dir>/]<id>.jsonl`` and its ``<id>.settings.json``."""
    parts = rel.split("/")
    return len(parts) <= 2 and (rel.endswith(".jsonl") or rel.endswith(SETTINGS))


def whole_file(rel: str) -> bool:
    return rel.endswith(SETTINGS)


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="droid",
    default_roots=default_roots,
    matches=matches,
    whole_file=whole_file,
    description="Factory Droid sessions (~/.factory/sessions/[<project>/]<id>.jsonl)",
)

"""The declaration of the agent parsed by ``helixd.adapters.amp``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "amp"
VERSION: Final = 1


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/amp/threads``, else ``~/.local/share/amp/threads``."""
    base = environ.get("XDG_DATA_HOME", "").strip()
    return [(Path(base).expanduser() if base else home / ".local" / "share") / "amp" / "threads"]


def matches(rel: str) -> bool:
    """``<thread id>.json`` directly under the root."""
    return "/" not in rel and rel.endswith(".json")


def whole_file(rel: str) -> bool:
    return True


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="amp",
    default_roots=default_roots,
    matches=matches,
    whole_file=whole_file,
    description="Amp threads (~/.local/share/amp/threads/T-<id>.json)",
)

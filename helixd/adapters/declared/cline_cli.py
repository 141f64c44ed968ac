"""The declaration of the agent parsed by ``helixd.adapters.cline_cli``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "cline-cli"
VERSION: Final = 2  # 2: the recorded metrics.cost
MESSAGES: Final = ".messages.json"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$CLINE_DIR/data/sessions``, else ``~/.cline/data/sessions``."""
    base = environ.get("CLINE_DIR", "").strip()
    return [(Path(base).expanduser() if base else home / ".cline") / "data" / "sessions"]


def matches(rel: str) -> bool:
    """``<id>/<id>.json`` and ``<id>/<id>.messages.json``, nothing else."""
    parts = rel.split("/")
    if len(parts) < 2:
        return False
    sid, name = parts[-2], parts[-1]
    return name in (f"{sid}.json", f"{sid}{MESSAGES}")


def whole_file(rel: str) -> bool:
    return rel.endswith(".json")


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="cline_cli",
    default_roots=default_roots,
    matches=matches,
    whole_file=whole_file,
    description="Cline SDK/CLI sessions (~/.cline/data/sessions/<id>/<id>.messages.json)",
)

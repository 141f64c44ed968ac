"""The declaration of the agent parsed by ``helixd.adapters.goose``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, Table

NAME: Final = "goose"
VERSION: Final = 2  # starts where the first four are: tool results with status and test counts
TABLES: Final = (Table("messages", order="id"), Table("sessions", order="updated_at"))


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/goose/sessions``, else ``~/.local/share/goose/sessions``."""
    base = environ.get("XDG_DATA_HOME", "").strip()
    return [(Path(base) if base else home / ".local" / "share") / "goose" / "sessions"]


def matches(rel: str) -> bool:
    return rel == "sessions.db" or rel.endswith("/sessions.db")


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="goose",
    default_roots=default_roots,
    matches=matches,
    description="Goose sessions (~/.local/share/goose/sessions/sessions.db, SQLite)",
    tables=TABLES,
)

"""The declaration of the agent parsed by ``helixd.adapters.kiro_cli``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, Table

NAME: Final = "kiro_cli"
VERSION: Final = 1
DB: Final = "data.sqlite3"


V2: Final = "conversations_v2"


LEGACY: Final = "conversations"
TABLES: Final = (Table(V2, order="updated_at"), Table(LEGACY, order=None, key="key"))


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``kiro-cli`` and ``amazon-q`` under ``$XDG_DATA_HOME`` (else ``~/.local/share``) and
    under macOS's ``~/Library/Application Support``."""
    data = environ.get("XDG_DATA_HOME", "").strip()
    linux = Path(data) if data else home / ".local" / "share"
    mac = home / "Library" / "Application Support"
    return [base / app for base in (linux, mac) for app in ("kiro-cli", "amazon-q")]


def matches(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] == DB


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="kiro_cli",
    default_roots=default_roots,
    matches=matches,
    description="Kiro CLI / Amazon Q CLI conversations (kiro-cli/data.sqlite3, SQLite)",
    tables=TABLES,
    records_usage=False,
    usage_note="Kiro CLI's database keeps request sizes in bytes and credits, not tokens",
)

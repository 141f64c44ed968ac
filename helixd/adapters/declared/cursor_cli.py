"""The declaration of the agent parsed by ``helixd.adapters.cursor_cli``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, Table

NAME: Final = "cursor_cli"
VERSION: Final = 1
DB: Final = "store.db"
TABLES: Final = (
    Table("meta", order=None, key="key"),
    # JSON messages only: the protobuf tree nodes are not text (see the module docstring)
    Table("blobs", order="rowid", where="substr(CAST(data AS BLOB), 1, 1) = X'7B'"),
)


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``~/.cursor/chats`` (the same on Linux and macOS)."""
    return [home / ".cursor" / "chats"]


def matches(rel: str) -> bool:
    """``<workspace-hash>/<chat-id>/store.db``."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[2] == DB and all(parts[:2])


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="cursor_cli",
    default_roots=default_roots,
    matches=matches,
    description="cursor-agent CLI chats (~/.cursor/chats/<workspace>/<chat>/store.db, SQLite)",
    tables=TABLES,
    records_usage=False,
    usage_note="the cursor-agent CLI's store.db keeps no token counts",
    max_depth=2,
)

"""The declaration of the agent parsed by ``helixd.adapters.opencode``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, Table

NAME: Final = "opencode"
VERSION: Final = 2  # 2: the recorded cost
TABLES: Final = (
    Table("session", order="time_updated"),
    Table("message", order="time_updated"),
    Table("part", order="time_updated"),
)


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/opencode`` (else ``~/.local/share/opencode``, on macOS too)."""
    data = environ.get("XDG_DATA_HOME", "").strip()
    return [(Path(data) if data else home / ".local" / "share") / "opencode"]


def matches(rel: str) -> bool:
    """``opencode.db`` and the channel databases ``opencode-<channel>.db`` at the root."""
    return "/" not in rel and rel.startswith("opencode") and rel.endswith(".db")


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="opencode",
    default_roots=default_roots,
    matches=matches,
    description="OpenCode sessions (~/.local/share/opencode/opencode.db, SQLite)",
    tables=TABLES,
    usage_note="per assistant message in opencode.db (message.data.tokens)",
    max_depth=0,  # snapshot/, storage/, log/ beside the databases are not listed or watched
)

"""The declaration of the agent parsed by ``helixd.adapters.cursor_ide``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, Table

NAME: Final = "cursor_ide"
VERSION: Final = 2  # starts where the first four are: tool results with status and test counts
CHAT: Final = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSER: Final = "composer.composerData"
TABLES: Final = (
    Table("ItemTable", order=None, key="key", where=f"key IN ('{CHAT}', '{COMPOSER}')"),
)


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``Cursor/User/workspaceStorage`` under ``$XDG_CONFIG_HOME`` (else ``~/.config``) and
    under macOS's ``~/Library/Application Support``."""
    config = environ.get("XDG_CONFIG_HOME", "").strip()
    linux = Path(config) if config else home / ".config"
    mac = home / "Library" / "Application Support"
    return [base / "Cursor" / "User" / "workspaceStorage" for base in (linux, mac)]


def matches(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-1] == "state.vscdb"


def sidecar(path: str) -> str | None:
    return str(Path(path).with_name("workspace.json"))


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="cursor_ide",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    description="Cursor IDE chats (Cursor/User/workspaceStorage/<hash>/state.vscdb, SQLite)",
    tables=TABLES,
    records_usage=False,
    usage_note="Cursor's workspace database keeps the chats, not their token counts",
)

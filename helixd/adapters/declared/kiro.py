"""The declaration of the agent parsed by ``helixd.adapters.kiro``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter
from helixd.adapters.declared.continue_dev import sidecar

NAME: Final = "kiro"
VERSION: Final = 1
INDEX: Final = "sessions.json"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``Kiro/User/globalStorage/kiro.kiroagent/workspace-sessions`` under
    ``$XDG_CONFIG_HOME`` (else ``~/.config``) and macOS's ``~/Library/Application Support``."""
    config = environ.get("XDG_CONFIG_HOME", "").strip()
    linux = Path(config) if config else home / ".config"
    mac = home / "Library" / "Application Support"
    tail = ("Kiro", "User", "globalStorage", "kiro.kiroagent", "workspace-sessions")
    return [base.joinpath(*tail) for base in (linux, mac)]


def matches(rel: str) -> bool:
    """``<workspace>/<sessionId>.json``; not the workspace's ``sessions.json`` index."""
    parts = rel.split("/")
    return len(parts) == 2 and parts[1].endswith(".json") and parts[1] != INDEX


def whole_file(rel: str) -> bool:
    return True


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="kiro",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    whole_file=whole_file,
    description="Kiro IDE chat sessions (globalStorage/kiro.kiroagent/workspace-sessions)",
    records_usage=False,
    usage_note="Kiro's workspace session documents hold no token counts",
)

"""The declaration of the agent parsed by ``helixd.adapters.continue_dev``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "continue"
VERSION: Final = 1
INDEX: Final = "sessions.json"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$CONTINUE_GLOBAL_DIR/sessions``, else ``~/.continue/sessions``."""
    base = environ.get("CONTINUE_GLOBAL_DIR", "").strip()
    return [(Path(base).expanduser() if base else home / ".continue") / "sessions"]


def matches(rel: str) -> bool:
    """``<sessionId>.json`` directly under the root; not the ``sessions.json`` index."""
    return "/" not in rel and rel.endswith(".json") and rel != INDEX


def whole_file(rel: str) -> bool:
    return True


def sidecar(path: str) -> str | None:
    return str(PurePosixPath(path).with_name(INDEX))


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="continue_dev",
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    whole_file=whole_file,
    description="Continue sessions (~/.continue/sessions/<uuid>.json)",
    records_usage=False,
    usage_note="Continue's session files hold no token counts (dev_data's token log names"
    " no session)",
)

"""The declarations of the agents parsed by ``helixd.adapters.cline_tasks`` (Cline, Roo Code
and Kilo Code in VS Code: one task format): where their files are and which ones they claim
(plain data and cheap path predicates; importing it loads no parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, RootsFn

# 2 starts where the first four are (tool results with status and test counts); 3: the
# recorded api_req cost
VERSION: Final = 3
FILE: Final = "ui_messages.json"
API_FILE: Final = "api_conversation_history.json"


def _vscode_roots(ext: str) -> RootsFn:
    def roots(environ: Mapping[str, str], home: Path) -> list[Path]:
        """``globalStorage/<extension>/tasks`` of VS Code on Linux and macOS."""
        config = environ.get("XDG_CONFIG_HOME", "").strip()
        linux = Path(config) if config else home / ".config"
        mac = home / "Library" / "Application Support"
        return [base / "Code" / "User" / "globalStorage" / ext / "tasks" for base in (linux, mac)]

    return roots


def matches(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-1] in (FILE, API_FILE)


def whole_file(rel: str) -> bool:
    return True


def _adapter(name: str, ext: str, label: str) -> Adapter:
    return Adapter(
        name=name,
        version=VERSION,
        parser="cline_tasks",
        default_roots=_vscode_roots(ext),
        matches=matches,
        whole_file=whole_file,
        description=f"{label} tasks (VS Code globalStorage/{ext}/tasks/<id>/ui_messages.json"
        " and api_conversation_history.json)",
    )


CLINE: Final = _adapter("cline_vscode", "saoudrizwan.claude-dev", "Cline (VS Code)")
ROO: Final = _adapter("roo", "rooveterinaryinc.roo-cline", "Roo Code")
KILO: Final = _adapter("kilo", "kilocode.kilo-code", "Kilo Code")

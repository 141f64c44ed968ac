"""Kiro IDE chat sessions (``<Kiro user dir>/globalStorage/kiro.kiroagent/workspace-sessions/
<workspace>/<sessionId>.json``).

Pure: bytes in, records out.  Evidence (README's agent table): only constructed files exist
in the corpus (``yigitkonur/cli-continues`` test fixtures), in the layout that public Kiro
readers look in (``Kiro/User/globalStorage/kiro.kiroagent/workspace-sessions``).  Kiro's chat
is built on Continue, and these documents are Continue's session documents with Kiro's field
names, so they are read by Continue's history reader (``continue_dev.HistoryRun``):

* **Files**: ``<workspace>/<sessionId>.json``, one JSON document per session rewritten whole
  (``whole_file``): ``{sessionId, title, workspacePath, selectedModel, history[]}``; the
  workspace's ``sessions.json`` index is the sidecar (its ``dateCreated``, as Continue's).
* **History items** ``{message{role, content, id}}``: ``content`` a string or a list of
  ``{type: text, text}`` blocks; roles as Continue's (``user``, ``assistant`` with
  ``toolCalls``, ``tool``, ``thinking``).  Events are keyed by message id.
* **Identity**: ``kiro:<sessionId>``; cwd ``workspacePath``; model ``selectedModel``.
* **Usage**: none recorded in these documents.
* **Not read**: Kiro's ``.chat`` execution files (``kiro.kiroagent/<hash>/…``) and the Kiro
  CLI's SQLite conversations: no sample of either is public in the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from helixd.adapters.base import Adapter, Chunk
from helixd.adapters.continue_dev import HistoryRun, parse_history, sidecar
from helixd.adapters.grok_summary import first_str
from helixd.core.records import Parsed

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


class _Run(HistoryRun):
    CWD_KEY = "workspacePath"

    def document(self, obj: Mapping[str, Any], created: int | None) -> None:
        super().document(obj, created)
        model = first_str(obj, "selectedModel")
        if model:
            self.info["model"] = model


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    return parse_history(_Run, NAME, chunk)


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parse=parse,
    default_roots=default_roots,
    matches=matches,
    sidecar=sidecar,
    whole_file=whole_file,
    description="Kiro IDE chat sessions (globalStorage/kiro.kiroagent/workspace-sessions)",
    records_usage=False,
    usage_note="Kiro's workspace session documents hold no token counts",
)

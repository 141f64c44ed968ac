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
from typing import Any, Final

from helixd.adapters.base import Chunk
from helixd.adapters.continue_dev import HistoryRun, parse_history
from helixd.adapters.declared.kiro import NAME
from helixd.adapters.fields import first_str
from helixd.core.records import Parsed


class _Run(HistoryRun):
    CWD_KEY = "workspacePath"

    def document(self, obj: Mapping[str, Any], created: int | None) -> None:
        super().document(obj, created)
        model = first_str(obj, "selectedModel")
        if model:
            self.info["model"] = model


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    return parse_history(_Run, NAME, chunk)


PARSERS: Final = {NAME: parse}

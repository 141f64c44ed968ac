"""OpenCode's JSON storage tree (``${XDG_DATA_HOME:-~/.local/share}/opencode/storage/``): what
an OpenCode older than its SQLite database (or one whose migration has not run) keeps.

Pure: lines in, records out.  The layout, from OpenCode's published source
(``packages/opencode/src/storage/storage.ts``: ``Storage.write(key)`` writes
``storage/<key…>.json``; ``session/index.ts``: ``["session", projectID, id]``,
``["message", sessionID, id]``, ``["part", messageID, id]``; each file the whole object, ids
included, as ``message-v2.ts`` defines it):

* ``session/<project>/<session>.json`` — one session (``id``, ``parentID``, ``directory``,
  ``title``, ``version``, ``time {created, updated}``), one JSON document (indented over
  many lines) read whole on every change;
* ``message/<session>/<message>.json`` — one message, read **together with its parts**
  ``part/<message>/<part>.json`` (``helixd/sources/bundle.py``: the message's line first,
  then one line per part), since a part's file does not say whose it is: the role is the
  message's.  A message and its parts are read again whole whenever any of them changes;
  the rest of the session is not.

**One session with the database.**  Every record is the one ``opencode.db`` would give
(``helixd/adapters/opencode.py`` reads the same objects from its rows and does the work
here too): session ``opencode:<session>``, event keys ``<part id>``, usage key
``opencode:<message id>`` (``replace``), records carried under the agent ``opencode``.  A
session both in the tree and in the database (OpenCode migrates the tree into the database
once and keeps the files) is therefore one session in the store, each message's tokens one
usage row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.opencode_tree import NAME
from helixd.adapters.fields import get_dict, get_str
from helixd.adapters.guard import each_line, guarded
from helixd.adapters.opencode import _Run as _RowRun
from helixd.core.records import Parsed


class _Run(_RowRun):
    """The database's rules over the tree's objects: each object becomes the row the
    migration (``storage/json-migration.ts``) would have written."""

    def __init__(self, state: Mapping[str, Any], rel: str) -> None:
        super().__init__(state)
        self.rel = rel
        where = rel.split("/")
        self.dir_session = where[1] if len(where) == 3 and where[0] == "message" else ""
        self.dir_message = where[2].removesuffix(".json") if self.dir_session else ""
        self.session_id = get_str(state, "session") or self.dir_session
        self.message_id = get_str(state, "message") or self.dir_message

    def line(self, offset: int, raw: bytes) -> None:
        doc, _ = jsonl.decode(raw)
        if "type" in doc:
            self.part_doc(offset, doc)
        elif "role" in doc:
            self.message_doc(offset, doc)
        else:
            self.unknown("object without role or type")

    def session_doc(self, doc: Mapping[str, Any]) -> None:
        times = get_dict(doc, "time")
        row = {
            "id": doc.get("id"),
            "parent_id": doc.get("parentID"),
            "directory": doc.get("directory"),
            "title": doc.get("title"),
            "version": doc.get("version"),
            "time_created": times.get("created"),
            "time_updated": times.get("updated"),
        }
        self.session(row)

    def message_doc(self, offset: int, doc: Mapping[str, Any]) -> None:
        self.message_id = get_str(doc, "id") or self.dir_message
        self.session_id = get_str(doc, "sessionID") or self.dir_session
        row = {"id": self.message_id, "session_id": self.session_id, "data": doc}
        self.message(offset, row)

    def part_doc(self, offset: int, doc: Mapping[str, Any]) -> None:
        row = {
            "id": doc.get("id"),
            "message_id": get_str(doc, "messageID") or self.message_id,
            "session_id": get_str(doc, "sessionID") or self.session_id,
            "data": doc,
        }
        self.part(offset, row)


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(state, chunk.ctx.rel)
    if chunk.ctx.rel.startswith("session/"):  # one document, indented over many lines
        doc = jsonl.whole_document(chunk, "session file")
        if isinstance(doc, Parsed):
            return doc
        guarded(run, chunk.base, len(chunk.data), run.session_doc, doc)
        return run.parsed(len(chunk.data), 1)
    consumed, lines = each_line(chunk, run, run.line)
    return run.parsed(
        consumed, lines, roles=run.roles, session=run.session_id, message=run.message_id
    )


PARSERS: Final = {NAME: parse}

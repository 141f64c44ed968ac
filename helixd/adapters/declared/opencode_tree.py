"""The declaration of the agent parsed by ``helixd.adapters.opencode_tree``: where its files
are and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter
from helixd.adapters.declared.opencode import NAME as OPENCODE

NAME: Final = "opencode_tree"
VERSION: Final = 1
KINDS: Final = ("session", "message")  # the directories whose files are sources


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/opencode/storage`` (else ``~/.local/share/opencode/storage``)."""
    data = environ.get("XDG_DATA_HOME", "").strip()
    return [(Path(data) if data else home / ".local" / "share") / "opencode" / "storage"]


def matches(rel: str) -> bool:
    """``session/<project>/<id>.json`` and ``message/<session>/<id>.json`` (a message's parts
    come with it, see ``bundle``)."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] in KINDS and parts[2].endswith(".json")


def bundle(rel: str) -> str | None:
    """A message's parts: ``part/<message id>/`` (the file's name is its id)."""
    parts = rel.split("/")
    if len(parts) == 3 and parts[0] == "message" and parts[2].endswith(".json"):
        return f"part/{parts[2][: -len('.json')]}"
    return None


def is_member(rel: str) -> bool:
    """A part: ``part/<message id>/<part id>.json`` (a member of its message's bundle)."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] == "part" and parts[2].endswith(".json")


def member_owner(rel: str, data: bytes) -> str | None:
    """The message a part belongs to: ``message/<sessionID>/<message id>.json``, the session
    named in the part (a part file holds its ``sessionID`` and ``messageID``; the message id
    is its directory's name and must agree)."""
    if not is_member(rel):
        return None
    import json  # the daemon's mapping of a part's event only (a walk never calls this)

    message = rel.split("/")[1]
    try:
        doc = json.loads(data)
    except ValueError:  # cut at the head's end (a big tool output), or being written
        doc = _head_ids(data)
    if not isinstance(doc, dict):
        return None
    session = doc.get("sessionID")
    if doc.get("messageID", message) != message or not _plain(session):
        return None
    return f"message/{session}/{message}.json"


def _head_ids(data: bytes) -> dict[str, str]:
    """``sessionID`` and ``messageID`` read from the start of a part that is not whole JSON
    (OpenCode writes a part's ids before its content): each key's first occurrence as a
    JSON key (a quoted name followed by a colon; inside a string the quotes would be
    escaped), its value a plain id."""
    import re

    found: dict[str, str] = {}
    for key in ("sessionID", "messageID"):
        m = re.search(rb'"' + key.encode() + rb'"\s*:\s*"([A-Za-z0-9_.-]{1,200})"', data)
        if m is not None:
            found[key] = m.group(1).decode("ascii")
    return found


def _plain(name: object) -> bool:
    """An id usable as a file name: letters, digits, ``_``, ``-`` and ``.`` (never ``.`` or
    ``..``, a separator or a NUL)."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 200
        and name not in (".", "..")
        and all(c.isascii() and (c.isalnum() or c in "_-.") for c in name)
    )


def _whole(rel: str) -> bool:
    return True


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="opencode_tree",
    default_roots=default_roots,
    matches=matches,
    whole_file=_whole,
    description="OpenCode's JSON storage tree (~/.local/share/opencode/storage/, older versions)",
    usage_note="per assistant message (message/<session>/<message>.json: tokens)",
    max_depth=2,
    bundle=bundle,
    agent=OPENCODE,
    is_member=is_member,
    member_owner=member_owner,
)

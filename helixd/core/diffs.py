"""An edit tool call's change as a unified diff, from the shape of its input (whatever the
agent calls the tool): ``old_string``/``new_string`` (with ``edits`` lists of them), a whole
file written (``content``), or a patch the agent already wrote (``*** Begin Patch`` blocks,
``@@`` hunks).  Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

MAX_LINES: Final = 400

_OLD: Final = ("old_string", "old_str", "oldText", "old")
_NEW: Final = ("new_string", "new_str", "newText", "new")
_PATCH: Final = ("patch", "input", "diff")


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, str):
            return v
    return None


def _pair(path: str, old: str, new: str) -> list[str]:
    import difflib  # loaded by the first edit shown (``show`` of a page without one: never)

    return list(
        difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            "a/" + path.lstrip("/"),
            "b/" + path.lstrip("/"),
            n=2,
            lineterm="",
        )
    )


def edit_diff(args: Any, path: str = "file") -> str | None:
    """The diff an edit call's input describes, or None when it describes none."""
    if isinstance(args, str):
        text = args
        return (
            text if ("*** Begin Patch" in text or "\n@@" in text or text.startswith("@@")) else None
        )
    if not isinstance(args, Mapping):
        return None
    path = _first(args, ("file_path", "path", "filename", "absolute_path")) or path
    lines: list[str] = []
    edits = args.get("edits")
    if isinstance(edits, list):
        for e in edits:
            if isinstance(e, Mapping):
                old, new = _first(e, _OLD), _first(e, _NEW)
                if old is not None and new is not None:
                    lines.extend(_pair(path, old, new))
    old, new = _first(args, _OLD), _first(args, _NEW)
    if old is not None and new is not None:
        lines.extend(_pair(path, old, new))
    content = args.get("content")
    if not lines and isinstance(content, str) and old is None:
        lines = [f"+++ b/{path}", *("+" + line for line in content.splitlines())]
    if not lines:
        patch = _first(args, _PATCH)
        return edit_diff(patch, path) if patch else None
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"… {len(lines) - MAX_LINES} more lines"]
    return "\n".join(lines)

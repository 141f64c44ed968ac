"""Installing Helix's hook entries into the agents' settings files (ecosystem.md §1.8).

:func:`plan` reads a target file and computes its new text without writing; :func:`apply`
backs the old file up and replaces it atomically, re-planning when the agent rewrote the
file in between.  Nothing is written when the new text equals the old one.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from helixd.adapters.hooktargets import HookTarget
from helixd.ops.hooks import created, fileedit, jsonedit
from helixd.ops.hooks.jsonedit import HookFileError

Action = Literal["install", "uninstall"]

__all__ = ["Change", "HookFileError", "apply", "plan", "snippet", "state"]


@dataclass(frozen=True)
class Change:
    target: HookTarget
    action: Action
    old: str | None  # None: the file does not exist
    new: str | None  # None: the file is (or stays) absent
    marks: tuple[str, ...] = ()  # objects install creates inside the file (created.py)

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        return fileedit.diff(self.target.path, self.old, self.new)


def _owned(t: HookTarget) -> str:
    doc = t.value if t.value is not None else {"hooks": {e: [g] for e, g in t.groups}}
    return json.dumps(doc, indent=2) + "\n"


def _script_text(t: HookTarget, action: Action, old: str | None) -> str | None:
    """A script Helix owns: written on install, deleted on uninstall; a file of the user's
    at that path (no :data:`SCRIPT_MARK` line) is refused by install and kept by uninstall."""
    from helixd.adapters.hooktargets import SCRIPT_MARK

    ours = old is None or SCRIPT_MARK in old.splitlines()[1:2]
    if action == "uninstall":
        return None if ours else old
    if not ours:
        raise HookFileError(
            f"{t.path} is a hook of your own (not Helix's); left untouched: move it aside"
            " or run Helix's command from it"
        )
    return t.text


def snippet(t: HookTarget) -> str:
    """What to paste by hand when the file cannot be edited (commented settings)."""
    if t.kind == "script":
        return t.text
    if t.kind == "json-entry":
        node: object = t.value
        for key in reversed(t.keys):
            node = {key: node}
        return json.dumps(node, indent=2) + "\n"
    return _owned(t)


def mark(t: HookTarget) -> str:
    """The created-record name of the object holding an entry (``mcpServers`` …)."""
    return f"{t.path}#{'.'.join(t.keys[:-1])}"


def _entry_text(
    t: HookTarget, action: Action, old: str | None, created: Collection[str]
) -> str | None:
    where, value = str(t.path), t.value or {}
    drop = mark(t) in created
    if t.kind == "toml-entry":
        from helixd.ops.hooks import tomledit

        if action == "install":
            return tomledit.set_table(old or "", where, t.keys, value, t.marker)
        return None if old is None else tomledit.remove_table(old, where, t.keys, t.marker, drop)
    if old is None:
        if action == "uninstall":
            return None
        return jsonedit.dump(jsonedit.set_entry({}, t.keys, value, t.marker, where), None)
    doc = jsonedit.parse(old, where, comments_allowed=t.comments)
    if action == "install":
        new = jsonedit.set_entry(doc, t.keys, value, t.marker, where)
    else:
        new = jsonedit.remove_entry(doc, t.keys, t.marker, drop)
    return old if new == doc else jsonedit.dump(new, old)


def _parent_absent(t: HookTarget, old: str | None) -> bool:
    """Whether install creates the object holding the entry (uninstall then removes it)."""
    if len(t.keys) < 2:
        return False
    if old is None:
        return True
    if t.kind == "toml-entry":
        from helixd.ops.hooks import tomledit

        return not tomledit.has_table(old, t.keys[:-1])
    parent = jsonedit.entry_parent(jsonedit.parse(old, str(t.path), t.comments), t.keys, "")
    return parent is None


def _new_text(
    t: HookTarget, action: Action, old: str | None, created: Collection[str] = ()
) -> str | None:
    where = str(t.path)
    if t.kind in ("json-entry", "toml-entry"):
        return _entry_text(t, action, old, created)
    if t.kind == "script":
        return _script_text(t, action, old)
    if t.kind == "owned":
        if old is not None:
            # refuse to replace or delete a file we cannot read
            jsonedit.parse(old, where, hooks_shape=t.value is None)
        return _owned(t) if action == "install" else None
    if t.kind == "toml-argv":
        from helixd.ops.hooks import tomledit

        if old is None:
            return (
                tomledit.install("", where, t.key, t.argv, t.chain_flag)
                if action == "install"
                else None
            )
        edit = tomledit.install if action == "install" else tomledit.uninstall
        return edit(old, where, t.key, t.argv, t.chain_flag)
    if old is None:
        if action == "uninstall" or t.only_if_exists:
            return None
        return jsonedit.dump(jsonedit.install({}, t.groups), None)
    doc = jsonedit.parse(old, where, comments_allowed=t.comments)
    new = jsonedit.install(doc, t.groups) if action == "install" else jsonedit.uninstall(doc)
    return old if new == doc else jsonedit.dump(new, old)


def _empty(t: HookTarget, text: str) -> bool:
    """Whether ``text`` holds nothing: ``{}`` for a JSON file, no key and no comment for TOML."""
    if t.kind == "toml-argv":
        return text.strip() == ""
    if t.kind == "script":
        return False
    return jsonedit.parse(text, str(t.path)) == {}


def plan(t: HookTarget, action: Action, created: Collection[str] = ()) -> Change:
    """The change ``action`` would make to ``t``; HookFileError when the file is unusable.
    Uninstall removes a file install created (``created``: its record) once it holds nothing."""
    old = fileedit.read(t.path)
    new = _new_text(t, action, old, created)
    if action == "uninstall" and new is not None and str(t.path) in created and _empty(t, new):
        new = None
    marks = (mark(t),) if action == "install" and t.keys and _parent_absent(t, old) else ()
    return Change(t, action, old, new, marks)


def apply(
    change: Change, backup_dir: Path, created_log: Path | None = None, attempts: int = 3
) -> Path | None:
    """Write ``change`` (backup first); returns the backup's path, if one was made.  A file
    or directories install creates are recorded in ``created_log``; uninstall removes the
    recorded directories that it leaves empty."""
    path = change.target.path
    for _ in range(attempts):
        if not change.changed:
            return None
        current = fileedit.read(path)
        if current != change.old:  # the agent rewrote the file since it was read
            change = plan(change.target, change.action, created.load(created_log))
            continue
        saved = None if current is None else fileedit.backup(path, backup_dir)
        if change.new is None:
            fileedit.remove(path)
            created.remove_empty_dirs(created_log, path)
        else:
            made = [*created.missing_dirs(path), path] if current is None else []
            created.add(created_log, [*made, *change.marks])
            own = change.target.kind in ("owned", "script")  # ours: our mode, always
            fileedit.atomic_write(path, change.new, change.target.mode, own=own)
        if change.action == "uninstall" and change.target.keys:
            created.discard(created_log, [mark(change.target)])
        return saved
    raise HookFileError(f"{path} keeps changing; try again")


State = Literal["installed", "outdated", "absent", "no-file"]


def state(t: HookTarget) -> State:
    """installed: install would change nothing; outdated: Helix entries that differ;
    absent: no Helix entries; no-file: an optional file that does not exist."""
    old = fileedit.read(t.path)
    if old is None and t.only_if_exists:
        return "no-file"
    if _new_text(t, "install", old) == old:
        return "installed"
    return "outdated" if _new_text(t, "uninstall", old) != old else "absent"

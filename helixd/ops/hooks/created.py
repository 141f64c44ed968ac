"""What ``hooks install`` created — settings files and the directories above them — so that
``hooks uninstall`` removes exactly those once they hold nothing of the user's: a file left
as ``{}`` (or empty) and directories left empty.  Anything that existed before install is
never removed.

The record is a small JSON list of absolute paths in Helix's state directory (0600), written
atomically.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from helixd.ops.hooks import fileedit


def load(log: Path | None) -> set[str]:
    if log is None:
        return set()
    try:
        value = json.loads(log.read_text())
    except (FileNotFoundError, ValueError):
        return set()
    return {p for p in value if isinstance(p, str)} if isinstance(value, list) else set()


def _save(log: Path, paths: set[str]) -> None:
    if not paths:
        log.unlink(missing_ok=True)
        return
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fileedit.atomic_write(log, json.dumps(sorted(paths), indent=1) + "\n", new_mode=0o600)


def add(log: Path | None, paths: Iterable[Path | str]) -> None:
    names = {str(p) for p in paths}
    if log is not None and names - load(log):
        _save(log, load(log) | names)


def discard(log: Path | None, names: Iterable[str]) -> None:
    recorded = load(log)
    if log is not None and recorded & set(names):
        _save(log, recorded - set(names))


def missing_dirs(path: Path) -> list[Path]:
    """The directories above ``path`` that do not exist yet, outermost first."""
    out: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return out[::-1]


def remove_empty_dirs(log: Path | None, path: Path) -> list[Path]:
    """Remove the recorded directories above ``path`` that are empty now, innermost first;
    returns them."""
    recorded = load(log)
    removed: list[Path] = []
    parent = path.parent
    while str(parent) in recorded:
        try:
            parent.rmdir()
        except OSError:  # not empty (the user or the agent put something there), or gone
            break
        removed.append(parent)
        recorded.discard(str(parent))
        parent = parent.parent
    recorded.discard(str(path))
    if log is not None and recorded != load(log):
        _save(log, recorded)
    return removed

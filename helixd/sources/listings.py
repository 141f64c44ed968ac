"""What the last walk found in each directory, kept between runs of ``helixctl ingest``, exact.

A re-scan with nothing new lists every directory under the roots again (a ``scandir``, a sort
and an adapter's ``matches`` per entry), only to find what it found last time.  A directory's
listing changes only when its ``st_ctime_ns`` does: creating, removing or renaming an entry
in it (or a ``chmod`` of it) sets its ctime and mtime; a file appended to changes neither
(its own size and mtime do, and the plan still ``lstat``s every file).  So
``<cache dir>/listings.json`` (0600) keeps, per adapter and directory, the directory's
identity and times and what the walk decided there — the claimed regular files and the
subdirectories, in name order — and a walk that finds the directory with the same device,
inode, ctime and mtime (one ``stat``) takes them instead of listing it.  A project directory
(``Adapter.project_files``) is kept the same way under the scope ``projects:…`` (the names
looked for): which of the agents' first names it held (``helixd.sources.discover``).

Exact by construction:

* a directory is kept only when its listing was clean: no link, no claimed name that is not
  a regular file, no entry whose type could not be read (such a directory is listed on every
  walk, as before);
* the ctime and mtime are taken *before* the listing, and a directory changed within the last
  ``RACY_NS`` of it is not kept (git's "racy" rule: an entry created in the same clock tick as
  the recorded time would leave the times equal; 2 s covers coarse file-system clocks too);
* a directory replaced by another (``mv new old``) has another inode; one renamed away and
  back changed its parent, which is then listed again;
* the key holds the Helix version and a fingerprint of the code that decides what a walk
  claims (the declaration modules' and this folder's sizes and mtimes: an edited ``matches``
  whose ``VERSION`` was not bumped still lists everything again), and each entry the
  adapter's name, version and depth limit, and the root it was walked from; an adapter's
  entries of another version or depth are dropped when it is walked; anything unreadable or
  of another shape (a name with a ``/``, ``..``) is ignored (the walk lists again);
* the file is replaced atomically (``filemodes.write_private``: 0600 in a 0700 directory),
  and only when a listing changed; a cache that cannot be written is no error.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

FORMAT = 1
RACY_NS = 2_000_000_000

# a directory's identity and times: (st_dev, st_ino, st_ctime_ns, st_mtime_ns)
Stamp = tuple[int, int, int, int]


def stamp(path: str, follow: bool) -> Stamp | None:
    """The directory's identity and times; None when it is not a directory (or is gone)."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)


class Listings:
    """The kept listings of one walk's directories: ``get`` one still valid, ``put`` a fresh
    clean one, ``save`` what this walk used.  A scope (an adapter and a root) the walk
    entered keeps only the directories it met this time; the others' entries stay as they
    were (``helixctl ingest --agent`` walks a few roots)."""

    def __init__(self, path: Path, key: str, entries: dict[str, Any] | None = None) -> None:
        self.path = path
        self.key = key
        self.entries: dict[str, Any] = entries or {}
        self.used: dict[str, Any] = {}
        self.walked: set[str] = set()
        self.changed = False
        self.hits = 0

    @classmethod
    def load(cls, path: Path, key: str) -> Listings:
        import json  # the standard library's: importing orjson costs more than it saves

        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return cls(path, key)
        if not isinstance(doc, dict) or doc.get("key") != key:
            return cls(path, key)
        entries = doc.get("dirs")
        return cls(path, key, entries if isinstance(entries, dict) else None)

    def walking(self, scope: str) -> None:
        self.walked.add(scope)

    def get(
        self, scope: str, dirpath: str, now: Stamp | None
    ) -> tuple[list[str], list[str]] | None:
        """``(files, subdirectories)`` kept for ``dirpath`` walked in ``scope`` (the adapter and
        root) when its stamp ``now`` is the one recorded, else None."""
        name = scope + "\0" + dirpath
        entry = self.entries.get(name)
        if now is None or not isinstance(entry, list) or len(entry) != 3:
            return None
        kept, files, dirs = entry
        if not isinstance(kept, list) or tuple(kept) != now:
            return None
        if not (isinstance(files, list) and isinstance(dirs, list)):
            return None
        if not _plain_names(files) or not _plain_names(dirs):
            return None  # a hand-edited or damaged cache never names a path outside
        self.used[name] = entry
        self.hits += 1
        return files, dirs

    def put(
        self, scope: str, dirpath: str, before: Stamp | None, files: list[str], dirs: list[str]
    ) -> None:
        """Keep a clean listing of ``dirpath`` taken after ``before`` (its stamp) — unless the
        directory changed within ``RACY_NS`` of now (a change in the same tick could hide)."""
        if before is None:
            return
        if max(before[2], before[3]) >= time.time_ns() - RACY_NS:
            return
        self.used[scope + "\0" + dirpath] = [list(before), files, dirs]
        self.changed = True

    def save(self) -> None:
        """Write what this walk used (and the entries of scopes it did not enter), when
        anything differs from what was read."""
        # the scopes this walk did not enter stay — except an adapter's scopes of another
        # version or depth limit than the one walked now (never to be entered again)
        walked_as = {scope.split(":", 1)[0]: _rules(scope) for scope in self.walked}
        others = {
            k: v
            for k, v in self.entries.items()
            if (scope := k.split("\0", 1)[0]) not in self.walked
            and walked_as.get(scope.split(":", 1)[0], _rules(scope)) == _rules(scope)
        }
        if not self.changed and len(others) + len(self.used) == len(self.entries):
            return
        import json

        from helixd.filemodes import private_dir, write_private

        try:
            private_dir(self.path.parent)
            doc = {"key": self.key, "dirs": {**others, **self.used}}
            write_private(self.path, json.dumps(doc, separators=(",", ":")).encode())
        except OSError:
            return


def _plain_names(names: list[Any]) -> bool:
    """Every one a directory entry's name: a string without a separator, not ``.`` or
    ``..`` (tested in C, not name by name: a re-scan meets thousands)."""
    if not names:
        return True
    try:
        joined = "/".join(names)  # TypeError: one is not a string
    except TypeError:
        return False
    return joined.count("/") == len(names) - 1 and not (
        "" in names or "." in names or ".." in names
    )


def _rules(scope: str) -> str:
    """``name:version:depth`` of a scope ``name:version:depth:root``."""
    return ":".join(scope.split(":", 3)[:3])


def cache_key(version: str) -> str:
    """The format, the Helix version and a fingerprint of the code that decides what a walk
    claims — each adapter declaration module's and the walk's own size and mtime (one
    ``scandir`` of a small directory): an edited ``matches`` in a source or editable
    install that kept its ``VERSION`` still makes every directory listed again."""
    from helixd.adapters import declared

    marks = []
    for path in (*declared.__path__, os.path.dirname(__file__)):
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.name.endswith(".py"):
                        st = entry.stat()
                        marks.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            marks.append(f"{path}:?")
    # the marks themselves, not a checksum of them (~2 KB): importing zlib cost ~1 ms
    return f"{FORMAT}:{version}:{'|'.join(sorted(marks))}"

"""Everything Helix writes is the user's alone: directories 0700, files 0600, whatever the
umask (``../shared/notes/design-next.md`` §5; ``docs/operations.md`` "File modes").

Standard library only: the hook entry point (``helixctl hook``) uses it for the spool.

* ``private_dir`` creates a directory (and any missing parent) 0700, and tightens an
  existing one to 0700 when it is Helix's to tighten: owned by this user, not the home
  directory or ``/``, and not a shared sticky directory such as ``/tmp``.
* ``open_private`` opens (creating) a file 0600 without following a link at its name, and
  tightens an existing file left 0644 by an older version.
* ``tighten`` fixes the mode of an existing file (SQLite's ``-wal``/``-shm``).

SQLite creates a database file 0644 minus the umask, but gives the ``-wal`` and ``-shm``
files it creates the database file's own mode: creating the database file 0600 first is
what keeps them private.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from pathlib import Path
from typing import Final

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600


def private_dir(path: Path) -> bool:
    """Make ``path`` a directory only its owner can use; returns False when an existing
    directory was left as it is (not ours to tighten: see the module docstring)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(directory, DIR_MODE)
    st = os.stat(path)
    if not stat.S_IMODE(st.st_mode) & 0o077:
        return True
    if not _ours_to_tighten(path, st):
        return False
    # Only the others' bits go: a folder the owner made read-only stays read-only (the
    # store then reports it, ``helixd.store.faults``).
    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
    return True


def _ours_to_tighten(path: Path, st: os.stat_result) -> bool:
    if st.st_uid != os.getuid() or st.st_mode & stat.S_ISVTX:
        return False
    real = os.path.realpath(path)
    return real != os.sep and real != os.path.realpath(Path.home())


def open_private(path: Path | str, flags: int, *, follow_links: bool = False) -> int:
    """``os.open(path, flags)`` creating the file 0600; an existing file of ours that others
    could read is made 0600.  A link at ``path`` is refused (``ELOOP``) unless
    ``follow_links`` (the store's database, which a user may have linked elsewhere)."""
    nofollow = 0 if follow_links else os.O_NOFOLLOW
    fd = os.open(path, flags | os.O_CREAT | nofollow | os.O_CLOEXEC, FILE_MODE)
    try:
        st = os.fstat(fd)
        if stat.S_IMODE(st.st_mode) != FILE_MODE and st.st_uid == os.getuid():
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def tighten(path: Path | str) -> None:
    """Take the group's and others' bits off an existing regular file of ours (0644 becomes
    0600; absent: nothing to do)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)  # the owner's bits stay as they are


_TEMP_SEQ = itertools.count()  # one temporary name per write in this process


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically with ``data``, 0600, through a temporary file of this
    writer's own (``.<name>.<pid>.<n>.tmp``, created exclusively): two processes writing the
    same cache file at once never write into, or rename, each other's."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_TEMP_SEQ)}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_EXCL)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a partial file would hold the space a full disk lacks
        raise

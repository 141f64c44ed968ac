"""Store faults: every SQLite or OS error met while using the store, classified in one place.

A ``StoreFault`` names one condition of the store file — ``locked``, ``disk_full``,
``read_only``, ``corrupt``, ``incompatible``, ``missing``, ``deleted``, ``replaced`` or ``io``
— with the error that revealed it (kept as the exception's cause) and what to do about it.
The daemon backs off and retries on a fault; ``helixctl`` prints ``str(fault)`` (one line)
and exits 3.  ``classify`` finds the fault behind any exception (its cause and context
chain and exception groups included), so that a secondary error — "cannot rollback - no
transaction is active" — never hides the real one ("database or disk is full").

Standard library only: the light CLI paths load it without the store package.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

Kind = Literal[
    "locked",
    "disk_full",
    "read_only",
    "corrupt",
    "incompatible",
    "missing",
    "deleted",
    "replaced",
    "io",
]

SQLITE_MAGIC: Final = b"SQLite format 3\x00"
# Below this many free bytes a failed write is put down to a full disk.
NEARLY_FULL_BYTES: Final = 256 << 10

# SQLite result codes (primary code = the low byte of an extended code).
_ERROR, _PERM, _BUSY, _LOCKED, _READONLY, _IOERR = 1, 3, 5, 6, 8, 10
_CORRUPT, _FULL, _CANTOPEN, _NOTADB = 11, 13, 14, 26
_READONLY_DBMOVED: Final = _READONLY | (4 << 8)

_CONDITION: Final[dict[str, str]] = {
    "locked": "is locked by another process",
    "disk_full": "is on a full disk",
    "read_only": "is read-only",
    "corrupt": "is corrupt",
    "incompatible": "is not a store this Helix can use",
    "missing": "does not exist",
    "deleted": "was deleted while helixd had it open",
    "replaced": "was replaced by another file while helixd had it open",
    "io": "cannot be read or written (I/O error)",
}


def _fix(kind: str, path: Path) -> str:
    folder = path.parent
    fixes = {
        "locked": "let the other process finish its transaction (`fuser` on the store shows"
        " it); helixd retries on its own and loses nothing",
        "disk_full": f"free space on the disk that holds {folder} (`df -h {folder}`);"
        " helixd retries on its own and loses nothing",
        "read_only": f"make {path} and {folder} writable (`chmod u+w`), or remount the file"
        " system read-write; helixd retries on its own",
        "corrupt": f"stop helixd, move {path} aside and run `helixctl ingest` to rebuild it"
        " from the transcripts still on disk (or restore a backup)",
        "incompatible": f"run `helixctl ingest` to create or upgrade it; if {path} is not a"
        " Helix store, move it aside",
        "missing": "run `helixctl ingest` (or start helixd) to create it",
        "deleted": f"helixd writes the store it has open back to {path} on its own; if that"
        " fails, free the path and restart helixd",
        "replaced": f"move the new file away (helixd then writes the store it has open back to"
        f" {path}) or restart helixd to use the new file",
        "io": "check the disk (`dmesg`), then restart helixd",
    }
    return fixes[kind]


class StoreError(RuntimeError):
    """The store cannot be opened or used (bad path, newer schema, corrupt file)."""


class StoreFault(StoreError):
    """A condition of the store file; ``str()`` is one line with the fix."""

    def __init__(self, kind: Kind, path: Path, detail: str = "") -> None:
        self.kind: Kind = kind
        self.path = Path(path)
        self.detail = " ".join(detail.split())
        super().__init__(str(self))

    @property
    def condition(self) -> str:
        return _CONDITION[self.kind]

    @property
    def fix(self) -> str:
        return _fix(self.kind, self.path)

    def __str__(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"store {self.path} {self.condition}{detail}; fix: {self.fix}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "condition": self.condition,
            "detail": self.detail,
            "fix": self.fix,
            "message": str(self),
        }


def classify(exc: BaseException, path: Path) -> StoreFault | None:
    """The store fault behind ``exc``, or None when ``exc`` is not about the store (a bug, a
    bad record, a source file that cannot be read).  The first classifiable error along the
    chain wins, so a secondary error never hides the real one."""
    for e in _chain(exc):
        if isinstance(e, StoreFault):
            return e
        fault = _one(e, Path(path))
        if fault is not None:
            return fault
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)


def _one(e: BaseException, path: Path) -> StoreFault | None:
    if isinstance(e, sqlite3.Error):
        return _sqlite(e, path)
    if isinstance(e, OSError) and _about_store(e, path):
        return _oserror(e, path)
    return None


def _sqlite(e: sqlite3.Error, path: Path) -> StoreFault | None:
    code = getattr(e, "sqlite_errorcode", None)
    text = str(e)
    low = text.lower()
    primary = code & 0xFF if isinstance(code, int) else _code_from_text(low)
    if primary in (_BUSY, _LOCKED):
        return StoreFault("locked", path, text)
    if primary == _FULL:
        return StoreFault("disk_full", path, text)
    if primary == _READONLY:
        if code == _READONLY_DBMOVED:
            return StoreFault("deleted" if not path.exists() else "replaced", path, text)
        return StoreFault("read_only", path, text)
    if primary == _PERM:
        return StoreFault("read_only", path, text)
    if primary in (_CORRUPT, _NOTADB):
        return StoreFault("corrupt", path, text)
    if primary in (_IOERR, _CANTOPEN):
        return StoreFault(_file_system_kind(path), path, text)
    if primary == _ERROR and ("no such table" in low or "no such column" in low):
        return StoreFault("incompatible", path, text)
    return None


def _code_from_text(low: str) -> int | None:
    """Older Pythons (or errors raised by hand) carry no code: read the message."""
    for needle, code in (
        ("locked", _BUSY),
        ("disk is full", _FULL),
        ("readonly", _READONLY),
        ("malformed", _CORRUPT),
        ("not a database", _NOTADB),
        ("disk i/o error", _IOERR),
        ("unable to open", _CANTOPEN),
    ):
        if needle in low:
            return code
    return _ERROR if "no such" in low else None


def _oserror(e: OSError, path: Path) -> StoreFault:
    detail = f"{e.strerror or e} ({e.filename})" if e.filename else str(e)
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return StoreFault("disk_full", path, detail)
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreFault("read_only", path, detail)
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return StoreFault("missing", path, detail)
    return StoreFault("io", path, detail)


def _about_store(e: OSError, path: Path) -> bool:
    """An OS error names the store when its file is the store, one of its companions
    (``-wal``, ``-shm``, the status and lock files, a temporary copy) or a folder above it;
    an error about an agent's transcript is not a store fault."""
    name = e.filename
    if not isinstance(name, str | os.PathLike):
        return False
    target = os.fspath(name)
    if isinstance(target, bytes):
        target = os.fsdecode(target)
    store = str(path)
    if target.startswith(store):
        return True
    return any(target == str(p) for p in path.parents)


def _file_system_kind(path: Path) -> Kind:
    """An I/O or open error, explained by what the file system says now."""
    if not path.exists():
        return "missing"
    if not writable(path) or not writable(path.parent):
        return "read_only"
    if free_bytes(path.parent) < NEARLY_FULL_BYTES:
        return "disk_full"
    return "io"


def writable(target: Path) -> bool:
    """The owner may write ``target`` and the file system allows it.  The mode bits count
    even for root: a store made read-only on purpose is not written."""
    try:
        st = os.stat(target)
        ro_fs = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        return False
    return bool(st.st_mode & stat.S_IWUSR) and not ro_fs and os.access(target, os.W_OK)


def free_bytes(folder: Path) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize


def rollback(con: sqlite3.Connection) -> None:
    """Roll back the transaction still open after an error.  SQLite may have rolled it back
    already (a full disk, an I/O error): then there is nothing to do, and an error of the
    rollback itself never replaces the one being handled."""
    if not con.in_transaction:
        return
    try:
        con.execute("ROLLBACK")
    except sqlite3.Error:
        pass

"""Reading a file together with the files of one directory as one document (a source kind
beside ``tailer`` and ``sqlite``; docs/adapters.md, "Source kinds").

OpenCode's JSON storage tree keeps one message in ``storage/message/<session>/<id>.json``
and its parts in ``storage/part/<id>/<part>.json``: a part does not say whose it is (the
role is in the message file), so the two are read together.  The matched file (the
message) is the source; ``Adapter.bundle(rel)`` names its directory of members (the parts).

* **One line per file**: the message's bytes first, then each member's (``*.json``, sorted
  by name), each with its newlines turned into spaces (a JSON document holds a newline only
  as whitespace) and one newline after it; an empty file (being written) gives no line.
  These lines are what the adapter parses and the raw tier keeps (redacted like any bytes).
* **Re-read whole when any of them changes**: the bundle's stat is the message file's
  identity (device, inode) with the sizes of all its files summed and, as its ``mtime_ns``,
  a digest of every file's (name, size, mtime) and of the members' directory's mtime (a
  removed part) — what a cursor compares (only ever for equality).  Exact: a member
  rewritten at the same size with an mtime older than another member's changes it, as the
  newest mtime alone would not; it costs no system call beyond the ``lstat`` of each file.
  A change to one message re-reads that message and its parts, never the rest of its
  session.
* **Never outside the root**: every directory below the root is opened with
  ``O_NOFOLLOW`` (``gate``), the members are listed and opened through that descriptor, and
  a member that is a link, a FIFO or a directory is left out.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from helixd.sources.filestat import FileStat, stat_db, stat_file
from helixd.sources.gate import Source, open_source

if TYPE_CHECKING:
    from _blake2 import blake2b as Blake2b

MEMBER_SUFFIX: Final = ".json"
MAX_MEMBERS: Final = 10_000  # parts read with one message at most (the rest are left out)
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


def members_dir(src: Source) -> str | None:
    """The members' directory of ``src`` relative to its root (None: a plain file)."""
    return src.adapter.bundle(src.rel)


@contextmanager
def _dir_beneath(root: str, rel: str) -> Iterator[int | None]:
    """A descriptor of ``root/rel`` opened one component at a time without following a
    link; None when it is absent, a link or not a directory (no members then)."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        yield None
        return
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        for part in parts:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES):
                    yield None
                    return
                raise
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def _member_names(dfd: int) -> list[str]:
    """The regular ``*.json`` files of the directory, sorted (no link, FIFO or directory)."""
    names = []
    with os.scandir(dfd) as it:
        for entry in it:
            if not entry.name.endswith(MEMBER_SUFFIX):
                continue
            try:
                if entry.is_file(follow_symlinks=False):
                    names.append(entry.name)
            except OSError:
                continue
    names.sort()
    return names[:MAX_MEMBERS]


def blake2b_64(data: bytes) -> Blake2b:
    """A 64-bit BLAKE2b of ``data``, updatable.  CPython's own ``_blake2`` — the very
    ``hashlib.blake2b`` (hashlib never takes BLAKE2 from OpenSSL), so the stamps stored are
    the same — without importing ``hashlib``, which loads OpenSSL's ``_hashlib`` (~3.5 ms of
    every re-scan that meets a bundle); ``hashlib``'s where a build lacks ``_blake2``."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without its BLAKE2
        from hashlib import blake2b
    return blake2b(data, digest_size=8)


class _Stamp:
    """The bundle's stamp as its files are met (the message's first, then the members in
    name order): their sizes summed, and a 64-bit BLAKE2b digest of each one's (name, size,
    mtime) kept in place of an mtime."""

    __slots__ = ("digest", "size")

    def __init__(self, size: int, mtime_ns: int, dir_mtime_ns: int | None) -> None:
        self.size = size
        self.digest = blake2b_64(f"{size}\0{mtime_ns}\0{dir_mtime_ns}\n".encode())

    def add(self, name: str, size: int, mtime_ns: int) -> None:
        self.size += size
        self.digest.update(f"{name}\0{size}\0{mtime_ns}\n".encode())

    def stat(self, path: str, dev: int, ino: int) -> FileStat:
        mtime = int.from_bytes(self.digest.digest(), "big", signed=True)  # an SQLite INTEGER
        return FileStat(path, dev, ino, self.size, mtime)


def stat_bundle(src: Source) -> FileStat | None:
    """The bundle's stat (see the module's docstring): None when the source file is gone,
    ``Refused`` when it is not a regular file.  One ``lstat`` per member, nothing opened."""
    st = stat_file(src.path)
    where = members_dir(src)
    if st is None or where is None:
        return st
    with _dir_beneath(src.root, where) as dfd:
        if dfd is None:
            return _Stamp(st.size, st.mtime_ns, None).stat(st.path, st.dev, st.ino)
        stamp = _Stamp(st.size, st.mtime_ns, os.fstat(dfd).st_mtime_ns)
        for name in _member_names(dfd):
            try:
                m = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            stamp.add(name, m.st_size, m.st_mtime_ns)
    return stamp.stat(st.path, st.dev, st.ino)


def stat_source(src: Source) -> FileStat | None:
    """Any source's stat as its cursor compares it: a database with its ``-wal``
    (``filestat.stat_db``), a bundle with its members, else the file's own."""
    if src.adapter.tables:
        return stat_db(src.path)
    return stat_bundle(src) if members_dir(src) is not None else stat_file(src.path)


def _line(data: bytes) -> bytes:
    body = data.replace(b"\r", b" ").replace(b"\n", b" ")
    return body + b"\n" if body.strip() else b""


def read_bundle(src: Source) -> tuple[bytes, FileStat]:
    """The bundle's lines and the stat they were read at (each file's own ``fstat``, taken
    before its bytes: a write after it shows as a change next time).  ``Refused``/``OSError``
    when the source file itself cannot be read; a member that cannot be is left out."""
    with open_source(src.root, src.rel) as f:
        fst = os.fstat(f.fileno())
        lines = [_line(f.read())]
    where = members_dir(src)
    if where is None:
        return lines[0], FileStat(src.path, fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns)
    with _dir_beneath(src.root, where) as dfd:
        if dfd is None:
            stamp = _Stamp(fst.st_size, fst.st_mtime_ns, None)
        else:
            stamp = _Stamp(fst.st_size, fst.st_mtime_ns, os.fstat(dfd).st_mtime_ns)
            for name in _member_names(dfd):
                data, m = _read_member(dfd, name)
                if m is not None:  # counted as ``stat_bundle`` counts it, read or not
                    stamp.add(name, m.st_size, m.st_mtime_ns)
                if data is not None:
                    lines.append(_line(data))
    return b"".join(lines), stamp.stat(src.path, fst.st_dev, fst.st_ino)


def _read_member(dfd: int, name: str) -> tuple[bytes | None, os.stat_result | None]:
    """A member's bytes and ``fstat``; ``(None, lstat)`` when it cannot be opened (left out,
    still counted in the stat), ``(None, None)`` when it is gone or not a regular file."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
    except OSError:
        try:
            m = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            return None, None
        return None, m if stat_mod.S_ISREG(m.st_mode) else None
    try:
        m = os.fstat(fd)
        if not stat_mod.S_ISREG(m.st_mode):
            return None, None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(), m
    finally:
        os.close(fd)

"""The trust boundary for paths: every agent file Helix reads passes here.

A path comes from discovery, a watcher event or a hook payload; only discovery's are
trusted by construction (a walk below a root that never follows a link).  The rules
(``docs/cursor-and-identity.md``, "Which files are read"):

* **Inside a root.** ``Gate.admit`` accepts an absolute path only if its real location
  (``os.path.realpath``: ``..``, ``//``, ``/proc/self/…`` and every symbolic link resolved)
  lies below the real location of a configured root, and that root's adapter claims it.
  The deepest root containing it decides, as in discovery.
* **One name per file.** An admitted file is named by its root *as configured* plus its
  real path under the root's real path.  A symbolic link is never read as itself: a link
  to a file inside the roots is read under the target's own name (once); a link leading out
  of the roots is refused.  Two configured roots that are the same directory are walked
  once, under the first one's name.
* **Opened beneath the root, without links.** ``open_source`` opens the root, then each
  directory below it with ``O_NOFOLLOW | O_DIRECTORY``, then the file with
  ``O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC``, and checks ``S_ISREG`` on
  the descriptor: a link swapped in after the check, a FIFO (the open does not wait for a
  writer), a socket, a device or a directory is refused, never read.
* **Never on the event loop.** ``admit`` resolves links and ``open_source`` opens files:
  both are called from worker threads only.

A refusal is a ``Refused`` with a ``reason`` (one of ``REASONS``), counted and shown by the
ingest summary, ``helixctl status`` and ``helixctl doctor``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final, NamedTuple

if TYPE_CHECKING:  # light: the CLI's printers read REASONS without loading the adapters
    from helixd.adapters import Adapter

OUTSIDE: Final = "outside_roots"
NOT_CLAIMED: Final = "not_claimed"
NOT_REGULAR: Final = "not_regular"
SYMLINK: Final = "symlink"
DENIED: Final = "permission_denied"
VANISHED: Final = "vanished"
BAD_PATH: Final = "bad_path"
READ_ERROR: Final = "read_error"
MEMBER_UNNAMED: Final = "member_unnamed"
REASONS: Final = {
    OUTSIDE: "outside the configured roots",
    NOT_CLAIMED: "not a file its agent writes",
    NOT_REGULAR: "not a regular file",
    SYMLINK: "a symbolic link on the way",
    DENIED: "permission denied",
    VANISHED: "vanished while being read",
    BAD_PATH: "not an absolute path",
    READ_ERROR: "read error",
    MEMBER_UNNAMED: "a part of a bundle that does not name its bundle yet (read at the next scan)",
}

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class Refused(Exception):
    """A path Helix will not read, and why (``reason`` is a key of ``REASONS``)."""

    def __init__(self, path: str, reason: str, detail: str = "") -> None:
        self.path = path
        self.reason = reason
        self.detail = detail
        shown = path if len(path) <= 1000 else path[:1000] + "…"  # a hook's path is untrusted
        super().__init__(f"{shown}: {REASONS[reason]}" + (f" ({detail[:1000]})" if detail else ""))


def reason_of(exc: BaseException) -> str:
    """The refusal reason of a failed stat, open or read."""
    if isinstance(exc, Refused):
        return exc.reason
    code = getattr(exc, "errno", None)
    if code in (errno.ENOENT, errno.ENOTDIR):
        return VANISHED
    if code in (errno.EACCES, errno.EPERM):
        return DENIED
    if code in (errno.ELOOP, errno.EMLINK):
        return SYMLINK
    if code in (errno.ENXIO, errno.EISDIR, errno.ENODEV):
        return NOT_REGULAR
    return READ_ERROR


def refusal(path: str, exc: BaseException) -> Refused:
    """``exc`` (an ``OSError`` or a ``Refused``) as a ``Refused`` for ``path``."""
    if isinstance(exc, Refused):
        return exc
    return Refused(path, reason_of(exc), getattr(exc, "strerror", None) or str(exc))


class Source(NamedTuple):
    """A file some adapter claims: ``path`` is ``root`` + ``rel`` (its one name)."""

    adapter: Adapter
    root: str
    path: str
    rel: str


class Root(NamedTuple):
    """One configured root of one adapter; ``real`` is where it resolves now."""

    adapter: Adapter
    path: str
    real: str


MEMBER_HEAD: Final = 64 * 1024  # what of a member is read to find its bundle


def _owner(root: Root, rel: str) -> Source | None:
    """The source that bundles the member ``rel`` of ``root`` (``Adapter.member_owner`` of
    its first ``MEMBER_HEAD`` bytes, read beneath the root without following a link), when
    the adapter claims it; None when the member cannot be read or names none."""
    try:
        with open_source(root.path, rel) as f:
            head = f.read(MEMBER_HEAD)
    except (Refused, OSError):
        return None  # gone, a link, not a regular file: the reconcile scan sees the bundle
    try:
        owner = root.adapter.member_owner(rel, head)
    except Exception:  # a declaration's reading of untrusted bytes never fails the group
        return None
    if owner is None or not root.adapter.matches(owner):
        return None
    return Source(root.adapter, root.path, os.path.join(root.path, owner), owner)


def _norm(path: str | Path) -> str:
    text = os.fspath(path)
    if is_normal_path(text):
        return text  # already absolute and normal (a Path's text): no normpath to run
    return os.path.abspath(text)


def is_normal_path(text: str) -> bool:
    """An absolute path without an empty, ``.`` or ``..`` component and no trailing slash
    (substring tests, in C: a compiled pattern costs every command that walks ~1 ms, and a
    component-by-component test in Python costs more per root than the pattern did)."""
    return (
        text[:1] == "/"
        and "//" not in text
        and "/./" not in text
        and "/../" not in text
        and not text.endswith(("/", "/.", "/.."))
    )


def _below(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (POSIX form) when strictly below it, else None."""
    if root == os.sep:
        return path[1:].replace(os.sep, "/") or None
    if path.startswith(root + os.sep) and len(path) > len(root) + 1:
        return path[len(root) + 1 :].replace(os.sep, "/")
    return None


class RealPaths:
    """``os.path.realpath`` for many roots at once: each distinct directory is resolved
    once, and a directory whose last component is no link costs one ``lstat`` on top of
    its parent's resolution (hundreds of project directories share their parents).
    ``stats``: that ``lstat`` of each path that is a directory (not a link), for the walk
    to reuse (``Discovery``: a project directory's stamp)."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}
        self.stats: dict[str, os.stat_result] = {}

    def __call__(self, path: str) -> str:
        hit = self.known.get(path)
        if hit is not None:
            return hit
        parent, name = os.path.split(path)
        if not name or parent == path or name in (".", ".."):
            real = os.path.realpath(path)
        else:
            try:
                st = os.lstat(path)
            except OSError:
                is_link = False  # absent: realpath keeps the name as it is
            else:
                is_link = stat.S_ISLNK(st.st_mode)
                if stat.S_ISDIR(st.st_mode):
                    self.stats[path] = st
            real = os.path.realpath(path) if is_link else os.path.join(self(parent), name)
        self.known[path] = real
        return real


class Gate:
    """The configured roots and the one check every path passes.

    Roots are kept as configured and resolved on each use (``resolve``): a root created,
    moved or re-linked later is followed without a restart."""

    def __init__(self, pairs: Iterable[tuple[Adapter, Path | str]]) -> None:
        self.configured = [(adapter, _norm(root)) for adapter, root in pairs]

    def resolve(self, realpath: RealPaths | None = None) -> list[Root]:
        """The roots with their real paths now, one per (adapter, real directory), in the
        configured order.  Roots that are the same directory share one name, whatever
        their order: the one that is its own real path, else the first in sort order.
        ``realpath``: the resolver to use (and fill), for a caller that reuses its stats."""
        realpath = RealPaths() if realpath is None else realpath
        resolved = [(adapter, path, realpath(path)) for adapter, path in self.configured]
        named: dict[str, str] = {}
        for _, path, real in resolved:
            best = named.get(real)
            if best is None or (path != real, path) < (best != real, best):
                named[real] = path
        out: list[Root] = []
        seen: set[tuple[str, str]] = set()
        for adapter, _, real in resolved:
            if (adapter.name, real) not in seen:
                seen.add((adapter.name, real))
                out.append(Root(adapter, named[real], real))
        return out

    def admit(
        self,
        path: object,
        roots: list[Root] | None = None,
        realpath: Callable[[str], str] = os.path.realpath,
    ) -> Source:
        """The source ``path`` names, under its one name; raises ``Refused``.  Does I/O
        (``realpath``): call it from a worker thread.  ``roots``: as ``resolve`` returned
        them just before (``admit_all``), else resolved now; ``realpath``: a group's shared
        resolver (``admit_all``)."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise Refused(repr(path)[:200], BAD_PATH)
        if not os.path.isabs(path):
            raise Refused(path, BAD_PATH)
        try:
            real = realpath(path)
        except (OSError, ValueError) as exc:  # non-strict realpath should not raise; if it
            raise Refused(path, BAD_PATH, str(exc)) from None  # does, it is still a refusal
        if roots is None:
            roots = self.resolve()
        inside = [(r, rel) for r in roots if (rel := _below(real, r.real)) is not None]
        if not inside:
            raise Refused(path, OUTSIDE, real if real != path else "")
        deepest = max(len(r.real) for r, _ in inside)
        for root, rel in inside:
            if len(root.real) == deepest and root.adapter.matches(rel):
                return Source(root.adapter, root.path, os.path.join(root.path, rel), rel)
        for root, rel in inside:
            if len(root.real) == deepest and root.adapter.is_member(rel):
                owner = _owner(root, rel)
                if owner is not None:
                    return owner
                raise Refused(path, MEMBER_UNNAMED)  # not unreadable: its bundle is read later
        raise Refused(path, NOT_CLAIMED)

    def admit_all(self, paths: Iterable[str]) -> tuple[list[Source], dict[str, str]]:
        """``admit`` for a group of paths (files changed together) with the roots resolved
        once for the group, not once per path: the sources, each once (the parts of one
        bundle changed together are one source to read), and the refused paths with why.
        Does I/O: call it from a worker thread.  The paths' directories are resolved once
        for the group (``RealPaths``: a file costs one ``lstat``, not one per component)."""
        realpath = RealPaths()  # the roots' directories, then the paths below them
        roots = self.resolve(realpath)
        admitted: dict[str, Source] = {}
        refused: dict[str, str] = {}
        for path in paths:
            try:
                src = self.admit(path, roots, realpath)
            except Refused as exc:  # a link out of the roots, a name no adapter claims…
                refused[path] = exc.reason
            else:
                admitted.setdefault(src.path, src)
        return list(admitted.values()), refused

    def claims(self, path: str) -> bool:
        """Whether ``path``, read lexically (no I/O, for the event loop), names a file some
        configured root's adapter would read, or a member of one (an OpenCode part: its
        change is its bundle's).  A hint only: ``admit`` decides."""
        if not os.path.isabs(path):
            return False
        norm = os.path.normpath(path)
        for adapter, root in self.configured:
            rel = _below(norm, root)
            if rel is not None and (adapter.matches(rel) or adapter.is_member(rel)):
                return True
        return False

    def may_hold(self, directory: str) -> bool:
        """Whether files some root's adapter reads can lie in ``directory`` or below it
        (lexically, no I/O): inside a root, and no deeper than its adapter's ``max_depth``."""
        norm = os.path.normpath(directory)
        for adapter, root in self.configured:
            if norm == root:
                return True
            rel = _below(norm, root)
            if rel is not None and (
                adapter.max_depth is None or rel.count("/") < adapter.max_depth
            ):
                return True
        return False

    def roots(self) -> list[str]:
        """The configured root directories (each once)."""
        return sorted({root for _, root in self.configured})

    def watches(self) -> list[tuple[str, bool]]:
        """``(directory, recursive)`` to watch: each root whole, except a project
        directory (an agent with ``project_files``), of which only the directory itself and
        those holding the agent's files are watched, not recursively (a project's tree is
        not Helix's to watch), and a root whose files lie at its top (``max_depth`` 0),
        watched without its subdirectories."""
        out: dict[str, bool] = {}
        for adapter, root in self.configured:
            if adapter.max_depth == 0 and not adapter.project_files:
                out.setdefault(root, False)  # its files lie at the top: no subdirectory
                continue
            if not adapter.project_files:
                out[root] = True
                continue
            out.setdefault(root, False)
            for rel in adapter.project_files:
                out.setdefault(os.path.dirname(os.path.join(root, rel)), False)
        return sorted(out.items())


def open_source(root: str, rel: str) -> BinaryIO:
    """Open the regular file ``rel`` below ``root`` for reading, following no link below
    the root; raises ``Refused`` (or ``OSError`` of the open).  Blocking I/O: call it from
    a worker thread."""
    path = os.path.join(root, rel)
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise Refused(path, OUTSIDE, "not a plain relative name")
    try:
        fd = _open_beneath(root, parts)
    except OSError as exc:
        raise refusal(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, NOT_REGULAR, kind_of(st.st_mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_beneath(root: str, parts: list[str]) -> int:
    """The descriptor of ``root/parts…``: each directory below the root opened with
    ``O_NOFOLLOW``, the last component checked with ``lstat`` first (a device or FIFO is
    not even opened) and opened non-blocking without following a link."""
    dfd = os.open(root, _DIR_FLAGS)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                nfd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dfd)
            except OSError as exc:  # Linux says ENOTDIR for a link here: say what it is
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(part, dfd):
                    raise Refused(os.path.join(root, *parts[: i + 1]), SYMLINK) from None
                raise
            os.close(dfd)
            dfd = nfd
        name = parts[-1]
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise Refused(os.path.join(root, *parts), SYMLINK)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(os.path.join(root, *parts), NOT_REGULAR, kind_of(st.st_mode))
        return os.open(name, _FILE_FLAGS, dir_fd=dfd)
    finally:
        os.close(dfd)


def _is_link(name: str, dfd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_regular(path: str | Path, *, follow_links: bool = False) -> BinaryIO:
    """Open one named file the same careful way (the hook spool; with ``follow_links``, an
    agent's settings file, which dotfile managers link): non-blocking, a regular file or
    ``Refused``; no link followed at the last component unless asked."""
    path = os.fspath(path)
    flags = _FILE_FLAGS & ~os.O_NOFOLLOW if follow_links else _FILE_FLAGS
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise refusal(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, NOT_REGULAR, kind_of(st.st_mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


COMPANION_MAX: Final = 64 * 1024


def read_companion(src: Source, limit: int = COMPANION_MAX) -> bytes | None:
    """The first ``limit`` bytes (64 KiB) of the small file the adapter reads beside ``src`` (a
    subagent's ``.meta.json``, Grok's ``updates.jsonl``/``summary.json``), or None when there
    is none.  It passes the same checks as ``src``; any other refusal than "absent" is
    raised."""
    named = src.adapter.sidecar(src.path)
    if named is None:
        return None
    rel = _below(os.path.normpath(named), src.root)
    if rel is None:
        raise Refused(named, OUTSIDE)
    try:
        with open_source(src.root, rel) as f:
            return f.read(limit)
    except Refused as exc:
        if exc.reason == VANISHED:
            return None
        raise


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return f"mode {oct(stat.S_IFMT(mode))}"

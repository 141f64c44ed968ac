"""Finding the files to read: every file under an agent's roots that its adapter claims, and
what could not be read there.

Light on purpose (no event loop, no store): ``helixd.ingest.pipeline`` reads what this finds,
and the first step of ``helixctl ingest`` (``helixd.ingest.plan``) stats the same files
without starting the full ingest.

The walk never follows a link below a root (``helixd.sources.gate``): a claimed name that is
a link is not yielded (a link to a file inside the roots: the file is found under its own
name; one leading out of the roots is recorded as skipped), a claimed name that is a FIFO,
socket, device or directory is recorded as skipped, and so is a directory that cannot be
listed.  Nothing is opened.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from helixd.adapters import Adapter
from helixd.adapters.base import NO_SIDECAR
from helixd.sources.gate import (
    DENIED,
    NOT_REGULAR,
    OUTSIDE,
    REASONS,
    SYMLINK,
    Gate,
    RealPaths,
    Refused,
    Root,
    Source,
    is_normal_path,
    kind_of,
    reason_of,
)
from helixd.sources.listings import Listings, Stamp, stamp

__all__ = ["Discovery", "Skip", "Source", "Trace", "discover", "survey", "unreadable_summary"]


class AgentConf(Protocol):
    @property
    def enabled(self) -> bool: ...
    @property
    def roots(self) -> Sequence[Path]: ...


class RootsConf(Protocol):
    """What finding the roots needs of the settings (the full model or the read settings)."""

    def agent(self, name: str) -> AgentConf: ...


def agent_roots(
    settings: RootsConf,
    adapters: Iterable[Adapter],
    environ: Mapping[str, str],
    home: Path,
    projects: Iterable[str | Path] = (),
) -> list[tuple[Adapter, Path]]:
    """``[(adapter, root), ...]`` for every enabled adapter: configured roots, else its
    defaults (which honour the agents' own variables such as ``CLAUDE_CONFIG_DIR``).  An
    agent that keeps its files in each project (``project_files``) also gets every
    directory of ``projects`` (where known sessions ran: ``store.projects``) as a root."""
    pairs = root_pairs(settings, adapters, environ, home, projects)
    return [(adapter, Path(root) if isinstance(root, str) else root) for adapter, root in pairs]


def root_pairs(
    settings: RootsConf,
    adapters: Iterable[Adapter],
    environ: Mapping[str, str],
    home: Path,
    projects: Iterable[str | Path] = (),
) -> list[tuple[Adapter, Path | str]]:
    """``agent_roots`` with the project directories as text, for a walk (``Gate`` and
    ``discover`` take either): the re-scan makes no ``Path`` for each of hundreds of
    projects."""
    pairs: list[tuple[Adapter, Path | str]] = []
    # each project once, as text (hundreds: no Path made; the text of a normal absolute
    # path is its Path's, any other is written as its Path would be)
    dirs = list(
        dict.fromkeys(
            t if is_normal_path(t) else str(Path(t)) for t in (os.fspath(p) for p in projects)
        )
    )
    for adapter in adapters:
        conf = settings.agent(adapter.name)
        if not conf.enabled:
            continue
        roots = [r.expanduser() for r in conf.roots] or adapter.default_roots(environ, home)
        if not adapter.project_files:
            pairs.extend((adapter, root) for root in roots)
            continue
        roots = list(dict.fromkeys(roots))
        pairs.extend((adapter, root) for root in roots)
        listed = {os.fspath(r) for r in roots}
        pairs.extend((adapter, d) for d in dirs if d not in listed)
    return pairs


class Trace:
    """What a walk's answer depended on, for ``helixd.sources.surveycache``: each directory
    it listed with its ``st_ctime_ns`` taken before the listing (None: absent or not a
    directory; the ctime, not the mtime: a ``chmod`` changes only the ctime), each project
    file it looked for with its ``lstat`` mode (None: absent), each file whose read
    permission it tested, and how many things it met whose answer can change without any of
    these changing (``unsure``: a link, whose target can move; an ``lstat`` that failed)."""

    __slots__ = ("checked", "dirs", "files", "unsure")

    def __init__(self) -> None:
        self.dirs: dict[str, int | None] = {}
        self.files: dict[str, int | None] = {}
        self.checked: list[str] = []
        self.unsure = 0


def _ctime(path: str) -> int | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_ctime_ns if stat.S_ISDIR(st.st_mode) else None


class Skip(NamedTuple):
    """A file (or directory) Helix would read but cannot; ``reason`` is a key of
    ``gate.REASONS``."""

    path: str
    reason: str
    detail: str = ""


class Discovery:
    """Iterating walks the roots (in order; a directory's files before its subdirectories,
    each sorted) and yields the claimed regular files; ``skipped`` then lists what could not
    be read.  ``check_access`` also tests each file for read permission (``os.access``), for
    reports that open nothing (``helixctl status``, ``doctor``).  ``held``: files the caller
    holds back for now (the daemon's failing files waiting out a backoff) are not yielded.
    ``listings``: a directory unchanged since the walk that kept it is not listed again
    (``helixd.sources.listings``; ``helixctl ingest``'s first step)."""

    def __init__(
        self,
        roots: Gate | Iterable[tuple[Adapter, Path | str]],
        *,
        check_access: bool = False,
        held: Callable[[str], object] | None = None,
        trace: Trace | None = None,
        listings: Listings | None = None,
    ) -> None:
        self.gate = roots if isinstance(roots, Gate) else Gate(roots)
        self.check_access = check_access
        self.held = held
        self.trace = trace
        self.listings = listings
        self.skipped: list[Skip] = []
        self._recorded: set[str] = set()
        self._projects_present: dict[str, frozenset[str] | None] = {}
        self._project_names: list[str] | None = None
        self._project_scope = ""
        self._realpaths = RealPaths()

    def __iter__(self) -> Iterator[Source]:
        self.skipped = []
        self._recorded = set()
        self._projects_present = {}
        self._realpaths = RealPaths()
        roots = self.gate.resolve(self._realpaths)
        reals = {r.real for r in roots}
        seen: set[str] = set()
        trace = self.trace
        for root in roots:
            if root.adapter.project_files:  # a missing project: its files' lstat finds none
                yield from self._project(root, seen)
                continue
            if not os.path.isdir(root.path):
                if trace is not None:
                    trace.dirs[root.path] = None
                continue  # the agent is not installed here (a missing root is no gap)
            yield from self._walk(root, reals - {root.real}, seen)

    def _project(self, root: Root, seen: set[str]) -> Iterator[Source]:
        """A project directory: only the agent's few files in it are looked at (one
        ``lstat`` each), never a walk — and with ``listings``, only those whose first
        component the directory held when it was last seen unchanged (``_present``)."""
        kept = self.listings is not None and self.trace is None  # a survey's trace: every file
        present = self._present(root.path) if kept else None
        for rel in root.adapter.project_files:
            if present is not None and rel.partition("/")[0] not in present:
                continue  # absent: the project directory is as it was when that was seen
            path = os.path.join(root.path, rel)
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                if self.trace is not None:
                    self.trace.files[path] = None
                continue
            except OSError as exc:
                if self.trace is not None:
                    self.trace.unsure += 1
                self._skip(path, reason_of(exc), exc.strerror or str(exc))
                continue
            if self.trace is not None:
                self.trace.files[path] = mode
            if stat.S_ISLNK(mode):
                self._link(path, True)
                continue
            if not stat.S_ISREG(mode):
                self._skip(path, NOT_REGULAR, kind_of(mode))
                continue
            if path in seen:
                continue
            if self.check_access and not self._readable(path):
                self._skip(path, DENIED)
                continue
            seen.add(path)
            yield Source(root.adapter, root.path, path, rel)

    def _present(self, dirpath: str) -> frozenset[str] | None:
        """Which first components of the project files (``Adapter.project_files``: a name
        such as ``.aider.chat.history.md``, or a directory such as ``.crush``) the project
        directory holds: one ``stat`` of the directory when its kept answer still holds
        (same device, inode, ctime and mtime: no entry was created, removed or renamed in
        it since), else one ``lstat`` per name, kept for the next walk.  Shared by the
        agents that look in the same directory (hundreds of projects × three agents: a
        missing file's ``lstat`` costs ~5 µs, its exception most of it).  None: the
        answer is unsure (a name could not be looked at): every file is looked at."""
        if dirpath in self._projects_present:
            return self._projects_present[dirpath]
        listings = self.listings
        assert listings is not None
        names = self._project_names
        if names is None:
            names = self._project_names = sorted(
                {
                    rel.partition("/")[0]
                    for root in self.gate.configured
                    for rel in root[0].project_files
                }
            )
            self._project_scope = f"projects:{len(names)}:{'|'.join(names)}:"
            listings.walking(self._project_scope)
        scope = self._project_scope
        # before the look-ups, as a listing's: the roots' resolution just took it (an lstat
        # of a directory that is no link is its stat), else one stat now
        st = self._realpaths.stats.get(dirpath)
        if st is None:
            before = stamp(dirpath, follow=True)
        else:
            before = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)
        kept = listings.get(scope, dirpath, before)
        present: frozenset[str] | None
        if kept is not None:
            present = frozenset(kept[0])
        else:
            found: list[str] = []
            sure = True
            for name in names:
                try:
                    os.lstat(os.path.join(dirpath, name))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except OSError:
                    sure = False  # the files' own look-ups meet it and record it
                found.append(name)
            present = frozenset(found)
            if sure:
                listings.put(scope, dirpath, before, found, [])
        self._projects_present[dirpath] = present
        return present

    def _walk(self, root: Root, reals: set[str], seen: set[str]) -> Iterator[Source]:
        """``reals``: every root's real path (this one's too: its own path is never a
        subdirectory of itself).  With ``listings``, a directory unchanged since the last
        walk is not listed again: its kept files and subdirectories are taken (one ``stat``)."""
        deepest = root.adapter.max_depth
        stack = [(root.path, "")]
        trace = self.trace
        listings = self.listings
        scope = f"{root.adapter.name}:{root.adapter.version}:{deepest}:{root.path}"
        if listings is not None:
            listings.walking(scope)
        adapter = root.adapter
        plain = self.held is None and not self.check_access  # nothing held back or tested
        sidecar = None if adapter.sidecar is NO_SIDECAR else adapter.sidecar
        while stack:
            dirpath, prefix = stack.pop()
            descend = deepest is None or prefix.count("/") < deepest
            if trace is not None:
                trace.dirs[dirpath] = _ctime(dirpath)  # before the listing: a change after it shows
            before = None
            if listings is not None:
                before = stamp(dirpath, follow=not prefix)  # before the listing, as the trace
                kept = listings.get(scope, dirpath, before)
                if kept is not None:
                    files, dirs = kept
                    at = dirpath.rstrip("/") + "/"  # the entries' paths, as scandir's
                    if plain:  # the re-scan's case, thousands of files: ``_file`` inline
                        for name in files:
                            path = at + name
                            if path in seen:
                                continue
                            seen.add(path)
                            found = Source(adapter, root.path, path, prefix + name)
                            if sidecar is not None and sidecar(path) is not None:
                                self._companion(found)
                            yield found
                    else:
                        for name in files:
                            src = self._file(root, at + name, prefix + name, seen)
                            if src is not None:
                                yield src
                    if descend:
                        real = root.real.rstrip("/") + "/"
                        stack.extend(
                            (at + name, prefix + name + "/")
                            for name in reversed(dirs)
                            if real + prefix + name not in reals
                        )
                    continue
            subdirs: list[tuple[str, str]] = []
            yield from self._list(
                root, dirpath, prefix, descend, reals, seen, subdirs, scope, before
            )
            stack.extend(reversed(subdirs))

    def _list(
        self,
        root: Root,
        dirpath: str,
        prefix: str,
        descend: bool,
        reals: set[str],
        seen: set[str],
        subdirs: list[tuple[str, str]],
        scope: str,
        before: Stamp | None,
    ) -> Iterator[Source]:
        """List ``dirpath``: yield its claimed files, add the subdirectories to walk to
        ``subdirs``, record what cannot be read, and keep a clean listing (``listings``)."""
        matches = root.adapter.matches
        try:
            with os.scandir(dirpath) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._skip(dirpath, reason_of(exc), exc.strerror or str(exc))
            return
        clean = True  # every entry a plain file or directory, its type read: keepable
        claimed: list[str] = []
        names: list[str] = []
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    names.append(entry.name)
                    if matches(rel):
                        clean = False
                        self._skip(entry.path, NOT_REGULAR, "a directory")
                    if descend and os.path.join(root.real, rel) not in reals:
                        subdirs.append((entry.path, rel + "/"))  # not another root's own
                    continue
                if entry.is_symlink():
                    clean = False
                    self._link(entry.path, matches(rel))
                    continue
                if not matches(rel):
                    continue
                if not entry.is_file(follow_symlinks=False):
                    clean = False
                    mode = entry.stat(follow_symlinks=False).st_mode
                    self._skip(entry.path, NOT_REGULAR, kind_of(mode))
                    continue
            except OSError:
                clean = False
                continue  # gone between the listing and its type check
            claimed.append(entry.name)
            src = self._file(root, entry.path, rel, seen)
            if src is not None:
                yield src
        if self.listings is not None and clean:
            self.listings.put(scope, dirpath, before, claimed, names)

    def _file(self, root: Root, path: str, rel: str, seen: set[str]) -> Source | None:
        """A claimed regular file found under ``root``: its source, once, unless held back
        or (``check_access``) unreadable."""
        if path in seen or (self.held is not None and self.held(path)):
            return None
        if self.check_access and not self._readable(path):
            self._skip(path, DENIED)
            return None
        seen.add(path)
        src = Source(root.adapter, root.path, path, rel)
        self._companion(src)
        return src

    def _companion(self, src: Source) -> None:
        """The small file the adapter reads beside ``src`` (a subagent's ``.meta.json``):
        absent is fine; a FIFO, a link or an unreadable one is recorded like a source."""
        named = src.adapter.sidecar(src.path)
        if named is None:
            return
        try:
            mode = os.lstat(named).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            self._skip(named, reason_of(exc), exc.strerror or str(exc))
            return
        if stat.S_ISLNK(mode):
            self._skip(named, SYMLINK)
        elif not stat.S_ISREG(mode):
            self._skip(named, NOT_REGULAR, kind_of(mode))
        elif self.check_access and not self._readable(named):
            self._skip(named, DENIED)

    def _readable(self, path: str) -> bool:
        if self.trace is not None:
            self.trace.checked.append(path)
        return os.access(path, os.R_OK)

    def _link(self, path: str, claimed: bool) -> None:
        """A link below a root: never walked or read as itself.  A claimed name leading to
        something Helix will not read, or a linked directory leading out of the roots, is
        recorded; a link to a file or directory inside the roots is not (it is read there)."""
        if self.trace is not None:
            self.trace.unsure += 1
        if claimed:
            try:
                self.gate.admit(path)
            except Refused as exc:
                self._skip(path, exc.reason, exc.detail)
            return
        if os.path.isdir(path):
            try:
                self.gate.admit(path)
            except Refused as exc:
                if exc.reason == OUTSIDE:
                    self._skip(path, OUTSIDE, f"a linked directory to {exc.detail or '?'}")

    def _skip(self, path: str, reason: str, detail: str = "") -> None:
        """Record ``path`` once (Grok's ``updates.jsonl`` is both a session file and the
        companion of ``chat_history.jsonl``)."""
        if path not in self._recorded:
            self._recorded.add(path)
            self.skipped.append(Skip(path, reason, detail))


def discover(
    roots: Gate | Iterable[tuple[Adapter, Path | str]],
    held: Callable[[str], object] | None = None,
    listings: Listings | None = None,
) -> Discovery:
    """Every file under each existing root that its adapter claims (see ``Discovery``);
    ``listings``: directories unchanged since the last walk are not listed again."""
    return Discovery(roots, held=held, listings=listings)


def unreadable_summary(found: Iterable[tuple[str, str]], examples: int = 10) -> dict[str, Any]:
    """``(path, reason)`` pairs as shown by ``status`` and ``doctor``: how many, by reason,
    and the first few paths with their reason in words."""
    items = sorted(found)
    by_reason: dict[str, int] = {}
    for _, reason in items:
        by_reason[reason] = by_reason.get(reason, 0) + 1
    return {
        "files": len(items),
        "by_reason": dict(sorted(by_reason.items())),
        "examples": [f"{path}: {REASONS.get(reason, reason)}" for path, reason in items[:examples]],
    }


def survey(
    roots: Gate | Iterable[tuple[Adapter, Path | str]], trace: Trace | None = None
) -> dict[str, Any]:
    """What is under the roots now, without opening anything: the files Helix would read
    and those it cannot (for ``helixctl status`` and ``doctor``).  ``trace``: filled with
    what the answer depended on (``helixd.sources.surveycache``)."""
    found = Discovery(roots, check_access=True, trace=trace)
    files = sum(1 for _ in found)
    return {
        "files": files,
        "unreadable": unreadable_summary((s.path, s.reason) for s in found.skipped),
    }

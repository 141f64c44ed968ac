"""Which git repository a session's working directory belongs to (design spec §4.1, "repo
resolved from cwd"), read from git's own files rather than by running ``git``.

From the directory up, the first ``.git`` found decides:

* a directory: the repository's main worktree is its parent, its config is ``.git/config``;
* a file (a linked worktree, a submodule): ``gitdir: <path>`` names the worktree's private
  git directory, whose ``commondir`` names the shared one (``<main>/.git``): the main
  worktree is that directory's parent, so every worktree of a repository resolves to one
  root.

The remote is ``remote.origin.url`` (else the first remote) of the shared config, without
any ``user:token@`` it holds (the credential is never kept).  Bare repositories and
``$GIT_DIR`` layouts are not followed: the path rules decide then.

The working directory comes from a transcript, so it is untrusted: only regular files are
read (``O_NONBLOCK``: a FIFO never blocks; ``S_ISREG`` on the descriptor), each at most
``MAX_READ`` bytes, nothing is written, and nothing but the root and the remote URL is kept.
Blocking I/O: call it from a worker thread.  Results are cached per directory for
``CACHE_SECONDS``.
"""

from __future__ import annotations

import configparser
import os
import stat
import threading
import time
from pathlib import Path
from typing import Final

from helixd.core.attribution import GitFacts, without_credentials

MAX_READ: Final = 64 * 1024
MAX_DEPTH: Final = 64
CACHE_SECONDS: Final = 600.0
CACHE_SIZE: Final = 4096
_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

_cache: dict[str, tuple[float, GitFacts | None]] = {}
_lock = threading.Lock()


def resolve(cwd: str | None, now: float | None = None) -> GitFacts | None:
    """The main worktree and remote of the repository ``cwd`` is in; None when the
    directory is gone, not absolute, or in no repository Helix can read."""
    if not cwd or not os.path.isabs(cwd):
        return None
    now = time.monotonic() if now is None else now
    with _lock:
        hit = _cache.get(cwd)
    if hit is not None and now - hit[0] < CACHE_SECONDS:
        return hit[1]
    found = _resolve(cwd)
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[cwd] = (now, found)
    return found


def forget() -> None:
    """Empty the cache (tests; a configuration reload)."""
    with _lock:
        _cache.clear()


def _resolve(cwd: str) -> GitFacts | None:
    try:
        if not stat.S_ISDIR(os.stat(cwd).st_mode):
            return None
    except (OSError, ValueError):
        return None  # gone (or unreadable): the path rules decide
    path = Path(cwd)
    for depth, folder in enumerate((path, *path.parents)):
        if depth >= MAX_DEPTH:
            break
        dot_git = folder / ".git"
        try:
            st = os.stat(dot_git)
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(st.st_mode):
            return GitFacts(root=str(folder), remote=_remote(dot_git))
        if stat.S_ISREG(st.st_mode):
            return _linked(folder, dot_git)
        return None
    return None


def _linked(folder: Path, dot_git: Path) -> GitFacts | None:
    """A ``.git`` file: ``gitdir: <dir>``; that directory's ``commondir`` names the shared
    git directory (a submodule has none: its git directory is its own)."""
    text = _read(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.split(":", 1)[1].strip())
    if not gitdir.is_absolute():
        gitdir = folder / gitdir
    common_text = _read(gitdir / "commondir")
    if common_text is None:  # a submodule, or a worktree whose git directory is gone
        return GitFacts(root=str(folder), remote=_remote(gitdir))
    common = Path(common_text.strip())
    if not common.is_absolute():
        common = gitdir / common
    common = Path(os.path.normpath(common))
    root = common.parent if common.name == ".git" else common
    return GitFacts(root=str(root), remote=_remote(common))


def _remote(gitdir: Path) -> str | None:
    text = _read(gitdir / "config")
    if text is None:
        return None
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    remotes = [s for s in parser.sections() if s.startswith('remote "') and s.endswith('"')]
    remotes.sort(key=lambda s: (s != 'remote "origin"', s))
    for section in remotes:
        url = parser.get(section, "url", fallback=None)
        if url:
            return without_credentials(url)
    return None


def _read(path: Path) -> str | None:
    """A small regular file's text, or None (missing, not a regular file, too big)."""
    try:
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ:
            return None
        return os.read(fd, MAX_READ).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)

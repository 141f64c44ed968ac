"""``helixctl status``'s survey of the roots (``discover.survey``) kept between runs, exact.

Walking every root costs a listing and a regex match per file (~130 ms CPU on a 2 300-file
corpus, plus ~50 ms to import the adapters that name the roots).  The survey's answer only
changes when one of these does:

- what names the roots: the Helix version (the adapters' rules), HOME, the ``[agents]``
  settings, the environment variables the adapters' default roots read (recorded as they
  are read, with their values), the store's project directories, and each configured root's
  real path (a re-pointed link);
- a directory the walk listed (or found missing): a file created, removed or renamed
  there, or a ``chmod`` of the directory, changes its ``st_ctime_ns`` (the ctime: the mtime
  misses a ``chmod``);
- a project's file (``Adapter.project_files``: looked for, never walked): its ``lstat``
  mode, or its absence (not its directory's ctime: a project directory such as ``/tmp``
  changes all the time);
- the read permission of a file it tested (``os.access`` again, one call per file).

So the cached answer (``<cache dir>/survey.json``, 0600) is used only when all of these are
as they were, checked with one ``stat`` per directory and one ``access`` per file, and the
roots are walked again otherwise.  A walk that met a link is not kept (a link's target can
change without any of the above changing), nor one whose ``lstat`` of a project file
failed, nor one that saw a directory changed within the
last ``RACY_NS`` (a change in the same clock tick as the one recorded would leave the ctime
equal: git's "racy" rule).  The daemon up or down: the same check, the same answer.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

FORMAT = 1
RACY_NS = 2_000_000_000


class AgentConf(Protocol):
    @property
    def enabled(self) -> bool: ...
    @property
    def roots(self) -> Sequence[Path]: ...


class RootsSettings(Protocol):
    """The read settings (``helixd.readconfig.ReadConfig``): the configured agents."""

    @property
    def agents(self) -> Mapping[str, AgentConf]: ...
    def agent(self, name: str) -> AgentConf: ...


class RecordingEnviron(Mapping[str, str]):
    """``environ`` that remembers each variable read through it (absent ones as None)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.read: dict[str, str | None] = {}
        self.iterated = False

    def __getitem__(self, key: str) -> str:
        try:
            value = self.environ[key]
        except KeyError:
            self.read[key] = None
            raise
        self.read[key] = value
        return value

    def __iter__(self) -> Iterator[str]:
        self.iterated = True  # every variable counts: such an answer is not kept
        return iter(self.environ)

    def __len__(self) -> int:
        self.iterated = True
        return len(self.environ)


def settings_key(settings: RootsSettings) -> dict[str, Any]:
    return {
        name: [conf.enabled, [str(r) for r in conf.roots]]
        for name, conf in sorted(settings.agents.items())
    }


def _valid(cached: Any, key: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The cached survey when everything it depended on is as it was, else None."""
    if not isinstance(cached, dict) or cached.get("key") != key:
        return None
    env, roots, dirs = cached.get("env"), cached.get("roots"), cached.get("dirs")
    files, checked, survey = cached.get("files"), cached.get("checked"), cached.get("survey")
    if not (
        isinstance(env, dict)
        and isinstance(roots, list)
        and isinstance(dirs, dict)
        and isinstance(files, dict)
        and isinstance(checked, list)
        and isinstance(survey, dict)
    ):
        return None
    same = (
        all(environ.get(name) == value for name, value in env.items())
        and _same_roots(roots)
        and all(_dir_ctime(path) == ctime for path, ctime in dirs.items())
        and all(_mode(path) == mode for path, mode in files.items())
        # a file that was readable still is (unreadable ones were skipped, in ``survey``)
        and all(isinstance(p, str) and os.access(p, os.R_OK) for p in checked)
    )
    return survey if same else None


def _same_roots(roots: list[Any]) -> bool:
    """Each root still resolves to the real path recorded for it."""
    links: dict[str, bool] = {}  # prefix -> is a link: the roots share most of their prefixes
    return all(
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)
        and (
            _still_unlinked(item[0], links)
            if item[0] == item[1]
            else os.path.realpath(item[0]) == item[1]
        )
        for item in roots
    )


def _still_unlinked(path: str, links: dict[str, bool]) -> bool:
    """``os.path.realpath(path) == path`` for a path that was its own real path: no prefix of
    it is a symbolic link now (a missing one is none, as realpath takes it).  One ``lstat``
    per prefix shared by all the roots (~180 roots on the bench corpus: ~1/5 of realpath's
    ``lstat`` calls, each of which it makes per root)."""
    if not path.startswith("/") or path != os.path.normpath(path):
        return os.path.realpath(path) == path
    end = 0
    while end != -1:
        end = path.find("/", end + 1)
        prefix = path if end == -1 else path[:end]
        link = links.get(prefix)
        if link is None:
            try:
                link = links[prefix] = stat.S_ISLNK(os.lstat(prefix).st_mode)
            except OSError:
                link = links[prefix] = False
        if link:
            return False
    return True


def _dir_ctime(path: str) -> int | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_ctime_ns if stat.S_ISDIR(st.st_mode) else None


def _mode(path: str) -> int | str | None:
    try:
        return os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return "unknown"  # never equal to what was kept: walked again


def cached_survey(
    settings: RootsSettings,
    environ: Mapping[str, str],
    home: Path,
    projects: Sequence[str],
    cache_file: Path,
) -> dict[str, Any]:
    """``discover.survey`` of the roots ``settings`` name: from ``cache_file`` when nothing
    it depended on changed, else walked (and kept when it can be checked later)."""
    from helixd import __version__

    key = {
        "format": FORMAT,
        "helix": __version__,
        "home": str(home),
        "agents": settings_key(settings),
        "projects": list(projects),
    }
    try:  # the standard library's parser: importing orjson would cost more than it saves
        cached = json.loads(cache_file.read_bytes())
    except (OSError, ValueError):
        cached = None
    hit = _valid(cached, key, environ)
    if hit is not None:
        return hit
    return _walk_and_keep(settings, environ, home, projects, cache_file, key)


def _walk_and_keep(
    settings: RootsSettings,
    environ: Mapping[str, str],
    home: Path,
    projects: Sequence[str],
    cache_file: Path,
    key: dict[str, Any],
) -> dict[str, Any]:
    from helixd.adapters.registry import REGISTRY
    from helixd.sources.discover import Trace, agent_roots, survey

    recording = RecordingEnviron(environ)
    pairs = agent_roots(settings, REGISTRY, recording, home, projects)
    roots = [[str(root), os.path.realpath(root)] for _, root in pairs]
    started = time.time_ns()
    trace = Trace()
    answer = survey(pairs, trace)
    racy = any(c is not None and c >= started - RACY_NS for c in trace.dirs.values())
    if trace.unsure or recording.iterated or racy:
        return answer
    doc = {
        "key": key,
        "env": recording.read,
        "roots": roots,
        "dirs": trace.dirs,
        "files": trace.files,
        "checked": trace.checked,
        "survey": answer,
    }
    _keep(cache_file, json.dumps(doc, separators=(",", ":")).encode())
    return answer


def _keep(cache_file: Path, data: bytes) -> None:
    """Write the cache 0600 in a 0700 directory; a cache that cannot be written is no
    error (the next run walks again)."""
    from helixd.filemodes import private_dir, write_private

    try:
        private_dir(cache_file.parent)
        write_private(cache_file, data)
    except OSError:
        return

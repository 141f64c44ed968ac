"""Is there anything to ingest?  The cheap first step of every ``helixctl ingest``.

A re-scan is the command people (and cron) run most, and usually nothing is new.  This walks
the roots, stats every file the adapters claim and compares it with its cursor (one read-only
query), and checks the store needs no migration and no session waits for its digest.  When
nothing is to do, the command prints the summary without starting the event loop or building
the settings model; otherwise the full ingest runs, and decides again file by file with the
same rule (``sources.tailer.unchanged``: size, mtime, inode and device as the cursor recorded).

Light: the standard library, the adapters' registry and the light store modules.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from helixd.adapters import Adapter
from helixd.adapters.base import NO_BUNDLE
from helixd.ingest.stats import IngestStats
from helixd.sources.bundle import members_dir, stat_source
from helixd.sources.discover import discover
from helixd.sources.gate import NOT_REGULAR, Refused, Source, refusal
from helixd.sources.listings import Listings, cache_key
from helixd.store import queries
from helixd.store.projects import projects_of
from helixd.store.readonly import NoStore, open_reader
from helixd.store.schema import MIGRATIONS


class Plan(NamedTuple):
    """``idle``: nothing to read, nothing vanished, no migration or digest due; ``reason``
    says what the full ingest is for otherwise."""

    idle: bool
    reason: str
    files_seen: int = 0
    stale_files: int = 0


def plan(
    db: Path,
    pairs: Iterable[tuple[Adapter, Path | str]],
    versions: dict[str, int],
    listings: Path | None = None,
    facts: dict[str, Any] | Plan | None = None,
) -> Plan:
    """``listings``: the file keeping the walk's directory listings between runs
    (``helixd.sources.listings``; None: every directory is listed).  ``facts``: what
    ``store_facts`` read just before (the caller found the project roots there), else read
    now."""
    if facts is None:
        facts = store_facts(db, versions)
    if isinstance(facts, Plan):
        return facts
    known: dict[str, tuple[Any, ...]] = facts["files"]
    seen: set[str] = set()
    kept = None
    if listings is not None:
        from helixd import __version__

        kept = Listings.load(listings, cache_key(__version__))
    walk = discover(pairs, listings=kept)
    found = _compare(walk, known, seen)
    if isinstance(found, Plan):
        return found
    if kept is not None:
        kept.save()  # the whole walk ran: what it used is kept for the next
    if walk.skipped:  # the full ingest counts and names what cannot be read
        return Plan(False, f"{len(walk.skipped)} files under the roots cannot be read")
    gone = _vanished(known, seen, lambda: {os.fspath(root) for _, root in pairs})
    if gone is not None:
        return Plan(False, f"{gone} vanished")
    return Plan(True, "nothing new", found, facts["stale"])


def _compare(
    walk: Iterable[Source], known: dict[str, tuple[Any, ...]], seen: set[str]
) -> int | Plan:
    """Every file of the walk against its cursor: how many there were, or the plan as soon
    as one is new, changed or gone (``seen``: those found as their cursors say)."""
    found = 0
    adapter: Adapter | None = None
    plain = True
    lstat, is_regular = os.lstat, stat.S_ISREG
    for src in walk:
        found += 1
        path = src.path
        if src.adapter is not adapter:  # the walk yields a root's files together
            adapter = src.adapter
            plain = not adapter.tables and adapter.bundle is NO_BUNDLE
        try:
            if plain:  # a line file: one lstat, inline (thousands of them: no call)
                ls = lstat(path)
                if not is_regular(ls.st_mode):
                    continue  # the full ingest counts it
                now: tuple[int, int, int, int] | None = (
                    ls.st_size,
                    ls.st_mtime_ns,
                    ls.st_ino,
                    ls.st_dev,
                )
            else:
                now = _stamp(src)
        except (FileNotFoundError, NotADirectoryError):
            now = None
        except (Refused, OSError):
            continue  # not a regular file, or cannot be looked at: the full ingest counts it
        if now is None:
            return Plan(False, f"{path} vanished during the scan")
        cursor = known.get(path)
        if cursor is None:
            return Plan(False, f"new file {path}")
        if cursor[:4] != now:
            return Plan(False, f"{path} changed")
        seen.add(path)
    return found


def store_facts(db: Path, versions: dict[str, int]) -> dict[str, Any] | Plan:
    """The cursors and the store's state (``queries.rescan_facts``) and, under
    ``"projects"``, the known project directories (``store.projects.projects_of``), read on
    one read-only connection (each open parses the store's schema of ~100 objects); or the
    plan that the store itself calls for (none yet, a migration, digests due, unreadable)."""
    if not os.path.isfile(db):
        return Plan(False, "no store yet")
    try:
        con = open_reader(db, busy_timeout_ms=2_000)
    except NoStore:
        return Plan(False, "the store needs opening for writing (first run or upgrade)")
    try:
        facts = queries.rescan_facts(con, versions)
        facts["projects"] = projects_of(con)
    except Exception as exc:  # sqlite3.Error: let the full ingest meet it and report it
        return Plan(False, f"cannot read the cursors: {exc}")
    finally:
        con.close()
    if facts["migrations"] != {name for name, _ in MIGRATIONS}:
        return Plan(False, "the store needs a migration")
    if facts["waiting"]:
        return Plan(False, "digests are due")
    return facts


def _stamp(src: Source) -> tuple[int, int, int, int] | None:
    """``(size, mtime_ns, ino, dev)`` as a cursor records them (None: gone); ``Refused``
    when it is not a regular file.  A database (with its ``-wal``) or a bundle (with its
    members): ``bundle.stat_source``; a line file: ``filestat.stat_file`` without its record
    (one ``lstat`` for each of thousands of files)."""
    if src.adapter.tables or members_dir(src) is not None:
        st = stat_source(src)
        return None if st is None else (st.size, st.mtime_ns, st.ino, st.dev)
    path = src.path
    try:
        ls = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise refusal(path, exc) from None
    if not stat.S_ISREG(ls.st_mode):
        raise Refused(path, NOT_REGULAR)
    return (ls.st_size, ls.st_mtime_ns, ls.st_ino, ls.st_dev)


def _vanished(
    known: dict[str, tuple[Any, ...]], seen: set[str], root_set: Callable[[], set[str]]
) -> str | None:
    """A stored file under the roots that the walk did not see and that is gone now.  Files
    outside the roots (another agent's with ``--agent``, roots since changed) are decided
    once per directory: thousands of them share a few hundred directories."""
    inside: dict[str, bool] = {}
    roots: set[str] | None = None  # made when a file is missing (hundreds of project roots)
    for path, (*_, gone_at) in known.items():
        if path in seen or gone_at is not None:  # nearly every file: no scope test
            continue
        if roots is None:
            roots = root_set()
        parent = os.path.dirname(path)
        under = inside.get(parent)
        if under is None:
            under = inside[parent] = _under(parent, roots)
        if under and not os.path.exists(path):
            return path
    return None


def _under(directory: str, roots: set[str]) -> bool:
    """Whether ``directory`` is one of ``roots`` or below one: its few ancestors looked up
    in the set (hundreds of project roots: never a scan of them per file)."""
    parent = directory
    while True:
        if parent in roots:
            return True
        up = os.path.dirname(parent)
        if up == parent:
            return False
        parent = up


def idle_summary(
    p: Plan, db: Path, pairs: Iterable[tuple[Adapter, Path | str]], started: float
) -> dict[str, Any]:
    """The summary a full ingest would print when it found nothing to do."""
    summary = IngestStats(files_seen=p.files_seen, seconds=time.perf_counter() - started)
    return {
        **summary.as_dict(),
        "digests_built": 0,
        "stale_files": p.stale_files,
        "store": str(db),
        # each root once, no Path made (hundreds of project directories)
        "roots": sorted(r for r in {os.fspath(r) for _, r in pairs} if os.path.isdir(r)),
    }

"""The watcher on a real watchdog observer: which events reach the loop, and how often the
loop is woken (issue 12: under load, one wake-up per inotify event cost the daemon more
CPU than reading the appended lines)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from helixd.adapters.declared import claude
from helixd.daemon.watcher import Watcher
from helixd.sources.gate import Gate

NAME = "00000000-0000-4000-8000-000000000001.jsonl"


async def _watching(root: Path) -> tuple[Watcher, list[str], list[str]]:
    paths: list[str] = []
    dirs: list[str] = []
    watcher = Watcher(Gate([(claude.ADAPTER, root)]), paths.append, dirs.append, lambda: None)
    watcher.start(asyncio.get_running_loop())
    return watcher, paths, dirs


async def _settle(seconds: float = 0.4) -> None:
    await asyncio.sleep(seconds)


async def test_open_and_close_wake_nothing(tmp_path: Path) -> None:
    """Opening a file to read it (the daemon's own reads) or for writing without writing
    (an editor, a writer that found nothing to add) is no event the daemon hears."""
    proj = tmp_path / "-work-p"
    proj.mkdir()
    f = proj / NAME
    f.write_bytes(b"{}\n")
    watcher, paths, _ = await _watching(tmp_path)
    try:
        await _settle(0.2)
        paths.clear()
        for _ in range(20):
            f.read_bytes()
            with f.open("ab"):
                pass
        await _settle()
        assert paths == []
        with f.open("ab") as fh:  # a write is heard
            fh.write(b"{}\n")
        await _settle()
        assert paths == [str(f)]
    finally:
        watcher.stop()


async def test_a_burst_of_appends_wakes_the_loop_a_few_times_and_the_last_is_heard(
    tmp_path: Path,
) -> None:
    proj = tmp_path / "-work-p"
    proj.mkdir()
    files = [proj / f"0000000{i}-0000-4000-8000-000000000001.jsonl" for i in range(5)]
    for f in files:
        f.write_bytes(b"{}\n")
    watcher, paths, _ = await _watching(tmp_path)
    try:
        await _settle(0.2)
        paths.clear()
        woken = watcher._handler.wakeups

        def burst() -> None:  # on another thread, as an agent writes: the loop is free
            for _ in range(200):
                for f in files:
                    with f.open("ab") as fh:
                        fh.write(b"{}\n")

        await asyncio.to_thread(burst)
        await _settle()
        wakeups = watcher._handler.wakeups - woken
        assert 1 <= wakeups < 1000 / 4, wakeups  # 1 000 appends, far fewer wake-ups
        assert set(paths) == {str(f) for f in files}
        assert len(paths) <= wakeups * len(files)  # a path at most once per wake-up
        # nothing is lost: one more append after the burst is heard on its own
        paths.clear()
        with files[0].open("ab") as fh:
            fh.write(b"{}\n")
        await _settle()
        assert paths == [str(files[0])]
    finally:
        watcher.stop()


async def test_created_directories_and_moved_files_still_arrive(tmp_path: Path) -> None:
    watcher, paths, dirs = await _watching(tmp_path)
    try:
        await _settle(0.2)
        sub = tmp_path / "-work-new"
        sub.mkdir()
        await _settle()
        assert dirs == [str(sub)]
        tmp = sub / "x.tmp"
        tmp.write_bytes(b"{}\n")
        os.rename(tmp, sub / NAME)
        await _settle()
        assert str(sub / NAME) in paths
    finally:
        watcher.stop()

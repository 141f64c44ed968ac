"""``filemodes.write_private``: the cache files (the status survey, the index size) are
written by whichever CLI process or daemon gets there, sometimes at the same moment."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from helixd.filemodes import write_private


def test_writers_at_the_same_moment_never_clash_and_leave_one_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "survey.json"
    payloads = [bytes([65 + i]) * (50_000 + i) for i in range(4)]
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(150):
                write_private(target, data)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert target.read_bytes() in payloads  # one writer's whole file, never a mix
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["survey.json"]  # no temp left

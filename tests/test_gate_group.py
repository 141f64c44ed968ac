"""A group of changed paths admitted with their directories resolved once (issue 12: the
daemon's runs admit hundreds of files of a few directories; ``realpath`` per path cost
one ``lstat`` per component of each)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helixd.adapters.declared import claude
from helixd.sources.gate import Gate, Refused


def test_a_group_costs_one_lstat_a_file_and_agrees_with_admit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "deep/down/here/projects"
    (root / "-p").mkdir(parents=True)
    (root / "-q").symlink_to(root / "-p")  # a linked directory inside the root
    names = [f"{i:08d}-0000-4000-8000-000000000000.jsonl" for i in range(40)]
    paths = [str(root / "-p" / n) for n in names] + [str(root / "-q" / names[0])]
    pairs = [(claude.ADAPTER, root)]
    one_by_one = []
    for p in paths:
        try:
            one_by_one.append(Gate(pairs).admit(p))
        except Refused:
            pytest.fail(p)
    calls = 0
    real_lstat = os.lstat

    def counting(*args: object, **kwargs: object) -> os.stat_result:
        nonlocal calls
        calls += 1
        return real_lstat(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", counting)
    admitted, refused = Gate(pairs).admit_all(paths)
    monkeypatch.setattr(os, "lstat", real_lstat)
    assert not refused
    assert admitted == list(dict.fromkeys(one_by_one))  # the linked name: its target's source
    assert len(admitted) == 40
    # one a file, plus the roots' and directories' components once each (was one per
    # component of every path: ~450 here)
    assert calls <= len(paths) + 40, calls

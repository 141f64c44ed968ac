"""Issue 12: the re-scan's walk keeps each directory's listing (``helixd.sources.listings``)
and takes it again only while the directory's identity and times are as recorded — exact:
a kept walk yields what a fresh walk yields, a new file is never missed (even when the
directory's mtime is set back), a directory replaced by a rename is listed again, a
directory with a link is never kept, one changed within the racy window is not kept, and the
cache file is private and ignored when unreadable.  Real directories, the real Claude
declaration."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import orjson
import pytest

from helixd import __version__
from helixd.adapters import adapter_named
from helixd.sources import listings as listings_mod
from helixd.sources.discover import discover
from helixd.sources.listings import Listings, cache_key

CLAUDE = adapter_named("claude")
TICK = 0.05  # past a coarse file-system clock tick: a change after a listing shows in ctime


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    for project, names in {"a": ["1.jsonl", "2.jsonl", "notes.txt"], "b": ["3.jsonl"]}.items():
        (root / project).mkdir(parents=True)
        for name in names:
            (root / project / name).write_text("{}\n")
    (root / "b" / "s1" / "subagents").mkdir(parents=True)
    (root / "b" / "s1" / "subagents" / "agent-x.jsonl").write_text("{}\n")
    return root


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The directories of a test were just made: keep them anyway (the racy rule has its own
    test); every change below comes a tick after the listing it follows."""
    monkeypatch.setattr(listings_mod, "RACY_NS", 0)


def walk(root: Path, cache: Path | None) -> tuple[list[str], Listings | None]:
    kept = Listings.load(cache, cache_key(__version__)) if cache is not None else None
    found = [s.rel for s in discover([(CLAUDE, root)], listings=kept)]
    if kept is not None:
        kept.save()
    return found, kept


def test_a_kept_walk_yields_what_a_fresh_walk_yields(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    cache = tmp_path / "cache" / "listings.json"
    fresh, _ = walk(tree, None)
    first, kept = walk(tree, cache)
    assert first == fresh == ["a/1.jsonl", "a/2.jsonl", "b/3.jsonl", "b/s1/subagents/agent-x.jsonl"]
    assert kept is not None and kept.hits == 0
    again, kept = walk(tree, cache)
    assert again == fresh
    assert kept is not None and kept.hits == 5  # root, a, b, b/s1, b/s1/subagents: none listed
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700


def test_a_new_file_in_a_directory_whose_mtime_is_set_back_is_not_missed(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    cache = tmp_path / "listings.json"
    walk(tree, cache)
    walk(tree, cache)
    project = tree / "a"
    before = project.stat()
    time.sleep(TICK)
    (project / "4.jsonl").write_text("{}\n")
    # the directory's mtime put back as it was (a coarse clock, tar -p, rsync -t): its ctime
    # cannot be put back, and the kept listing is not taken
    os.utime(project, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert project.stat().st_mtime_ns == before.st_mtime_ns
    found, kept = walk(tree, cache)
    assert "a/4.jsonl" in found
    assert kept is not None and kept.hits == 4  # every directory but a
    assert walk(tree, cache)[0] == walk(tree, None)[0]


def test_a_directory_replaced_by_a_rename_is_listed_again(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    cache = tmp_path / "listings.json"
    walk(tree, cache)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "9.jsonl").write_text("{}\n")
    time.sleep(TICK)
    (tree / "a").rename(tmp_path / "old-a")
    other.rename(tree / "a")  # same name, another directory (another inode)
    # the kept entry made to carry the new directory's times: only its inode tells them apart
    doc = orjson.loads(cache.read_bytes())
    entry = next(v for k, v in doc["dirs"].items() if k.endswith(f"\0{tree / 'a'}"))
    now = (tree / "a").stat()
    entry[0][2:] = [now.st_ctime_ns, now.st_mtime_ns]
    cache.write_bytes(orjson.dumps(doc))
    found, _ = walk(tree, cache)
    assert found == ["a/9.jsonl", "b/3.jsonl", "b/s1/subagents/agent-x.jsonl"]
    assert found == walk(tree, None)[0]


def test_a_file_appended_to_is_still_stated_by_the_plan(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    """The kept listing spares the directory, never the file: the plan stats every file."""
    cache = tmp_path / "listings.json"
    walk(tree, cache)
    known = {s.path: s for s in discover([(CLAUDE, tree)])}
    assert len(known) == 4
    target = tree / "a" / "1.jsonl"
    size = target.stat().st_size
    with target.open("ab") as f:
        f.write(b"{}\n")
    kept = Listings.load(cache, cache_key(__version__))
    paths = [s.path for s in discover([(CLAUDE, tree)], listings=kept)]
    assert str(target) in paths and kept.hits == 5
    assert target.stat().st_size == size + 3


def test_a_directory_holding_a_link_is_never_kept(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    cache = tmp_path / "listings.json"
    os.symlink(tree / "a" / "1.jsonl", tree / "b" / "link.jsonl")
    walk(tree, cache)
    _, kept = walk(tree, cache)
    assert kept is not None and kept.hits == 4  # b is listed every time
    assert not [k for k in kept.used if k.endswith(f"\0{tree / 'b'}")]


def test_a_directory_changed_within_the_racy_window_is_not_kept(tree: Path, tmp_path: Path) -> None:
    """Just made: a change in the same clock tick as the recorded times could hide."""
    cache = tmp_path / "listings.json"
    _, kept = walk(tree, cache)
    assert kept is not None and kept.used == {} and not cache.exists()
    (tree / "a" / "5.jsonl").write_text("{}\n")
    assert "a/5.jsonl" in walk(tree, cache)[0]


def test_an_unreadable_or_foreign_cache_is_ignored_and_replaced(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    cache = tmp_path / "listings.json"
    expected = walk(tree, None)[0]
    for junk in (b"{not json", b"[]", b'{"key": "0:old", "dirs": {}}', b'{"key": null}'):
        cache.write_bytes(junk)
        found, kept = walk(tree, cache)
        assert found == expected and kept is not None and kept.hits == 0
    doc = cache.read_bytes()
    assert doc.startswith(b'{"key":"' + cache_key(__version__).encode())
    # a kept entry of the wrong shape is listed again, never trusted
    cache.write_bytes(doc.replace(b'"1.jsonl"', b"7"))
    found, kept = walk(tree, cache)
    assert found == expected and kept is not None and kept.hits == 4


def test_a_name_that_leaves_the_directory_is_never_taken_from_the_cache(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    """A damaged or hand-edited cache naming ``../x`` or ``a/b``: that directory is listed."""
    cache = tmp_path / "listings.json"
    expected = walk(tree, None)[0]
    walk(tree, cache)
    doc = cache.read_bytes()
    for bad in (b'"../../etc/passwd"', b'"x/1.jsonl"', b'".."'):
        cache.write_bytes(doc.replace(b'"1.jsonl"', bad))
        found, kept = walk(tree, cache)
        assert found == expected and kept is not None and kept.hits == 4  # "a" listed again
        walk(tree, cache)


def test_an_adapters_entries_of_another_version_are_dropped_when_it_is_walked(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    cache = tmp_path / "listings.json"
    walk(tree, cache)
    newer = CLAUDE.replace(version=CLAUDE.version + 1)
    kept = Listings.load(cache, cache_key(__version__))
    assert [s.rel for s in discover([(newer, tree)], listings=kept)] == walk(tree, None)[0]
    kept.save()
    scopes = {k.split("\0", 1)[0] for k in orjson.loads(cache.read_bytes())["dirs"]}
    assert scopes == {f"claude:{newer.version}:{kept_depth(scopes)}:{tree}"}


def kept_depth(scopes: set[str]) -> str:
    return next(iter(scopes)).split(":")[2]


def test_the_key_changes_when_a_declaration_module_changes() -> None:
    """An edited ``matches`` that kept its ``VERSION`` (a source or editable install) must
    not reuse listings made by the old rules."""
    from helixd.adapters.declared import claude as declared_claude

    module = Path(declared_claude.__file__)
    before = module.stat()
    key = cache_key(__version__)
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        assert cache_key(__version__) != key
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cache_key(__version__) == key


PROJECT_AGENTS = [adapter_named(name) for name in ("aider", "crush", "opencode_go")]


def project_walk(dirs: list[Path], cache: Path | None) -> tuple[list[str], Listings | None]:
    kept = Listings.load(cache, cache_key(__version__)) if cache is not None else None
    pairs = [(adapter, d) for adapter in PROJECT_AGENTS for d in dirs]
    found = sorted(s.path for s in discover(pairs, listings=kept))
    if kept is not None:
        kept.save()
    return found, kept


def test_project_directories_kept_unchanged_are_not_looked_into_and_nothing_is_missed(
    tmp_path: Path, no_racy_window: None
) -> None:
    """Project roots (Aider, Crush, OpenCode's Go version): a directory whose identity and
    times are as kept answers which of the agents' names it holds with one ``stat``; a
    name created in it, or a database created in a ``.crush`` it already held, is found."""
    dirs = [tmp_path / "work" / f"p{i}" for i in range(6)]
    for d in dirs:
        d.mkdir(parents=True)
    (dirs[0] / ".aider.chat.history.md").write_text("# aider chat started\n")
    (dirs[1] / ".crush").mkdir()
    (dirs[1] / ".crush" / "crush.db").write_bytes(b"")
    (dirs[2] / ".crush").mkdir()  # the directory, no database yet
    (dirs[3] / ".opencode").write_text("a file where a directory is expected")
    cache = tmp_path / "cache" / "listings.json"
    fresh, _ = project_walk(dirs, None)
    assert fresh == [str(dirs[0] / ".aider.chat.history.md"), str(dirs[1] / ".crush/crush.db")]
    first, _ = project_walk(dirs, cache)
    assert first == fresh
    again, kept = project_walk(dirs, cache)
    assert again == fresh and kept is not None
    assert kept.hits == len(dirs)  # each project directory answered from its kept look

    time.sleep(TICK)
    (dirs[4] / ".aider.chat.history.md").write_text("# aider chat started\n")  # a new name
    (dirs[2] / ".crush" / "crush.db").write_bytes(b"")  # inside a directory already held
    (dirs[5] / ".opencode").mkdir()
    (dirs[5] / ".opencode" / "opencode.db").write_bytes(b"")
    after, _ = project_walk(dirs, cache)
    assert (
        after
        == project_walk(dirs, None)[0]
        == sorted(
            [
                *fresh,
                str(dirs[4] / ".aider.chat.history.md"),
                str(dirs[2] / ".crush/crush.db"),
                str(dirs[5] / ".opencode/opencode.db"),
            ]
        )
    )


def test_a_kept_walk_records_what_a_fresh_walk_records_beside_the_files(
    tree: Path, tmp_path: Path, no_racy_window: None
) -> None:
    """A subagent's companion ``.meta.json`` that is a FIFO is recorded as unreadable by a
    walk from the kept listings as by a fresh one (its directory is kept: the FIFO is no
    name the agent claims)."""
    os.mkfifo(tree / "b" / "s1" / "subagents" / "agent-x.meta.json")
    cache = tmp_path / "cache" / "listings.json"
    fresh = discover([(CLAUDE, tree)])
    paths = [s.path for s in fresh]
    walk(tree, cache)
    kept = Listings.load(cache, cache_key(__version__))
    again = discover([(CLAUDE, tree)], listings=kept)
    assert [s.path for s in again] == paths
    assert kept.hits >= 3  # the subagents' directory among them
    assert again.skipped == fresh.skipped != []

"""The path gate (issue 11, item 3): nothing outside the configured roots is read, links are
never followed out of them, one name per file, and an open cannot be raced into reading
something else.  Real files, real links, real FIFOs in temp dirs; a real store."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import orjson
import pytest

from helixd.adapters.declared import claude, codex
from helixd.ingest.pipeline import Ingestor, IngestStats, discover
from helixd.sources import gate
from helixd.sources.gate import Gate, Refused, open_regular, open_source
from helixd.store.database import Store

SID = "0badf00d-0000-4000-8000-000000000001"
SECRET = "TOP-SECRET-OUTSIDE-THE-ROOTS"


def claude_line(n: int, text: str = "hello", sid: str = SID) -> bytes:
    return (
        orjson.dumps(
            {
                "type": "user",
                "uuid": f"{sid}-{n}",
                "parentUuid": None,
                "sessionId": sid,
                "timestamp": f"2026-01-01T00:00:{n:02d}Z",
                "cwd": "/work/p",
                "message": {"role": "user", "content": text},
            }
        )
        + b"\n"
    )


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A Claude root with one session, and a directory outside every root holding a file
    that looks like a transcript (its content must never reach the store)."""
    root = tmp_path / "home/.claude/projects"
    (root / "-work-p").mkdir(parents=True)
    (root / "-work-p" / f"{SID}.jsonl").write_bytes(claude_line(0) + claude_line(1))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(claude_line(0, SECRET, "5ec2e700-0000-4000-8000-0"))
    (outside / "history.jsonl").write_bytes(claude_line(0, SECRET, "5ec2e700-0000-4000-8000-1"))
    return {"root": root, "outside": outside, "home": tmp_path / "home"}


async def ingest(store: Store, gate_or_pairs: object) -> IngestStats:
    return await Ingestor(store).backfill(discover(gate_or_pairs))  # type: ignore[arg-type]


async def stored_paths(store: Store) -> list[str]:
    rows = await store.db.execute("SELECT path FROM files ORDER BY path")
    return [r[0] for r in rows]


async def secret_stored(store: Store) -> bool:
    ((n,),) = await store.db.execute(
        "SELECT count(*) FROM events WHERE body LIKE ?", (f"%{SECRET}%",)
    )
    return bool(n)


# -- admit: one check for every path from a hook or the watcher ------------------------


def test_admit_resolves_dots_slashes_and_proc_and_refuses_what_leaves_the_roots(
    world: dict[str, Path],
) -> None:
    root, outside = world["root"], world["outside"]
    g = Gate([(claude.ADAPTER, root)])
    real = root / "-work-p" / f"{SID}.jsonl"
    # `..`, `//` and /proc/self/root resolve to the file's one name
    for alias in (
        f"{root}/-work-p/../-work-p/{SID}.jsonl",
        f"{root}//-work-p///{SID}.jsonl",
        f"/proc/self/root{real}",
    ):
        src = g.admit(alias)
        assert (src.path, src.rel, src.root) == (str(real), f"-work-p/{SID}.jsonl", str(root))
    escapes = {
        f"{root}/x/../../../elsewhere/history.jsonl": gate.OUTSIDE,  # the example
        f"{root}/-work-p/../../../elsewhere/secret.jsonl": gate.OUTSIDE,
        str(outside / "secret.jsonl"): gate.OUTSIDE,
        "/proc/self/root/etc/passwd": gate.OUTSIDE,
        f"/proc/{os.getpid()}/cwd/{SID}.jsonl": gate.OUTSIDE,
        f"-work-p/{SID}.jsonl": gate.BAD_PATH,  # relative: refused, not read from the cwd
        f"./{SID}.jsonl": gate.BAD_PATH,
        "": gate.BAD_PATH,
        f"{root}/-work-p/\0{SID}.jsonl": gate.BAD_PATH,
        str(root / "-work-p" / "notes.txt"): gate.NOT_CLAIMED,
        str(root): gate.OUTSIDE,  # the root itself is no file under it
    }
    for path, reason in escapes.items():
        with pytest.raises(Refused) as info:
            g.admit(path)
        assert info.value.reason == reason, path
    with pytest.raises(Refused) as info:
        g.admit(["not", "a", "path"])
    assert info.value.reason == gate.BAD_PATH


def test_a_path_in_another_agents_root_belongs_to_that_agent(tmp_path: Path) -> None:
    croot, xroot = tmp_path / ".claude/projects", tmp_path / ".codex/sessions"
    (xroot / "2026/01/01").mkdir(parents=True)
    croot.mkdir(parents=True)
    g = Gate([(claude.ADAPTER, croot), (codex.ADAPTER, xroot)])
    rollout = xroot / "2026/01/01/rollout-2026-01-01T00-00-00-x.jsonl"
    assert g.admit(str(rollout)).adapter is codex.ADAPTER
    with pytest.raises(Refused) as info:  # Codex's history.jsonl is no rollout
        g.admit(str(xroot / "history.jsonl"))
    assert info.value.reason == gate.NOT_CLAIMED
    with pytest.raises(Refused):
        g.admit(str(tmp_path / "no-root" / "x.jsonl"))


def test_a_link_inside_the_roots_is_admitted_under_its_targets_name(world: dict[str, Path]) -> None:
    root = world["root"]
    link = root / "-work-p" / "alias.jsonl"
    link.symlink_to(f"{SID}.jsonl")
    linked_dir = root / "linked-project"
    linked_dir.symlink_to("-work-p", target_is_directory=True)
    g = Gate([(claude.ADAPTER, root)])
    for alias in (link, linked_dir / f"{SID}.jsonl"):
        assert g.admit(str(alias)).path == str(root / "-work-p" / f"{SID}.jsonl")
    out = root / "-work-p" / "out.jsonl"
    out.symlink_to(world["outside"] / "secret.jsonl")
    with pytest.raises(Refused) as info:
        g.admit(str(out))
    assert info.value.reason == gate.OUTSIDE


# -- discovery and ingest: links out of the roots are never read -----------------------


async def test_a_link_to_a_file_outside_the_roots_is_counted_and_never_stored(
    store: Store, world: dict[str, Path]
) -> None:
    root = world["root"]
    (root / "-work-p" / "passwd.jsonl").symlink_to("/etc/passwd")
    (root / "-work-p" / "secret.jsonl").symlink_to(world["outside"] / "secret.jsonl")
    stats = await ingest(store, [(claude.ADAPTER, root)])
    assert stats.skipped == {gate.OUTSIDE: 2}
    assert any("passwd.jsonl" in e and "outside" in e for e in stats.errors)
    assert await stored_paths(store) == [str(root / "-work-p" / f"{SID}.jsonl")]
    assert not await secret_stored(store)
    assert stats.as_dict()["skipped"] == {"outside_roots": 2}


async def test_a_linked_directory_leading_out_of_the_roots_is_not_walked(
    store: Store, world: dict[str, Path]
) -> None:
    root = world["root"]
    (root / "-linked").symlink_to(world["outside"], target_is_directory=True)
    stats = await ingest(store, [(claude.ADAPTER, root)])
    assert stats.skipped == {gate.OUTSIDE: 1}
    assert await stored_paths(store) == [str(root / "-work-p" / f"{SID}.jsonl")]
    assert not await secret_stored(store)


async def test_links_that_stay_inside_the_roots_read_each_file_once(
    store: Store, world: dict[str, Path], tmp_path: Path
) -> None:
    """A link to a file, a linked project directory and a second configured root that is
    the same directory: one file row, each event once, nothing counted as skipped."""
    root = world["root"]
    (root / "-work-p" / "alias.jsonl").symlink_to(f"{SID}.jsonl")
    (root / "-alias-project").symlink_to("-work-p", target_is_directory=True)
    same = tmp_path / "same-root"
    same.symlink_to(root, target_is_directory=True)
    stats = await ingest(store, [(claude.ADAPTER, root), (claude.ADAPTER, same)])
    assert not stats.skipped and stats.files_read == 1
    assert await stored_paths(store) == [str(root / "-work-p" / f"{SID}.jsonl")]
    assert await store.db.execute("SELECT count(*) FROM events") == [(2,)]
    # the name does not depend on the order of the configured roots
    again = await ingest(store, [(claude.ADAPTER, same), (claude.ADAPTER, root)])
    assert again.files_read == 0 and not again.skipped
    assert await stored_paths(store) == [str(root / "-work-p" / f"{SID}.jsonl")]


# -- the open: beneath the root, no link followed, a regular file or nothing -----------


def test_open_refuses_a_link_at_the_file_or_on_the_way(world: dict[str, Path]) -> None:
    root = world["root"]
    (root / "-work-p" / "out.jsonl").symlink_to(world["outside"] / "secret.jsonl")
    (root / "-out-dir").symlink_to(world["outside"], target_is_directory=True)
    for rel in ("-work-p/out.jsonl", "-out-dir/secret.jsonl"):
        with pytest.raises(Refused) as info:
            open_source(str(root), rel)
        assert info.value.reason == gate.SYMLINK, rel
    for rel in ("-work-p/../../../elsewhere/secret.jsonl", "/etc/passwd", "-work-p//x.jsonl"):
        with pytest.raises(Refused):
            open_source(str(root), rel)
    with open_source(str(root), f"-work-p/{SID}.jsonl") as f:
        assert f.read() == claude_line(0) + claude_line(1)


def test_a_fifo_socket_device_or_directory_is_refused_without_blocking(
    world: dict[str, Path],
) -> None:
    import socket
    import stat

    d = world["root"] / "-work-p"
    os.mkfifo(d / "fifo.jsonl")
    (d / "dir.jsonl").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "sock.jsonl"))
    names = ["fifo.jsonl", "dir.jsonl", "sock.jsonl"]
    try:
        os.mknod(d / "null.jsonl", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        names.append("null.jsonl")
    except PermissionError:
        pass  # no CAP_MKNOD here: the other kinds still run
    try:
        for name in names:
            with pytest.raises(Refused) as info:
                open_source(str(world["root"]), f"-work-p/{name}")
            assert info.value.reason == gate.NOT_REGULAR, name
        # the open itself (no lstat first) never waits for a FIFO's writer either
        with pytest.raises(Refused) as info:
            open_regular(d / "fifo.jsonl")
        assert info.value.reason == gate.NOT_REGULAR and "FIFO" in str(info.value)
    finally:
        sock.close()


def _racer(swap: callable, stop: threading.Event) -> threading.Thread:  # type: ignore[valid-type]
    def run() -> None:
        while not stop.is_set():
            swap()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("where", ["file", "directory"])
def test_a_link_swapped_in_between_check_and_open_is_never_followed(
    world: dict[str, Path], where: str
) -> None:
    """TOCTOU: a thread keeps swapping the file (or its directory) with a link out of the
    roots, by atomic renames; thousands of opens meanwhile read the real file or are
    refused, never the outside one."""
    root, outside = world["root"], world["outside"]
    real_dir = root / "-work-p"
    inside = real_dir / f"{SID}.jsonl"
    if where == "file":
        target, rel = inside, f"-work-p/{SID}.jsonl"
        link = real_dir / ".link"
        link.symlink_to(outside / "secret.jsonl")
        keep = real_dir / ".keep"
    else:
        (outside / f"{SID}.jsonl").write_bytes(claude_line(0, SECRET))
        target, rel = real_dir, f"-work-p/{SID}.jsonl"
        link = root / ".link"
        link.symlink_to(outside, target_is_directory=True)
        keep = root / ".keep"
    flip = [False]

    def swap() -> None:  # target <-> link, each rename atomic
        if not flip[0]:
            os.rename(target, keep)
            os.rename(link, target)
        else:
            os.rename(target, link)
            os.rename(keep, target)
        flip[0] = not flip[0]

    stop = threading.Event()
    t = _racer(swap, stop)
    reads = refused = 0
    try:
        for _ in range(3000):
            try:
                with open_source(str(root), rel) as f:
                    data = f.read()
            except Refused as exc:
                assert exc.reason in (gate.SYMLINK, gate.VANISHED), exc
                refused += 1
                continue
            assert SECRET.encode() not in data
            reads += 1
    finally:
        stop.set()
        t.join()
    assert reads and refused  # both sides of the race were hit


_AUDIT: dict[str, object] = {"on": False, "loop_thread": None, "hits": []}


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not _AUDIT["on"] or event not in ("open", "os.scandir", "os.listdir"):
        return
    if threading.get_ident() != _AUDIT["loop_thread"]:
        return
    path = args[0] if args else None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if isinstance(path, str) and (path.startswith(str(_AUDIT["root"])) or not os.path.isabs(path)):
        _AUDIT["hits"].append((event, path))  # type: ignore[attr-defined]


async def test_no_source_file_is_opened_or_listed_on_the_event_loop_thread(
    store: Store, world: dict[str, Path]
) -> None:
    """Python's audit hooks see every ``open``/``os.open`` and directory listing: during a
    backfill and a single-file read none of them happens on the loop's thread."""
    import sys

    root = world["root"]
    sub = root / "-work-p" / SID / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a00000000000000aa.jsonl").write_bytes(claude_line(5))
    (sub / "agent-a00000000000000aa.meta.json").write_bytes(b'{"agentType":"Explore"}')
    if not _AUDIT.get("installed"):
        sys.addaudithook(_audit)
        _AUDIT["installed"] = True
    _AUDIT.update(on=True, loop_thread=threading.get_ident(), hits=[], root=root)
    try:
        stats = await ingest(store, [(claude.ADAPTER, root)])
        _AUDIT["on"] = False  # the test's own append
        with (root / "-work-p" / f"{SID}.jsonl").open("ab") as f:
            f.write(claude_line(2))
        src = Gate([(claude.ADAPTER, root)]).admit(str(root / "-work-p" / f"{SID}.jsonl"))
        _AUDIT["on"] = True
        more = await Ingestor(store).ingest_file(src, await store.cursor_for(src.path))
    finally:
        _AUDIT["on"] = False
    assert stats.files_read == 2 and more.events == 1
    assert _AUDIT["hits"] == []


def test_a_refusal_names_a_huge_path_shortly(world: dict[str, Path]) -> None:
    """A hook's path is untrusted: a 1 MB one is refused with a bounded message."""
    g = Gate([(claude.ADAPTER, world["root"])])
    with pytest.raises(Refused) as info:
        g.admit("/" + "a" * 1_000_000)
    assert info.value.reason == gate.OUTSIDE and len(str(info.value)) < 2500


def test_admit_all_resolves_the_roots_once_and_agrees_with_admit(tmp_path: Path) -> None:
    """Files changed together are admitted with the roots resolved once (issue 12: per
    path, resolving every root was the daemon's biggest cost per changed file)."""
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.jsonl").write_bytes(b"{}\n")
    (root / "-p" / "linked.jsonl").symlink_to(outside / "x.jsonl")
    paths = [str(root / "-p" / f"{i:08d}-0000-4000-8000-000000000000.jsonl") for i in range(30)]
    paths += [str(root / "-p" / "linked.jsonl"), str(root / "-p" / "notes.txt"), "relative"]
    pairs = [(claude.ADAPTER, root), (codex.ADAPTER, tmp_path / "codex")]
    resolved = 0

    class Counting(Gate):
        def resolve(self, realpath: gate.RealPaths | None = None) -> list[gate.Root]:
            nonlocal resolved
            resolved += 1
            return super().resolve(realpath)

    admitted, refused = Counting(pairs).admit_all(paths)
    assert resolved == 1
    one_by_one: list[gate.Source] = []
    reasons: dict[str, str] = {}
    for p in paths:
        try:
            one_by_one.append(Gate(pairs).admit(p))
        except Refused as exc:
            reasons[p] = exc.reason
    assert admitted == one_by_one and len(admitted) == 30
    assert refused == reasons and set(refused) == set(paths[30:])

"""Design spec §4.1 / §11.2: a session's repo resolved through git (every worktree of a
repository is one repo; its remote names it), its domain (a string: the configured map, the
remote's owner, the default) and its task reference; the commits it made (code-o11y)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from helixd.core.attribution import (
    GitFacts,
    Naming,
    attribute,
    commit_message,
    domain_of,
    remote_parts,
    repo_by_path,
    task_ref,
    without_credentials,
)
from helixd.sources import gitrepo
from tests.conftest import cli_env, run_helixctl

PATTERNS = Naming().compiled()


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("git@github.com:acme/widget.git", ("acme", "widget")),
        ("https://github.com/acme/widget", ("acme", "widget")),
        ("https://user:s3cret@gitlab.com/grp/sub/widget.git/", ("grp/sub", "widget")),
        ("ssh://git@host:2222/acme/widget.git", ("acme", "widget")),
        ("/srv/git/widget.git", ("srv/git", "widget")),
        ("", (None, None)),
    ],
)
def test_remote_parts(url: str, parts: tuple[str | None, str | None]) -> None:
    assert remote_parts(url) == parts


def test_a_remote_keeps_no_credential() -> None:
    assert without_credentials("https://bob:ghp_x@github.com/a/b") == "https://github.com/a/b"
    assert without_credentials("git@github.com:a/b.git") == "git@github.com:a/b.git"


def test_a_gone_directory_is_named_by_the_known_roots() -> None:
    known = {"/w/erk": "erk", "/w/tools/helix": "helix"}
    assert repo_by_path("/w/erk/src/pkg", known) == ("erk", "/w/erk")
    assert repo_by_path("/w/erk-slot-36", known) == ("erk", "/w/erk")
    assert repo_by_path("/w/erk-slot-36/sub", known) == ("erk", "/w/erk")
    assert repo_by_path("/w/erkling", known) == ("erkling", None)
    assert repo_by_path("/elsewhere/thing", known) == ("thing", None)
    assert repo_by_path("C:\\Users\\me\\proj", known) == ("proj", None)
    assert repo_by_path(None, known) == (None, None)


def test_domain_is_always_a_string() -> None:
    naming = Naming(domains={"acme/widget": "forge", "tool": "ops"}, default_domain="mine")
    assert domain_of("widget", "acme", naming) == "forge"
    assert domain_of("tool", "someone", naming) == "ops"
    assert domain_of("other", "grp/sub", naming) == "sub"
    assert domain_of("other", None, naming) == "mine"
    assert domain_of(None, None, Naming()) == "local"
    facts = GitFacts(root="/w/widget", remote="git@github.com:acme/widget.git")
    assert attribute("/w/widget-2", facts, {}, Naming()) == (
        "widget",
        "/w/widget",
        "acme",
        "git@github.com:acme/widget.git",
    )
    known = {"/w/widget": ("widget", "acme")}
    assert attribute("/w/widget-gone", None, known, Naming()) == (
        "widget",
        "/w/widget",
        "acme",
        None,
    )


@pytest.mark.parametrize(
    ("branch", "prompt", "commits", "ref"),
    [
        ("feature/ABC-123-login", "fix PROJ-9", [], "ABC-123"),
        ("main", "Work on AGENTIC-WP-0002-T01 please", [], "AGENTIC-WP-0002-T01"),
        ("123-fix-the-thing", None, [], "#123"),
        ("issue-77", None, [], "#77"),
        ("release/2024-05", None, [], None),
        ("hotfix/2024-05-01-x", None, [], None),
        ("main", "see https://github.com/acme/widget/issues/42 for it", [], None),
        ("main", "convert to UTF-8 and SHA-256", ["Fixes #12"], "#12"),
        ("main", "nothing here", ["wip", "refactor"], None),
        (None, None, [], None),
    ],
)
def test_task_ref(
    branch: str | None, prompt: str | None, commits: list[str], ref: str | None
) -> None:
    got = task_ref(branch, prompt, commits, PATTERNS)
    if prompt and "issues/42" in prompt:
        assert got == "https://github.com/acme/widget/issues/42"
    else:
        assert got == ref


def test_task_ref_patterns_are_configurable() -> None:
    naming = Naming(task_patterns=(r"ticket (?P<ref>T\d+)",))
    assert task_ref("main", "please do ticket T77 now", [], naming.compiled()) == "T77"
    assert task_ref("feature/ABC-1", None, [], naming.compiled()) is None


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ('git commit -m "Fix ABC-1: the thing"', "Fix ABC-1: the thing"),
        ("git add -A && git commit -am 'wip'", "wip"),
        ('git commit -m "title" -m "body"', "title\n\nbody"),
        ("git -C /w/x commit --message=done", "done"),
        ('git commit -m "cut short', "cut short"),
        ("git commit", None),
        ("git status", None),
    ],
)
def test_commit_message(command: str, message: str | None) -> None:
    assert commit_message(command) == message


# -- a real repository with a linked worktree ------------------------------------------------
def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def worktrees(tmp_path: Path) -> dict[str, Path]:
    main = tmp_path / "src" / "widget"
    main.mkdir(parents=True)
    _git(main, "init")
    _git(main, "remote", "add", "origin", "https://bob:tok3n@github.com/acme/widget.git")
    (main / "a.txt").write_text("a\n")
    _git(main, "add", "a.txt")
    _git(main, "commit", "-m", "first")
    slot = tmp_path / "src" / "widget-slot-36"
    _git(main, "worktree", "add", "-b", "feature/WID-7-thing", str(slot))
    (main / "pkg").mkdir()
    gitrepo.forget()
    return {"main": main, "slot": slot, "sub": main / "pkg"}


def test_the_edge_resolves_every_worktree_to_the_main_one(worktrees: dict[str, Path]) -> None:
    main = str(worktrees["main"])
    for where in worktrees.values():
        facts = gitrepo.resolve(str(where))
        assert facts == GitFacts(root=main, remote="https://github.com/acme/widget.git")
    assert gitrepo.resolve(str(worktrees["main"].parent / "nowhere")) is None
    assert gitrepo.resolve("relative/path") is None


def _line(sid: str, ts: str, cwd: Path, branch: str, kind: str, text: str) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": kind,
        "uuid": f"{sid}-{kind}",
        "parentUuid": None if kind == "user" else f"{sid}-user",
        "sessionId": sid,
        "timestamp": ts,
        "cwd": str(cwd),
        "gitBranch": branch,
    }
    if kind == "user":
        base["message"] = {"role": "user", "content": text}
    else:
        base["requestId"] = f"r-{sid}"
        base["message"] = {
            "id": f"m-{sid}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    return base


def _session(root: Path, sid: str, cwd: Path, branch: str, prompt: str) -> None:
    lines = [
        _line(sid, "2026-01-05T10:00:00Z", cwd, branch, "user", prompt),
        _line(sid, "2026-01-05T10:00:05Z", cwd, branch, "assistant", "done"),
    ]
    (root / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_sessions_in_worktrees_and_subdirectories_are_one_repo(
    worktrees: dict[str, Path], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    root = home / ".claude" / "projects" / "p"
    root.mkdir(parents=True)
    _session(root, "s-main", worktrees["main"], "main", "look at the code")
    _session(root, "s-slot", worktrees["slot"], "feature/WID-7-thing", "go")
    _session(root, "s-sub", worktrees["sub"], "main", "work on #31 please")
    gone = worktrees["main"].parent / "widget-slot-99"  # never existed: the path rules
    _session(root, "s-gone", gone, "main", "hello")
    db = tmp_path / "helix.db"

    def helixctl(*args: str) -> Any:
        proc = run_helixctl(args, cli_env(home, db))
        return orjson.loads(proc.stdout) if "--json" in args else proc.stdout

    helixctl("ingest", "--json")
    want = {
        "claude:s-main": None,
        "claude:s-slot": "WID-7",
        "claude:s-sub": "#31",
        "claude:s-gone": None,
    }
    for uid, ref in want.items():
        d = helixctl("lookup", uid, "--json")
        assert (d["repo"], d["domain"], d["repo_root"], d["task_ref"]) == (
            "widget",
            "acme",
            str(worktrees["main"]),
            ref,
        ), uid
        assert d["schema_version"] == 3
    listed = helixctl("sessions", "--repo", "widget", "--all", "--json")
    assert {r["uid"] for r in listed} == set(want)
    # the credential in the remote URL is never stored
    con = __import__("sqlite3").connect(db)
    try:
        dump = "\n".join(con.iterdump())
    finally:
        con.close()
    assert "tok3n" not in dump


def test_sessions_and_commits_are_correlated(tmp_path: Path) -> None:
    """code-o11y: a `git commit` run in a shell tool call is in the digest's `commits` and
    shown by `lookup`; Codex's recorded `git.commit_hash` is the session's `git_commit`."""
    home = tmp_path / "home"
    root = home / ".claude" / "projects" / "p"
    root.mkdir(parents=True)
    cwd = tmp_path / "gone-project"
    sid = "s-commit"
    call = {
        "type": "assistant",
        "uuid": "c1",
        "parentUuid": f"{sid}-user",
        "sessionId": sid,
        "timestamp": "2026-01-05T10:01:00Z",
        "cwd": str(cwd),
        "requestId": "r-c1",
        "message": {
            "id": "m-c1",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {"command": 'git add -A && git commit -m "Fix PAY-88: rounding"'},
                }
            ],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }
    result = {
        "type": "user",
        "uuid": "c2",
        "parentUuid": "c1",
        "sessionId": sid,
        "timestamp": "2026-01-05T10:01:02Z",
        "cwd": str(cwd),
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[main 1a2b3c4]"}],
        },
    }
    lines = [
        _line(sid, "2026-01-05T10:00:00Z", cwd, "main", "user", "round the totals"),
        call,
        result,
    ]
    (root / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    codex = home / ".codex" / "sessions" / "2026" / "02" / "23"
    codex.mkdir(parents=True)
    native = "019c8a70-dda7-7f33-98ea-f30553347322"
    meta = {
        "timestamp": "2026-02-23T12:19:53.000Z",
        "type": "session_meta",
        "payload": {
            "id": native,
            "timestamp": "2026-02-23T12:19:53.000Z",
            "cwd": "/w/gone",
            "originator": "codex_cli_rs",
            "cli_version": "0.50.0",
            "git": {"commit_hash": "86B4A8D9581D", "branch": "main", "repository_url": "x"},
        },
    }
    prompt = {
        "timestamp": "2026-02-23T12:19:54.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hello"}],
        },
    }
    name = f"rollout-2026-02-23T12-19-53-{native}.jsonl"
    (codex / name).write_text(json.dumps(meta) + "\n" + json.dumps(prompt) + "\n")
    db = tmp_path / "helix.db"
    env = cli_env(home, db)

    def helixctl(*args: str) -> str:
        return run_helixctl(args, env).stdout

    helixctl("ingest", "--json")
    d = orjson.loads(helixctl("lookup", f"claude:{sid}", "--json"))
    assert d["commits"] == [
        {"seq": d["commits"][0]["seq"], "ts": "2026-01-05T10:01:00.000Z", "status": "success",
         "message": "Fix PAY-88: rounding"}
    ]  # fmt: skip
    assert d["task_ref"] == "PAY-88"  # from the commit message: the branch and prompt hold none
    assert (d["repo"], d["domain"]) == ("gone-project", "local")
    shown = helixctl("lookup", f"claude:{sid}")
    assert "commit 2026-01-05T10:01:00.000Z [success]: Fix PAY-88: rounding" in shown
    assert "task PAY-88" in shown and "domain local" in shown
    c = orjson.loads(helixctl("lookup", f"codex:{native}", "--json"))
    assert c["git_commit"] == "86b4a8d9581d"
    assert "started at commit 86b4a8d9581d" in helixctl("lookup", f"codex:{native}")

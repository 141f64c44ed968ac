"""Issue 12: a read command loads only what it uses.  Each runs in a fresh interpreter on a
real store (the Claude fixtures ingested) and names the modules it loaded; the heavy ones a
read has no use for must stay out — click and argcomplete included: the CLI is argparse, and
completion loads only when the shell asks."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from helixd.adapters.registry import REGISTRY
from tests.conftest import FIXTURES, REPO, RunCli, copy_claude_fixtures

# every agent's parser module (its declaration is ``helixd.adapters.declared.<module>``)
AGENT_MODULES = frozenset(f"helixd.adapters.{a.parser}" for a in REGISTRY)
# what of the adapters a walk may load: the catalogue, the declarations and their base
DECLARATION_SIDE = ("helixd.adapters.declared", "helixd.adapters.base", "helixd.adapters.registry")


def parser_side(modules: set[str]) -> list[str]:
    """The adapter modules loaded that only parsing needs (parsers and their helpers)."""
    return sorted(
        m
        for m in modules
        if m.startswith("helixd.adapters.")
        and not any(m == d or m.startswith(d + ".") for d in DECLARATION_SIDE)
    )


# what no read command needs: the daemon's and the full settings' machinery, the writers
NEVER = (
    "pydantic",
    "pydantic_settings",
    "rich",
    "structlog",
    "aiosqlite",
    "anyio",
    "asyncio",
    "watchdog",
    "apscheduler",
    "tomlkit",
    "click",
    "argcomplete",
    "helixd.config",
    "helixd.ingest",
    "helixd.store.writer",
    "helixd.store.batch",
    "helixd.store.database",
    "helixd.store.probe",
    # hashlib loads OpenSSL's _hashlib (~3 ms); the natural keys (show, the fleet outbox's
    # facts) take BLAKE2b from _blake2, where hashlib gets it
    "hashlib",
    "_hashlib",
)
# what only some reads need: the adapters (show re-reads raw lines), the raw tier's
# compression and hashing (show), the roots' survey (status)
UNLESS_USED = (
    "helixd.adapters",
    "helixd.sources.discover",  # the roots' walk
    "helixd.sources.gate",
    "helixd.sources.surveycache",
    "zstandard",
    "helixd.store.evict",
    "helixd.store.faults",  # a read that works never classifies a store fault
    "helixd.daemon",
)
# what costs a read ~10-20 ms to import and a read answers without: the standard library's
# ``dataclasses`` (it loads ``inspect``: the query types are NamedTuples), orjson (it loads
# uuid, platform, dataclasses and enum; reads parse their few small JSON documents with the
# standard library's json), shutil (the terminal's width is read without it).  Only ``show``
# loads them: its agent's parser re-reads the raw lines.
LIGHT = (
    "dataclasses",
    "inspect",
    "orjson",
    "uuid",
    "shutil",
    "difflib",
    "helixd.store.outbox_batch",
)
USES = {
    # status: the roots' survey kept between runs (helixd.sources.surveycache) and the
    # daemon's status document; a warm run walks nothing, so loads no adapter
    "status": {"helixd.sources.surveycache", "helixd.daemon"},
    "show": {"helixd.adapters", "zstandard"},
}

PROBE = (
    "import sys\n"
    "from helixd.cli.main import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
)


@pytest.fixture
def store(home: Path, helixctl: RunCli) -> RunCli:
    copy_claude_fixtures(home)
    helixctl("ingest", "--json")
    return helixctl


def loaded(run: RunCli, *argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env=run.env,  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.stdout.strip(), (argv, done.stderr[-2000:])
    return set(done.stderr.split())


def test_every_read_command_loads_only_what_it_uses(store: RunCli) -> None:
    listed = orjson.loads(store("sessions", "--json", "--all").stdout)
    first = max(listed, key=lambda s: s["events"])
    uid, repo = first["uid"], first["repo"] or "app"
    commands = {
        "lookup": ["lookup", uid],
        "search": ["search", "the"],
        "report": ["report", "daily"],
        "sessions": ["sessions"],
        "status": ["status"],
        "stats": ["stats"],
        "tokens": ["tokens", "--repo", repo, "--since", "36500d"],
        "env": ["env", uid],
        "show": ["show", uid, "--tail", "5"],
    }
    time.sleep(2.1)  # past the survey's racy window (the fixtures were just copied)
    loaded(store, "status")  # walks the roots once and keeps the survey
    for name, argv in commands.items():
        modules = loaded(store, *argv)

        def has(prefix: str, modules: set[str] = modules) -> bool:
            return any(m == prefix or m.startswith(prefix + ".") for m in modules)

        assert not [m for m in NEVER if has(m)], (name, [m for m in NEVER if has(m)])
        extra = [m for m in UNLESS_USED if has(m) and m not in USES.get(name, set())]
        assert not extra, (name, extra)
        heavy = [m for m in LIGHT if has(m)]
        assert name == "show" or not heavy, (name, heavy)
        # show re-reads the raw lines of its session's agent (Claude here): that parser only
        parsers = modules & AGENT_MODULES
        assert parsers == ({"helixd.adapters.claude"} if name == "show" else set()), (name, parsers)
        if name != "show":  # status included: no parser and none of its helpers
            assert parser_side(modules) == [], (name, parser_side(modules))
        # the test output parsers (28 patterns) load only with a test command's result
        assert "helixd.core.testruns" not in modules, name


# what `helixctl ingest` with nothing new does without (the plan finds nothing to read): the
# event loop, the settings model, the readers (redaction, compression, hashing), the writers
RESCAN_NEVER = (
    "asyncio",
    "pydantic",
    "pydantic_settings",
    "rich",
    "structlog",
    "helixd.config",
    "helixd.core.redact",
    "helixd.sources.tailer",
    "helixd.sources.sqlite",
    "zstandard",
    "hashlib",
    "helixd.ingest.pipeline",
    "helixd.store.writer",
    "helixd.store.batch",
    "helixd.store.database",
    # issue 16: what costs the no-change re-scan ~20 ms of imports and it does without —
    # dataclasses (and the inspect, dis, tokenize it loads: the declarations, sources and
    # counts are NamedTuples and __slots__ classes), orjson (and uuid, platform: the idle
    # summary is printed with the standard library's json, already loaded), zlib (the kept
    # listings' key holds the code's marks themselves)
    "dataclasses",
    "inspect",
    "orjson",
    "uuid",
    "zlib",
)


def test_a_rescan_that_finds_nothing_new_loads_no_event_loop_and_no_reader(store: RunCli) -> None:
    again = orjson.loads(store("ingest", "--json").stdout)
    assert again["files"] > 0 and again["files_read"] == 0, again
    modules = loaded(store, "ingest", "--json")
    assert "helixd.ingest.plan" in modules  # the probe ran the command
    assert not [m for m in RESCAN_NEVER if m in modules], [m for m in RESCAN_NEVER if m in modules]
    # every agent's declaration is walked; no parser (nor a parse helper) is imported
    assert {"helixd.adapters.declared.claude", "helixd.adapters.declared.codex"} <= modules
    assert parser_side(modules) == [], parser_side(modules)
    assert "helixd.core.records" not in modules
    # without --json neither
    without = loaded(store, "ingest")
    assert not [m for m in RESCAN_NEVER if m in without], [m for m in RESCAN_NEVER if m in without]


def test_a_rescan_that_meets_a_bundle_loads_no_hashlib(home: Path, helixctl: RunCli) -> None:
    """OpenCode's JSON tree is stamped by a BLAKE2b of its members: taken from CPython's
    ``_blake2`` (the same function), not through ``hashlib``, which loads OpenSSL (~3.5 ms)."""
    shutil.copytree(FIXTURES / "opencode_tree", home / ".local/share/opencode/storage")
    first = orjson.loads(helixctl("ingest", "--json").stdout)
    assert first["files_read"] > 0, first
    again = orjson.loads(helixctl("ingest", "--json").stdout)
    assert again["files"] == first["files"] and again["files_read"] == 0, again
    modules = loaded(helixctl, "ingest", "--json")
    assert "helixd.ingest.plan" in modules and "helixd.sources.bundle" in modules
    assert "hashlib" not in modules and "_hashlib" not in modules


# `helixctl --version` (and `-h`): the interpreter, argparse and the command table; no command's
# module, nothing of the store, no third-party package
VERSION_ONLY_NEVER = ("click", "argcomplete", "inspect", "sqlite3", "orjson", "helixd.cli.common")


def test_version_and_help_load_no_command(helixctl: RunCli) -> None:
    for argv in (["--version"], ["-h"]):
        modules = loaded(helixctl, *argv)
        assert "helixd.cli.main" in modules and "argparse" in modules
        commands = sorted(
            m for m in modules if m.startswith("helixd.cli.") and m != "helixd.cli.main"
        )
        assert commands == [], (argv, commands)
        assert not [m for m in VERSION_ONLY_NEVER if m in modules], argv


CONNECTS = (
    "import sys\n"
    "opened = []\n"
    "sys.addaudithook(lambda event, args: opened.append(str(args[0]))"
    " if event == 'sqlite3.connect' else None)\n"
    "from helixd.cli.main import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print('\\n'.join(opened), file=sys.stderr)\n"
)


def test_status_reads_the_store_on_one_connection(store: RunCli) -> None:
    """The store's facts, its fleet outbox and the project directories the survey checks
    are read on one connection (a second one cost ``status`` an open and a schema parse)."""
    done = subprocess.run(
        [sys.executable, "-c", CONNECTS, "status", "--json"],
        env=store.env,  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    doc = orjson.loads(done.stdout)
    assert doc["store"]["digests"] > 0 and doc["sources"]["files"] > 0, doc
    db = str(store.db)  # type: ignore[attr-defined]
    assert len([c for c in done.stderr.split() if db in c]) == 1, done.stderr


def test_the_record_types_load_no_dataclasses() -> None:
    """Issue 12: ``helixd.core.records`` is on the path of every parse and of ``show``; its
    types are NamedTuples, so importing it loads neither ``dataclasses`` nor ``inspect``
    (six frozen dataclasses cost ~10-15 ms to create, plus the module with ``inspect``).
    ``show`` of a Claude session still loads ``dataclasses``: orjson imports it when it
    loads (and the Claude parser decodes with orjson), as does ``helixd.adapters.base``."""
    probe = "import sys\nimport helixd.core.records\nprint('\\n'.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    modules = set(done.stdout.split())
    assert "helixd.core.records" in modules, done.stderr[-2000:]
    assert not {"dataclasses", "inspect"} & modules, sorted({"dataclasses", "inspect"} & modules)

"""Shared fixtures: real temp dirs, a real SQLite store, the real CLI as a subprocess."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from helixd.store.database import Store

if TYPE_CHECKING:
    from tests.daemon_helpers import Helixd
    from tests.web_helpers import Served

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "store" / "helix.db")
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty HOME with the agents' usual directories."""
    h = tmp_path / "home"
    (h / ".claude" / "projects").mkdir(parents=True)
    return h


def copy_claude_fixtures(home: Path) -> Path:
    root = home / ".claude" / "projects"
    shutil.copytree(
        FIXTURES / "claude", root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("README*")
    )
    return root


AGENT_ENV_PREFIXES = ("HELIX_", "CLAUDE_", "CODEX_", "GEMINI_", "GROK_")
KEEP_FIXTURES_DAYS = "36500"


def cli_env(home: Path, db: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without Helix's and the agents' own variables (which would
    point the CLI at real logs), with HOME, the store and the XDG dirs inside ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(AGENT_ENV_PREFIXES)}
    env.pop("XDG_RUNTIME_DIR", None)
    env.update(
        # the fixtures are months old: a sweep's age backstop would evict them at once
        HELIX_RETENTION__RAW_MAX_AGE_DAYS=KEEP_FIXTURES_DAYS,
        HOME=str(home),
        HELIX_STORE_DB=str(db),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        HELIX_STATE_DIR=str(home / ".local/state/helix"),
        HELIX_SOCKET=str(short_socket(db)),
        HELIX_WEB__PORT="0",  # any free port: tests run side by side
    )
    env.update(extra)
    return env


def short_socket(db: Path) -> Path:
    """A socket path short enough for ``sun_path`` (pytest's tmp paths can be too long),
    unique per store so that concurrent tests never share a daemon."""
    digest = hashlib.blake2b(str(db).encode(), digest_size=6).hexdigest()
    return Path(tempfile.gettempdir()) / f"hx-{digest}.sock"


RunCli = Callable[..., subprocess.CompletedProcess[str]]


def run_helixctl(
    args: tuple[str, ...], env: dict[str, str], check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The real ``helixctl`` in a subprocess (text out); with ``check``, a non-zero exit is an
    AssertionError that shows its stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"helixctl {args} -> {proc.returncode}\n{proc.stderr}")
    return proc


@pytest.fixture
def helixctl(home: Path, tmp_path: Path) -> RunCli:
    """Run the real ``helixctl`` in a subprocess against ``home`` and a temp store."""
    db = tmp_path / "cli-store" / "helix.db"

    def run(*args: str, check: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
        return run_helixctl(args, cli_env(home, db, **extra), check)

    run.db = db  # type: ignore[attr-defined]
    run.env = cli_env(home, db)  # type: ignore[attr-defined]
    return run


@pytest.fixture
def daemon(home: Path, tmp_path: Path) -> Iterator[Helixd]:
    """A ``helixd`` for this test's HOME and store (started by the test, killed after)."""
    from tests.daemon_helpers import Helixd

    d = Helixd(home, tmp_path / "store" / "helix.db")
    yield d
    if d.proc is not None and d.proc.poll() is None:
        d.stop(signal.SIGKILL)


def pytest_configure(config: pytest.Config) -> None:
    """One cache directory for the whole run (the flattened genai-prices data is built once,
    ~1 s, rather than in every test's HOME); every child process inherits it."""
    cache = Path(tempfile.mkdtemp(prefix="helix-test-cache-"))
    config.stash[_CACHE_KEY] = cache
    os.environ["XDG_CACHE_HOME"] = str(cache)


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = config.stash.get(_CACHE_KEY, None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)


_CACHE_KEY = pytest.StashKey[Path]()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real ``helixd`` serving the web face over the corpus fixtures (one per module)."""
    from tests.web_helpers import serve

    yield from serve(tmp_path_factory.mktemp("web"))

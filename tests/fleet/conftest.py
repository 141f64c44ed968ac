"""Fixtures of the fleet tests: a real PostgreSQL server (one per session, plus throwaway
ones to kill), a fresh database per test, and real stores with the fixture transcripts
ingested (built once, copied per test)."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.helpers import build_store
from tests.fleet.pgcluster import Cluster, bindir


@pytest.fixture(scope="session")
def pg_template() -> Iterator[Cluster]:
    """An initialised, stopped cluster that servers are copied from."""
    found = bindir()
    if found is None and os.environ.get("HELIX_TESTS_REQUIRE_POSTGRES"):
        pytest.fail("PostgreSQL server binaries not found and .ci/run requires them")
    if found is None:
        pytest.skip(
            "PostgreSQL server binaries not found (Debian: apt-get install postgresql;"
            " .ci/run installs it; or set HELIX_PG_BINDIR)"
        )
    cluster = Cluster(Cluster.make_base(), found).init()
    yield cluster
    cluster.remove()


@pytest.fixture(scope="session")
def pg_server(pg_template: Cluster) -> Iterator[Cluster]:
    """The shared server (never killed); each test gets a database of its own."""
    cluster = pg_template.clone_to(Cluster.make_base()).start()
    yield cluster
    cluster.remove()


@pytest.fixture
def pg_own(pg_template: Cluster) -> Iterator[Cluster]:
    """A server of this test's own, started (to kill, stop, restart)."""
    cluster = pg_template.clone_to(Cluster.make_base()).start()
    yield cluster
    cluster.remove()


@pytest.fixture
def pg_db(pg_server: Cluster) -> Iterator[str]:
    """A fresh database on the shared server: its connection string (as ``postgres``)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    pg_server.sql(f"CREATE DATABASE {name}")
    yield pg_server.dsn(name)
    pg_server.sql(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def store_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Stores made once: ``claude`` (the Claude fixtures), ``both`` (Claude and Codex),
    ``pi`` (Pi's, whose responses carry the cost Pi recorded)."""
    base = tmp_path_factory.mktemp("fleet-stores")
    out = {"claude": base / "claude.db", "both": base / "both.db", "pi": base / "pi.db"}
    asyncio.run(build_store(out["claude"], ("claude",)))
    asyncio.run(build_store(out["both"], ("claude", "codex")))
    asyncio.run(build_store(out["pi"], ("pi",)))  # Pi records the dollars of each response
    return out


@pytest.fixture
def make_store(store_templates: dict[str, Path], tmp_path: Path) -> Any:
    """``make_store(kind, name)``: a copy of a template store, its path."""

    def make(kind: str = "claude", name: str = "m") -> Path:
        db = tmp_path / name / "helix.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store_templates[kind], db)
        return db

    return make

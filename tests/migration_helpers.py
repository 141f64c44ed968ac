"""Shared by the migration tests: open a store so the migrations due run, and build one as an
older Helix did (the migrations before a given one only)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helixd.store import database
from helixd.store.database import Store
from helixd.store.schema import MIGRATIONS


def open_store(db: Path) -> None:
    """Open the store at ``db`` (a writer: the migrations due run) and close it."""

    async def run() -> None:
        async with await Store.open(db):
            pass

    asyncio.run(run())


@contextmanager
def migrations_before(name: str) -> Iterator[None]:
    """Stores opened inside are built (or migrated) only up to the migration before ``name``."""
    names = [known for known, _ in MIGRATIONS]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(database, "MIGRATIONS", MIGRATIONS[: names.index(name)])
        yield

"""The design spec §11.2 read API for consumers (kaizen-agentic ``metrics correlate``): one
session's digest by its uid, from the store ``HELIX_STORE_DB`` names.

    from helixd.query.digests import get_digest
    digest = get_digest("claude:17092961-…")      # None when missing

Synchronous, read-only (a ``mode=ro`` SQLite connection), no settings model, no event loop:
what a consumer that only has ``HELIX_STORE_DB`` needs.  ``Store.get_digest`` is the same
answer for code that holds the daemon's async store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from helixd.paths import default_store_path
from helixd.store.readonly import open_reader
from helixd.store.session_queries import digest_of_uid


def store_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``HELIX_STORE_DB`` when set, else Helix's default store."""
    named = environ.get("HELIX_STORE_DB")
    return Path(named).expanduser() if named else default_store_path()


def get_digest(session_uid: str, db: str | Path | None = None) -> dict[str, Any] | None:
    """The digest of ``session_uid`` (exact ``<flavor>:<native id>``) in the store ``db``
    (default: ``store_path()``), or None when the session or its digest is missing.
    Raises ``helixd.query.NoStore`` when there is no readable store."""
    con = open_reader(Path(db).expanduser() if db is not None else store_path())
    try:
        raw = digest_of_uid(con, session_uid)
    finally:
        con.close()
    return None if raw is None else dict(orjson.loads(raw))

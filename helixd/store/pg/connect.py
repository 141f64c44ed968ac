"""Opening a connection to the fleet's PostgreSQL (psycopg 3), the password kept out of
every string Helix writes.

The connection string comes from the configuration and may not hold a password (checked
here again with libpq's own parser); the password is passed beside it, or left to libpq
(``PGPASSWORD``, ``~/.pgpass``).  ``FleetDbError`` messages never contain it: libpq does not
echo passwords, and ``scrub`` removes it from any text that might."""

from __future__ import annotations

from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict

APPLICATION: Final = "helix"


class FleetDbError(RuntimeError):
    """The fleet database cannot be reached or used; the message says why (never the
    password)."""


def scrub(text: str, password: str | None) -> str:
    return text.replace(password, "***") if password else text


def _params(dsn: str, password: str | None, timeout: float) -> dict[str, Any]:
    try:
        parsed = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise FleetDbError(f"fleet.dsn is not a libpq connection string: {exc}") from None
    if "password" in parsed:
        raise FleetDbError("fleet.dsn must not carry a password")
    params: dict[str, Any] = {
        "connect_timeout": max(1, round(timeout)),
        "application_name": APPLICATION,
    }
    if password is not None:
        params["password"] = password
    return params


def describe(dsn: str) -> str:
    """``user@host:port/dbname`` for messages (the connection string holds no password, but
    a message needs no more than this)."""
    try:
        p = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "?"
    host = p.get("host") or "localhost"
    port = f":{p['port']}" if p.get("port") else ""
    user = f"{p['user']}@" if p.get("user") else ""
    return f"{user}{host}{port}/{p.get('dbname') or ''}"


def connect(dsn: str, password: str | None, timeout: float = 10) -> psycopg.Connection[Any]:
    """A connection for reading (autocommit: every query sees the latest pushes)."""
    params = _params(dsn, password, timeout)
    try:
        return psycopg.connect(dsn, autocommit=True, **params)
    except psycopg.Error as exc:
        raise FleetDbError(
            f"cannot connect to {describe(dsn)}: {scrub(str(exc).strip(), password)}"
        ) from None


async def connect_async(
    dsn: str, password: str | None, *, connect_timeout: float = 10
) -> psycopg.AsyncConnection[Any]:
    """A connection for pushing; transactions are explicit (``conn.transaction()``)."""
    params = _params(dsn, password, connect_timeout)
    try:
        return await psycopg.AsyncConnection.connect(dsn, autocommit=True, **params)
    except psycopg.Error as exc:
        raise FleetDbError(
            f"cannot connect to {describe(dsn)}: {scrub(str(exc).strip(), password)}"
        ) from None

"""Where a push goes and as whom: plain values the entry points build from the settings (the
fleet package reads no settings itself)."""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from helixd.fleet.secret import read_password


@dataclass(frozen=True, slots=True)
class Target:
    """A fleet database and this machine's names in it.  ``password`` never shows in a repr
    (logs, tracebacks)."""

    dsn: str
    machine: str
    user: str
    password: str | None = field(default=None, repr=False)
    include_text: bool = False
    batch_rows: int = 1000
    connect_timeout: float = 10


def machine_name(configured: str = "") -> str:
    """``fleet.machine``, else the host name."""
    return configured.strip() or socket.gethostname() or "unknown"


def user_name(configured: str = "") -> str:
    """``fleet.user``, else the login name."""
    if configured.strip():
        return configured.strip()
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def target_from(section: Any, environ: Mapping[str, str] = os.environ) -> Target | None:
    """The target a ``[fleet]`` section names (the full settings' or the light reader's:
    ``dsn``, ``password_file``, ``machine``, ``user``, ``connect_timeout_seconds``, and where
    present ``include_text`` and ``batch_rows``); None without a dsn.  SecretError when the
    password file cannot be used."""
    if not section.dsn:
        return None
    return Target(
        dsn=section.dsn,
        machine=machine_name(section.machine),
        user=user_name(section.user),
        password=read_password(section.password_file, environ),
        include_text=bool(getattr(section, "include_text", False)),
        batch_rows=int(getattr(section, "batch_rows", 1000)),
        connect_timeout=float(section.connect_timeout_seconds),
    )

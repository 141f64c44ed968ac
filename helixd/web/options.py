"""What the web face is told by the daemon (plain values: the face reads no settings)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Action = Callable[[], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class WebOptions:
    """``host``/``port`` to listen on (port 0: any free port); ``allowed_hosts``: the Host
    header values accepted besides the loopback names (DNS rebinding guard); ``token_path``:
    the per-user token file the mutating endpoints check (0600); ``prices``: the price table
    and its date; ``actions``: what ``POST /api/import`` and ``/api/renormalize`` run;
    ``status``: the daemon's own state for ``/api/status``."""

    store_db: Path
    token_path: Path
    host: str = "127.0.0.1"
    port: int = 7777
    allowed_hosts: tuple[str, ...] = ()
    prices: tuple[str, Mapping[str, Mapping[str, float]]] = ("", {})
    actions: Mapping[str, Action] = field(default_factory=dict)
    status: Callable[[], dict[str, Any]] | None = None
    read_threads: int = 4

"""Every catalogued adapter's declaration, loaded (no parser: each is imported on its agent's
first ``parse``): for the walk, the plan, the daemon and the checks that need them all.  A
read that needs one agent calls ``helixd.adapters.adapter_named``."""

from __future__ import annotations

from typing import Final

from helixd.adapters import AGENT_NAMES, Adapter, adapter_named

REGISTRY: Final[tuple[Adapter, ...]] = tuple(adapter_named(name) for name in AGENT_NAMES)

__all__ = ["REGISTRY"]

"""The design spec §11.1 exports of one session: the ``export HELIX_*=…`` lines a consumer
evaluates when a session closes (``eval "$(helixctl env UID)"``)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helixd.core.toolnames import is_infra_tool


def export_values(digest: Mapping[str, Any], store_db: Path) -> dict[str, str | int | float]:
    """The ``HELIX_*`` values of one digest, in the order the spec lists them."""
    cost = digest.get("cost") or {}
    tools: Mapping[str, int] = digest.get("tool_histogram") or {}
    calls = sum(tools.values())
    infra = sum(n for name, n in tools.items() if is_infra_tool(name))
    return {
        "HELIX_SESSION_UID": digest["session_uid"],
        "HELIX_REPO": digest.get("repo") or "",
        "HELIX_FLAVOR": digest.get("flavor") or "",
        "HELIX_TOKENS": int(cost.get("input_tokens", 0)) + int(cost.get("output_tokens", 0)),
        "HELIX_INFRA_OVERHEAD_SHARE": round(infra / calls, 3) if calls else 0.0,
        "HELIX_STORE_DB": str(store_db.expanduser().resolve()),
    }


def export_lines(digest: Mapping[str, Any], store_db: Path) -> list[str]:
    return [f"export {k}={shlex.quote(str(v))}" for k, v in export_values(digest, store_db).items()]

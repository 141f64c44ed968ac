"""Grok's ``summary.json`` (the session's metadata, rewritten whole) and what the session
files share: where a session lives (``<url-encoded cwd>/<uuid>/<file>``) and field helpers
that accept both of Grok's schemas (snake_case and camelCase)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Chunk
from helixd.adapters.declared.grok import NAME
from helixd.adapters.fields import first_str
from helixd.core.records import Parsed, SessionInfo
from helixd.core.timeparse import parse_ts

SUBAGENTS: Final = "subagents"


def parent_of(rel: str) -> str | None:
    """The parent session's uuid of a subagent directory
    ``<url-encoded cwd>/<parent uuid>/subagents/<uuid>/<file>``, else None."""
    parts = rel.split("/")
    return parts[-4] if len(parts) >= 4 and parts[-3] == SUBAGENTS else None


def session_of(rel: str) -> tuple[str, str | None]:
    """``(session uuid, cwd)`` from ``<url-encoded cwd>/<uuid>/<file>`` (a subagent's
    ``<cwd>/<parent>/subagents/<uuid>/<file>`` takes its parent's cwd)."""
    parts = rel.split("/")
    if parent_of(rel) is not None:
        parts = parts[:-4] + parts[-2:]
    cwd = unquote(parts[-3]) if len(parts) >= 3 else ""
    absolute = cwd.startswith("/") or (len(cwd) > 2 and cwd[1] == ":" and cwd[2] in "/\\")
    return parts[-2], (cwd if absolute else None)


def summary_info(obj: Mapping[str, Any], uid: str, native: str) -> SessionInfo:
    """Session facts from ``summary.json`` in either schema (agentsview ``decodeGrokSummary``)."""
    parent = first_str(obj, "parent_session_id", "parentSessionId")
    kind = first_str(obj, "session_kind", "sessionKind")
    times = (parse_ts(obj.get(k)) for k in ("last_active_at", "lastActiveAt", "updated_at"))
    last = max((t for t in (*times, parse_ts(obj.get("updatedAt"))) if t), default=None)
    return SessionInfo(
        uid=uid,
        agent=NAME,
        native_id=native,
        parent_uid=f"{NAME}:{parent}" if parent else None,
        cwd=first_str(obj.get("info"), "cwd")
        or first_str(obj, "cwd", "git_root_dir", "gitRootDir"),
        git_branch=first_str(obj, "head_branch", "headBranch")
        or first_str(obj.get("git"), "branch"),
        model=first_str(obj, "current_model_id", "modelId", "model_id"),
        title=first_str(obj, "generated_title", "session_summary", "summary"),
        agent_type=(first_str(obj, "agent_name", "agentName") or kind)
        if kind == "subagent"
        else None,
        first_ts=parse_ts(obj.get("created_at")) or parse_ts(obj.get("createdAt")),
        last_ts=last,
    )


def summary_model(data: bytes | None) -> str | None:
    try:
        return first_str(orjson.loads(data), "current_model_id", "modelId") if data else None
    except orjson.JSONDecodeError:
        return None


def parse_summary(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    data = chunk.data
    obj = jsonl.whole_document(chunk, "summary.json")
    if isinstance(obj, Parsed):
        return obj
    native, cwd = session_of(chunk.ctx.rel)
    info = summary_info(obj, f"{NAME}:{native}", native)
    parent = parent_of(chunk.ctx.rel)
    info = info._replace(
        cwd=info.cwd or cwd,
        parent_uid=info.parent_uid or (f"{NAME}:{parent}" if parent else None),
        agent_type=info.agent_type or ("subagent" if parent else None),
    )
    return Parsed(len(data), {}, sessions=[info], lines=1)

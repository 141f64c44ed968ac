"""Claude Code records besides user/assistant, mapped onto the spec's event kinds (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.adapters.fields import get_dict, get_str
from helixd.adapters.toolkinds import shorten

_SYSTEM_KINDS: Final = {
    "api_error": "error",
    "error": "error",
    "api_refusal": "error",
    "turn_duration": "completion",
}
_TITLE_FIELDS: Final = ("aiTitle", "customTitle", "title", "agentName", "name")


def meta_record(obj: Mapping[str, Any], rtype: str) -> tuple[str, str, str]:
    """``(kind, summary, body)`` for the records besides user/assistant (formats.md §3.6)."""
    if rtype == "system":
        subtype = get_str(obj, "subtype") or "system"
        label = "compaction boundary" if subtype == "compact_boundary" else f"system: {subtype}"
        return _SYSTEM_KINDS.get(subtype, "lifecycle"), label, get_str(obj, "content")
    if rtype == "summary":
        body = get_str(obj, "summary")
        return "lifecycle", "summary: " + shorten(body, 150), body
    if rtype in ("ai-title", "custom-title", "agent-name"):
        body = next((obj[f] for f in _TITLE_FIELDS if isinstance(obj.get(f), str)), "")
        return "lifecycle", f"{rtype}: {shorten(body, 150)}", body
    if rtype == "queue-operation":
        body, op = get_str(obj, "content"), obj.get("operation")
        kind = "human_intervention" if op == "enqueue" and body else "lifecycle"
        return kind, f"queue {op}" + (f": {shorten(body, 150)}" if body else ""), body
    if rtype == "attachment":
        att = get_dict(obj, "attachment")
        if att.get("type") == "queued_command":
            return "human_intervention", "attachment: queued_command", get_str(att, "prompt")
        return "lifecycle", f"attachment: {att.get('type')}", ""
    if rtype == "progress":
        return "lifecycle", f"progress: {get_dict(obj, 'data').get('type')}", ""
    return "lifecycle", rtype, ""

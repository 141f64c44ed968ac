"""What each agent does to its own logs that Helix users should know about (pure data and
small reads of the agents' settings; used by ``helixctl doctor``).

Claude Code deletes transcripts older than ``cleanupPeriodDays`` (default 30) at startup;
Gemini CLI deletes by ``general.sessionRetention``.  Helix keeps what it ingested, so the
risk is only for logs written while Helix was not running.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SourceRetention:
    agent: str
    setting: str
    days: float | None  # None: the agent keeps its logs
    where: Path


def _json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def source_retention(home: Path, environ: Mapping[str, str]) -> list[SourceRetention]:
    out: list[SourceRetention] = []
    dirs = [p.strip() for p in environ.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    claude_settings = (Path(dirs[0]) if dirs else home / ".claude") / "settings.json"
    if claude_settings.parent.is_dir():
        raw = _json(claude_settings).get("cleanupPeriodDays", 30)
        claude_days = float(raw) if isinstance(raw, (int, float)) else 30.0
        out.append(SourceRetention("claude", "cleanupPeriodDays", claude_days, claude_settings))
    gemini_settings = home / ".gemini" / "settings.json"
    if gemini_settings.is_file():
        general = _json(gemini_settings).get("general")
        policy = general.get("sessionRetention") if isinstance(general, dict) else None
        max_age = policy.get("maxAge") if isinstance(policy, dict) else None
        days = _days(max_age) if isinstance(max_age, str) else None
        out.append(
            SourceRetention("gemini", "general.sessionRetention.maxAge", days, gemini_settings)
        )
    return out


def _days(text: str) -> float | None:
    units = {"d": 1.0, "h": 1 / 24, "w": 7.0, "m": 30.0}
    text = text.strip().lower()
    if text and text[-1] in units:
        try:
            return float(text[:-1]) * units[text[-1]]
        except ValueError:
            return None
    return None

"""The declaration of the agent parsed by ``helixd.adapters.codex``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "codex"
# 2: tool results carry a status and the test counts of their output; 3: a call the user
# declined (exec / patch approval) is a rejected result; 4: the session's git.commit_hash
# (code-o11y), retry events, a turn's output tokens on its completion event
VERSION: Final = 4


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """``$CODEX_HOME`` (comma-separated, as ccusage allows) or ``~/.codex``: both the live
    ``sessions`` tree and the flat ``archived_sessions``."""
    homes = [p.strip() for p in environ.get("CODEX_HOME", "").split(",") if p.strip()]
    bases = [Path(p).expanduser() for p in homes] or [home / ".codex"]
    return [base / sub for base in bases for sub in ("sessions", "archived_sessions")]


def matches(rel: str) -> bool:
    """Only rollouts: never ``auth.json``, config, ``history.jsonl`` or index files."""
    name = rel.rpartition("/")[2]
    return name.startswith("rollout-") and name.endswith(".jsonl")


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="codex",
    default_roots=default_roots,
    matches=matches,
    description="Codex CLI rollouts ($CODEX_HOME/sessions and archived_sessions)",
)

"""The declaration of the agent parsed by ``helixd.adapters.aider``: where its files are
and which ones it claims (plain data and cheap path predicates; importing it loads no
parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter

NAME: Final = "aider"
# 2 starts where the first four are (tool results with status and test counts); 3: the
# message cost of a Tokens line
VERSION: Final = 3
FILE: Final = ".aider.chat.history.md"


def default_roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """None of its own: the histories live in the projects (known session cwds and
    configured project directories)."""
    return []


def matches(rel: str) -> bool:
    return rel == FILE or rel.endswith("/" + FILE)


ADAPTER: Final = Adapter(
    name=NAME,
    version=VERSION,
    parser="aider",
    default_roots=default_roots,
    matches=matches,
    description="Aider chat histories (<project>/.aider.chat.history.md, markdown)",
    project_files=(FILE,),
    usage_approximate="Aider prints its token counts rounded (9.7k sent)",
)

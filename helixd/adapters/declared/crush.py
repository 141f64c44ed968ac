"""The declarations of the agents parsed by ``helixd.adapters.crush`` (Crush and the legacy
Go OpenCode, one SQLite schema): where their files are and which ones they claim (plain data
and cheap path predicates; importing it loads no parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.adapters.base import Adapter, Table

# 2 starts where the first four are (tool results with status and test counts); 3: the
# session's recorded cost
VERSION: Final = 3
TABLES: Final = (Table("messages", order="updated_at"), Table("sessions", order="updated_at"))


def _roots(environ: Mapping[str, str], home: Path) -> list[Path]:
    """No global root: the databases live in the projects (found through the directories
    other agents' sessions ran in, and configured roots)."""
    return []


CRUSH: Final = Adapter(
    name="crush",
    version=VERSION,
    parser="crush",
    default_roots=_roots,
    matches=lambda rel: rel == ".crush/crush.db" or rel.endswith("/.crush/crush.db"),
    description="Crush sessions (<project>/.crush/crush.db, SQLite)",
    tables=TABLES,
    project_files=(".crush/crush.db",),
)
OPENCODE_GO: Final = Adapter(
    name="opencode_go",
    version=VERSION,
    parser="crush",
    default_roots=_roots,
    matches=lambda rel: rel == ".opencode/opencode.db" or rel.endswith("/.opencode/opencode.db"),
    description="legacy Go OpenCode sessions (<project>/.opencode/opencode.db, SQLite)",
    tables=TABLES,
    project_files=(".opencode/opencode.db",),
)

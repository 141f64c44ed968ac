"""The layering rules of docs/architecture.md, checked by walking the imports."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).parent.parent / "helixd"
CORE = [
    "core.records",
    "core.timeparse",
    "core.values",
    "core.redact",
    "adapters",
    "core.retention",
    "core.testruns",
    "core.testcommands",
    "core.languages",
    "core.signals",
]
# Pure libraries the core may use: JSON decoding and the (GIL-free) substring search.
CORE_ALLOWED = {"orjson", "ahocorasick_rs", *(f"helixd.{m}" for m in CORE)}


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("").as_posix().replace("/", ".")
        out.append((rel.removesuffix(".__init__"), path))
    return sorted(out)


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def is_core(name: str) -> bool:
    return any(name == f"helixd.{m}" or name.startswith(f"helixd.{m}.") for m in CORE)


@pytest.mark.parametrize(("name", "path"), [m for m in modules() if is_core(m[0])])
def test_the_pure_core_imports_only_the_standard_library_orjson_and_the_core(
    name: str, path: Path
) -> None:
    for imp in imports(path):
        top = imp.split(".")[0]
        if top in sys.stdlib_module_names or top == "__future__":
            continue
        assert any(imp == a or imp.startswith(a + ".") for a in CORE_ALLOWED), (name, imp)


@pytest.mark.parametrize(("name", "path"), modules())
def test_only_the_entry_points_read_the_config(name: str, path: Path) -> None:
    if name in ("helixd.daemon.app", "helixd.config") or name.startswith("helixd.cli."):
        return
    assert "helixd.config" not in imports(path), name


_SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE TABLE|PRAGMA)\b[^\n]*\b(FROM|INTO|SET|"
    r"WHERE|busy_timeout|journal_mode|\()",
    re.S,
)


@pytest.mark.parametrize(("name", "path"), modules())
def test_sql_lives_only_in_the_store_package(name: str, path: Path) -> None:
    if name.startswith("helixd.store"):
        return
    strings = [
        n.value
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    assert not [s for s in strings if _SQL.search(s)], name

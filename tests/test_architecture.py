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
    "core.secret_rules",
    "core.secret_values",
    "adapters",
    "core.retention",
    "core.testruns",
    "core.testcommands",
    "core.languages",
    "core.signals",
    "core.toolnames",
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


# The floors, bottom up: a module imports only from its own folder or a lower floor.
# web/ and mcp/ are faces (they import query/, never store/); the daemon hosts the web face.
FLOORS = {
    "core": 0,
    "adapters": 1,
    "sources": 2,
    "store": 2,
    "query": 3,
    "ingest": 3,
    "web": 4,
    "mcp": 4,
    "fleet": 4,
    "daemon": 5,
    "ops": 6,
    "cli": 7,
}
FACES = ("web", "mcp")


def folder(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS) else None


def ours(path: Path) -> set[str]:
    return {i for i in imports(path) if i == "helixd" or i.startswith("helixd.")}


def test_every_module_lives_in_a_floor_or_is_a_shared_top_level_module() -> None:
    top = {n for n, _ in modules() if folder(n) is None}
    assert top == {
        "helixd",
        "helixd.config",
        "helixd.configkeys",
        "helixd.filemodes",
        "helixd.logs",
        "helixd.paths",
        "helixd.prices",
        "helixd.readconfig",
        "helixd.statusline",
    }, top
    assert {folder(n) for n, _ in modules()} - {None} <= set(FLOORS)


@pytest.mark.parametrize(("name", "path"), [m for m in modules() if folder(m[0])])
def test_no_import_runs_upward(name: str, path: Path) -> None:
    here = folder(name)
    assert here is not None
    for imp in ours(path):
        there = folder(imp)
        if there is None or there == here:
            continue
        assert FLOORS[there] < FLOORS[here], f"{name} imports {imp} ({there} is not below {here})"


@pytest.mark.parametrize(("name", "path"), [m for m in modules() if folder(m[0]) in FACES])
def test_faces_read_through_the_query_layer_never_the_store(name: str, path: Path) -> None:
    assert not [i for i in ours(path) if i.startswith("helixd.store")], name


@pytest.mark.parametrize(("name", "path"), [m for m in modules() if folder(m[0]) == "cli"])
def test_the_cli_reads_through_the_query_layer(name: str, path: Path) -> None:
    """The CLI opens the writer store (``store.database``) for the commands that write; every
    read goes through ``helixd.query``."""
    assert not [
        i for i in ours(path) if i.startswith("helixd.store") and i != "helixd.store.database"
    ], name


@pytest.mark.parametrize(
    ("name", "path"), [m for m in modules() if folder(m[0]) in ("core", "adapters", "store")]
)
def test_the_lower_floors_read_no_settings_and_no_paths(name: str, path: Path) -> None:
    settings = {"helixd.config", "helixd.configkeys", "helixd.readconfig", "helixd.paths"}
    assert not ours(path) & {*settings, "helixd.logs"}


# The daemon's composition root, split by job (docs/architecture.md): the entry point and
# the parts of it that read the settings; the daemon's other modules take plain values.
DAEMON_ROOT = (
    "helixd.daemon.app",
    "helixd.daemon.state",
    "helixd.daemon.jobs",
    "helixd.daemon.sweep",
)


@pytest.mark.parametrize(("name", "path"), modules())
def test_only_the_entry_points_read_the_config(name: str, path: Path) -> None:
    if name in (*DAEMON_ROOT, "helixd.config", "helixd.readconfig"):
        return
    if name.startswith("helixd.cli."):
        return
    assert "helixd.config" not in imports(path), name


# The daemon's composition root, split by job (issue 12): each part says its one job in its
# docstring and stays small.
DAEMON_PARTS = (
    *DAEMON_ROOT,
    "helixd.daemon.storewatch",
    "helixd.daemon.statusloop",
    "helixd.daemon.dispatch",
    "helixd.daemon.webface",
)


@pytest.mark.parametrize("name", DAEMON_PARTS)
def test_each_part_of_the_daemon_says_its_job_and_stays_small(name: str) -> None:
    path = dict(modules())[name]
    text = path.read_text()
    assert ast.get_docstring(ast.parse(text)), name
    assert len(text.splitlines()) <= 350, (name, len(text.splitlines()))


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

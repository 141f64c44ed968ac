"""Issue 12: the adapter catalogue costs what it is used for.  Every catalogue line loads a
declaration of its own name, every declaration's parser loads and names itself the same,
every adapter declared in ``helixd/adapters/declared/`` is catalogued; the declarations load
no parser, looking one agent up imports that agent's declaration and no other agent's, and
parsing imports that agent's parser only (fresh interpreters)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from helixd.adapters import AGENT_NAMES, CATALOGUE, Adapter, adapter_named
from helixd.adapters.base import LazyParser
from helixd.adapters.registry import REGISTRY
from tests.conftest import REPO

DECLARATIONS = {f"helixd.adapters.declared.{module}" for _, module, _ in CATALOGUE}
PARSERS = {f"helixd.adapters.{a.parser}" for a in REGISTRY}
# what a declaration may load of the package: nothing else of helixd.adapters
DECLARATION_SIDE = {"helixd.adapters", "helixd.adapters.base", "helixd.adapters.registry"}


@pytest.mark.parametrize(("name", "module", "attribute"), CATALOGUE, ids=AGENT_NAMES)
def test_every_catalogue_line_loads_the_declaration_of_its_name(
    name: str, module: str, attribute: str
) -> None:
    adapter = getattr(importlib.import_module(f"helixd.adapters.declared.{module}"), attribute)
    assert isinstance(adapter, Adapter) and adapter.name == name
    assert adapter_named(name) is adapter


@pytest.mark.parametrize("adapter", REGISTRY, ids=AGENT_NAMES)
def test_every_declaration_s_parser_loads_and_names_itself_the_same(adapter: Adapter) -> None:
    parsers = importlib.import_module(f"helixd.adapters.{adapter.parser}").PARSERS
    assert callable(parsers[adapter.name])
    assert isinstance(adapter.parse, LazyParser)
    assert adapter.parse.load() is parsers[adapter.name]


def test_every_parser_names_only_agents_declared_with_it() -> None:
    for module in sorted(PARSERS):
        named = set(importlib.import_module(module).PARSERS)
        declared = {a.name for a in REGISTRY if f"helixd.adapters.{a.parser}" == module}
        assert named == declared, module


def test_the_registry_is_the_catalogue_in_its_order() -> None:
    assert tuple(a.name for a in REGISTRY) == AGENT_NAMES
    assert len(set(AGENT_NAMES)) == len(AGENT_NAMES)


def test_every_adapter_declared_in_the_package_is_catalogued() -> None:
    found: dict[int, str] = {}
    for path in sorted((REPO / "helixd" / "adapters" / "declared").glob("*.py")):
        name = f"helixd.adapters.declared.{path.stem}".removesuffix(".__init__")
        for attribute, value in vars(importlib.import_module(name)).items():
            if isinstance(value, Adapter):
                found[id(value)] = f"{path.stem}.{attribute}"
    assert len(found) >= len(CATALOGUE)
    catalogued = {id(a) for a in REGISTRY}
    assert [where for key, where in found.items() if key not in catalogued] == []


def test_no_parser_module_declares_an_adapter() -> None:
    """The declaration is the declared module's alone (a parser module holding one would be
    loaded by every walk again)."""
    for module in sorted(PARSERS):
        held = [
            k for k, v in vars(importlib.import_module(module)).items() if isinstance(v, Adapter)
        ]
        assert held == [], module


def test_an_adapter_without_a_parser_is_refused() -> None:
    with pytest.raises(ValueError, match="names no parser"):
        Adapter(name="x", version=1, default_roots=lambda e, h: [], matches=lambda rel: False)


def test_an_unknown_agent_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: claude, codex"):
        adapter_named("nobody")


def _adapter_modules_after(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=True,
    )
    return {m for m in done.stdout.split() if m.startswith("helixd.adapters")}


def test_the_catalogue_imports_no_agent_module() -> None:
    assert _adapter_modules_after("import helixd.adapters") <= DECLARATION_SIDE


def test_the_registry_imports_every_declaration_and_no_parser() -> None:
    loaded = _adapter_modules_after("import helixd.adapters.registry")
    assert loaded - DECLARATION_SIDE == DECLARATIONS | {"helixd.adapters.declared"}
    assert "helixd.core.records" not in loaded


def test_looking_one_agent_up_imports_that_agent_s_declaration_only() -> None:
    lookup = "from helixd.adapters import adapter_named\nadapter = adapter_named('{}')"
    assert _adapter_modules_after(lookup.format("pi")) - DECLARATION_SIDE == {
        "helixd.adapters.declared",
        "helixd.adapters.declared.pi",
    }
    assert _adapter_modules_after(lookup.format("roo")) - DECLARATION_SIDE == {
        "helixd.adapters.declared",
        "helixd.adapters.declared.cline_tasks",
    }


def test_parsing_imports_that_agent_s_parser_only() -> None:
    code = (
        "from helixd.adapters import Chunk, FileContext, adapter_named\n"
        "ctx = FileContext('/x/a.jsonl', 'a.jsonl')\n"
        "adapter_named('pi').parse(Chunk(b'{}\\n', 0, True, ctx), {})"
    )
    assert _adapter_modules_after(code) & PARSERS == {"helixd.adapters.pi"}


def test_every_parser_pickles_by_name_loaded_or_not() -> None:
    """An adapter's ``parse`` crosses a process boundary by name, also after it was loaded
    (crush's and cline_tasks' parsers are closures, which do not pickle)."""
    import pickle

    from helixd.adapters.registry import REGISTRY

    for adapter in REGISTRY:
        adapter.parse.load()  # type: ignore[attr-defined]
        again = pickle.loads(pickle.dumps(adapter.parse))
        assert again.load() is adapter.parse.load()  # type: ignore[attr-defined]

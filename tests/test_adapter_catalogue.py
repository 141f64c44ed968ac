"""Issue 12: the adapter catalogue costs what it is used for.  Every catalogue line loads an
adapter of its own name, every adapter defined in ``helixd/adapters/`` is catalogued, and
looking one agent up imports that agent's module and no other agent's (fresh interpreters)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from helixd.adapters import AGENT_NAMES, CATALOGUE, Adapter, adapter_named
from helixd.adapters.registry import REGISTRY
from tests.conftest import REPO

AGENT_MODULES = {f"helixd.adapters.{module}" for _, module, _ in CATALOGUE}


@pytest.mark.parametrize(("name", "module", "attribute"), CATALOGUE, ids=AGENT_NAMES)
def test_every_catalogue_line_loads_the_adapter_of_its_name(
    name: str, module: str, attribute: str
) -> None:
    adapter = getattr(importlib.import_module(f"helixd.adapters.{module}"), attribute)
    assert isinstance(adapter, Adapter) and adapter.name == name
    assert adapter_named(name) is adapter


def test_the_registry_is_the_catalogue_in_its_order() -> None:
    assert tuple(a.name for a in REGISTRY) == AGENT_NAMES
    assert len(set(AGENT_NAMES)) == len(AGENT_NAMES)


def test_every_adapter_defined_in_the_package_is_catalogued() -> None:
    package = REPO / "helixd" / "adapters"
    found: dict[int, str] = {}
    for path in sorted(package.glob("*.py")):
        module = importlib.import_module(f"helixd.adapters.{path.stem}".removesuffix(".__init__"))
        for attribute, value in vars(module).items():
            if isinstance(value, Adapter):
                found[id(value)] = f"{path.stem}.{attribute}"
    assert len(found) >= len(CATALOGUE)
    catalogued = {id(a) for a in REGISTRY}
    assert [where for key, where in found.items() if key not in catalogued] == []


def test_an_unknown_agent_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: claude, codex"):
        adapter_named("nobody")


def _agent_modules_after(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=True,
    )
    return set(done.stdout.split()) & AGENT_MODULES


def test_the_catalogue_imports_no_agent_module() -> None:
    assert _agent_modules_after("import helixd.adapters") == set()


def test_looking_one_agent_up_imports_that_agent_only() -> None:
    assert _agent_modules_after(
        "from helixd.adapters import adapter_named\nadapter_named('pi')"
    ) == {"helixd.adapters.pi"}
    assert _agent_modules_after(
        "from helixd.adapters import adapter_named\nadapter_named('roo')"
    ) == {"helixd.adapters.cline_tasks"}

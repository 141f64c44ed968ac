"""Issue 3, item 4: the ingest path never names an agent.  Outside ``helixd/adapters/`` no
code (identifiers, imports, string literals other than docstrings and comments) may name a
registered agent: adapters are found through ``REGISTRY`` only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helixd.adapters.registry import REGISTRY

PKG = Path(__file__).parent.parent / "helixd"
AGENT = re.compile(r"\b(" + "|".join(a.name for a in REGISTRY) + r")\b", re.I)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def named_agents(source: str) -> list[str]:
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        words: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            words.append(node.value)
        elif isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, ast.alias):
            words.append(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            words.append(node.module)
        found.extend(m.group(0) for w in words for m in AGENT.finditer(w.replace("_", " ")))
    return found


OUTSIDE = sorted(p for p in PKG.rglob("*.py") if "adapters" not in p.relative_to(PKG).parts)


@pytest.mark.parametrize("path", OUTSIDE, ids=lambda p: p.relative_to(PKG).as_posix())
def test_no_agent_is_named_outside_the_adapters(path: Path) -> None:
    assert named_agents(path.read_text()) == []


def test_the_check_sees_names_in_code_but_not_in_docstrings() -> None:
    src = '"""Reads claude files."""\nfrom helixd.adapters import codex\nx = "grok:" + y\n'
    assert named_agents(src) == ["codex", "grok"]
    assert named_agents("def f():\n    '''Gemini.'''\n    return GEMINI_ROOT\n") == ["GEMINI"]

"""helixd.core.languages: a file's language from its path."""

from __future__ import annotations

import pytest

from helixd.core.languages import language_of

CASES = [
    # extensions
    ("src/helixd/testruns.py", "python"),
    ("stubs/x.pyi", "python"),
    ("app/page.tsx", "tsx"),
    ("lib/util.ts", "typescript"),
    ("types/index.d.ts", "typescript"),
    ("web/main.js", "javascript"),
    ("web/main.mjs", "javascript"),
    ("web/App.jsx", "javascript"),
    ("cmd/main.go", "go"),
    ("src/lib.rs", "rust"),
    ("README.md", "markdown"),
    ("package-lock.json", "json"),
    (".github/workflows/ci.yml", "yaml"),
    ("config.yaml", "yaml"),
    ("pyproject.toml", "toml"),
    ("scripts/install.sh", "shell"),
    ("index.html", "html"),
    ("styles.css", "css"),
    ("schema.sql", "sql"),
    ("main.c", "c"),
    ("main.h", "c"),
    ("main.cpp", "cpp"),
    ("main.hpp", "cpp"),
    ("Main.java", "java"),
    ("Main.kt", "kotlin"),
    ("App.swift", "swift"),
    ("app.rb", "ruby"),
    ("index.php", "php"),
    ("Program.cs", "csharp"),
    ("Main.scala", "scala"),
    ("init.lua", "lua"),
    ("analysis.R", "r"),
    ("main.dart", "dart"),
    ("lib/app.ex", "elixir"),
    ("Main.hs", "haskell"),
    ("main.ml", "ocaml"),
    ("build.zig", "zig"),
    ("App.vue", "vue"),
    ("App.svelte", "svelte"),
    ("notes.txt", "text"),
    ("fix.patch", "diff"),
    # case-insensitive extensions
    ("SCRIPT.PY", "python"),
    ("Notes.MD", "markdown"),
    # well-known names
    ("Makefile", "makefile"),
    ("sub/GNUmakefile", "makefile"),
    ("Makefile.am", "makefile"),
    ("rules.mk", "makefile"),
    ("Dockerfile", "dockerfile"),
    ("docker/Dockerfile.dev", "dockerfile"),
    ("dev.Dockerfile", "dockerfile"),
    ("CMakeLists.txt", "cmake"),
    ("/home/u/.bashrc", "shell"),
    ("~/.zshrc", "shell"),
    ("Gemfile", "ruby"),
    ("Jenkinsfile", "groovy"),
    ("go.mod", "go"),
    ("C:\\work\\src\\main.rs", "rust"),
    # unknown
    ("data.bin", None),
    ("LICENSE.unknownext", None),
    ("noextension", None),
    ("dir/", None),
    ("", None),
    (".py", None),  # a hidden file named ".py", not a Python file
]


@pytest.mark.parametrize(("path", "expected"), CASES)
def test_language_of(path: str, expected: str | None) -> None:
    assert language_of(path) == expected

"""Test runs in shell tool calls: which runner a command invokes, and the counts it printed.

Agents run test suites constantly, and "did the tests pass, and how many" is one of the most
useful facts a session memory can keep.  This module answers both halves from plain text,
purely (no I/O, stdlib only):

* :func:`test_runner` reads a shell command line -- usually compound, such as
  ``cd pkg && FOO=1 timeout 60 uv run pytest -x 2>&1 | tail -20`` -- and names the test
  runner it invokes, or None.
* :func:`parse_counts` reads the runner's output and returns the passed / failed / skipped
  counts of its *last* summary, or None when no summary is present.

Command recognition
-------------------
The command is split into simple commands on unquoted ``&&``, ``||``, ``;``, ``|``, ``&``,
newlines, parentheses, ``$(`` and backticks.  Quotes are honoured, redirections
(``2>&1``, ``> log``) are dropped and heredoc bodies are skipped, so the words inside
``echo "run go test"`` or a ``cat <<EOF`` body never count.  Each simple command is then
stripped of environment assignments (``FOO=1``), wrappers (``timeout 60``, ``time``,
``env``, ``nice``, ``sudo``, ``xargs`` ...), environment runners (``uv run``,
``poetry run``, ``pipenv run``, ``pdm run``, ``hatch run``, ``npx``, ``bunx``,
``bundle exec``) and ``python -m``; what remains must *be* the runner (matched on the
program's base name, so ``.venv/bin/pytest`` and ``./node_modules/.bin/jest`` count).  A
runner named only as an argument (``pip install pytest``, ``cat pytest.ini``,
``grep -r jest .``, ``which pytest``) is not a test run.  ``sh -c '...'`` and
``bash -c '...'`` are looked into.  ``--version`` / ``--help`` invocations are not runs.

Names returned: ``pytest``, ``unittest`` (``python -m unittest``, ``manage.py test``),
``jest``, ``vitest``, ``mocha``, ``go``, ``cargo``, ``nextest``, ``rspec``, ``phpunit``
(also ``php artisan test``), ``deno``, ``bun``, ``dotnet``, ``maven``, ``gradle``, and the
wrappers ``npm``, ``pnpm``, ``yarn``, ``make``, ``just``, ``tox``, ``nox``.  Package-manager
scripts count when the script is ``test`` or ``test:*`` / ``test-*`` / ``test_*``; make and
just targets count for ``test``, ``tests``, ``check`` and ``test*``-prefixed names.
Wrappers print whatever the underlying runner prints, so :func:`parse_counts` detects the
format from the output for them.

Summary parsing
---------------
Only the last 64 KiB of the output is examined (:data:`TAIL_CHARS`): every runner prints
its summary at the end, agents' outputs are often already cut by ``| tail``, and tool
outputs can be megabytes long.  Before any regular expression runs, a handful of substring
tests on that tail reject outputs that cannot hold a summary, which keeps the common
no-summary case to a few microseconds.  ANSI colour codes are stripped and carriage
returns treated as newlines.

Counts are ``passed``, ``failed`` (failures + errors) and ``skipped`` (skipped, xfail, todo,
pending, ignored, incomplete).  Per format:

* pytest -- the last ``N passed, M failed ... in 1.2s`` line (with or without the ``===``
  rule); ``xpassed`` counts as passed, ``xfailed`` as skipped, ``deselected`` and
  ``warnings`` are ignored; ``no tests ran`` is all zeros.
* unittest -- ``Ran N tests`` and the ``OK`` / ``FAILED (...)`` line after it; passed is
  what remains of N after failures, errors, skips and expected failures.
* jest -- the ``Tests:`` line (not ``Test Suites:``); vitest -- the ``Tests`` line (not
  ``Test Files``); mocha -- ``N passing`` with the ``pending`` / ``failing`` lines after it.
* go -- with ``-v`` output, the top-level ``--- PASS/FAIL/SKIP:`` lines (subtests are
  indented and not counted, so a failing subtest is not counted twice); otherwise one per
  package: ``ok pkg`` passed, ``FAIL pkg`` failed, ``? pkg [no test files]`` ignored.
* cargo -- the sum of every ``test result:`` line in the tail (one per test binary and the
  doc-tests); nextest -- its ``Summary [...] N tests run:`` line.
* rspec -- ``N examples, M failures, K pending``; phpunit -- ``OK (N tests, ...)`` or
  ``Tests: N, Assertions: ..., Failures: ...``; deno -- ``ok | N passed | M failed``;
  bun -- the block of ``N pass`` / ``N fail`` / ``N skip`` / ``N todo`` lines; maven -- the
  last ``Tests run:`` line; dotnet -- the sum of ``Passed!/Failed! - Failed: ...`` lines or
  the ``Test summary:`` line.

When a runner is given its own formats are tried first; otherwise (or when they find
nothing) every format is tried and the summary that ends last in the text wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["TAIL_CHARS", "TestCounts", "parse_counts", "test_runner"]

TAIL_CHARS = 64 * 1024
"""How much of the end of an output :func:`parse_counts` looks at."""


@dataclass(frozen=True, slots=True)
class TestCounts:
    """What one test run reported: counts from the runner's own summary."""

    __test__ = False  # not a pytest test class, despite the name

    runner: str
    passed: int
    failed: int
    skipped: int


# --------------------------------------------------------------------------------------
# Command recognition
# --------------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = frozenset(";|&()\n`")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})
# Commands that run another command given after their own options.
_PREFIXES = frozenset(
    {"time", "nice", "nohup", "sudo", "exec", "command", "builtin", "env", "timeout"}
    | {"xargs", "stdbuf", "caffeinate", "xvfb-run", "ionice", "chronic", "unbuffer"}
)
# Environment runners: ``<tool> run <cmd>`` (or ``<tool> exec <cmd>``).
_RUN_VERBS = {
    "uv": "run",
    "poetry": "run",
    "pipenv": "run",
    "pdm": "run",
    "rye": "run",
    "hatch": "run",
    "conda": "run",
    "micromamba": "run",
    "mamba": "run",
    "pixi": "run",
    "bundle": "exec",
    "dotenv": "run",
}
_DIRECT_PREFIXES = frozenset({"npx", "bunx", "pnpx", "uvx"})
# Options (of any of the tools above) that take a separate value.
_VALUE_OPTIONS = frozenset(
    {"--package", "--with", "--python", "-p", "--project", "--directory", "--extra"}
    | {"--group", "--env-file", "--index", "--with-requirements", "--from", "-n", "--name"}
    | {"-e", "--env", "-s", "--signal", "-k", "--kill-after", "-u", "--user", "-C", "--dir"}
    | {"--prefix", "--cwd", "-w", "--workspace", "--filter", "-F", "-f", "--file"}
    | {"--manifest-path", "-E", "--environment", "-c", "--config", "-P", "--profile"}
)
_DIRECT = {
    "pytest": "pytest",
    "py.test": "pytest",
    "jest": "jest",
    "vitest": "vitest",
    "mocha": "mocha",
    "rspec": "rspec",
    "phpunit": "phpunit",
    "tox": "tox",
    "nox": "nox",
}
_MODULES = {"pytest": "pytest", "unittest": "unittest", "tox": "tox", "nox": "nox"}
_NOT_A_RUN = frozenset({"--version", "--help", "-h", "-V"})


def test_runner(command: str) -> str | None:
    """The test runner a shell command invokes, or None.

    The first simple command (in textual order) that invokes a runner decides; see the
    module docstring for what is recognised and what is deliberately not.
    """
    for words in _simple_commands(command):
        runner = _runner_of(words, 0)
        if runner is not None:
            return runner
    return None


test_runner.__test__ = False  # type: ignore[attr-defined]


def _simple_commands(command: str) -> Iterator[list[str]]:
    """The word lists of the simple commands in a shell command line (best effort)."""
    words: list[str] = []
    word: list[str] = []
    in_word = False
    heredocs: list[tuple[str, bool]] = []
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch in "'\"":
            end = _closing_quote(command, i)
            word.append(_unquote(command[i + 1 : end], ch))
            in_word, i = True, end + 1
        elif ch == "\\" and i + 1 < n:
            word.append(command[i + 1])
            in_word, i = True, i + 2
        elif ch in "<>" or command.startswith("&>", i):
            if in_word and "".join(word).isdigit():
                word, in_word = [], False  # the fd of ``2>&1``
            i = _skip_redirection(command, i, heredocs)
        elif ch == "#" and not in_word:
            i = command.find("\n", i)
            i = n if i < 0 else i
        elif ch in " \t" or ch in _SEPARATORS or command.startswith("$(", i):
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            i += 2 if ch == "$" else 1
            if ch != " " and ch != "\t":
                if words:
                    yield words
                words = []
                if ch == "\n" and heredocs:
                    i = _skip_heredocs(command, i, heredocs)
                    heredocs = []
        else:
            word.append(ch)
            in_word, i = True, i + 1
    if in_word:
        words.append("".join(word))
    if words:
        yield words


def _closing_quote(command: str, start: int) -> int:
    quote = command[start]
    i = start + 1
    while i < len(command):
        if command[i] == quote:
            return i
        i += 2 if quote == '"' and command[i] == "\\" else 1
    return len(command)


def _unquote(text: str, quote: str) -> str:
    return text if quote == "'" else re.sub(r"\\([\\\"$`])", r"\1", text)


def _skip_redirection(command: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """Index after a redirection operator and its target; records heredoc delimiters."""
    n = len(command)
    start = i
    while i < n and command[i] in "<>&|-":
        i += 1
    op = command[start:i]
    if op.endswith("&") and i < n and (command[i].isdigit() or command[i] == "-"):
        return i + 1  # ``2>&1``, ``>&-``
    while i < n and command[i] in " \t":
        i += 1
    target_start = i
    while i < n and command[i] not in " \t\n;|&()<>":
        if command[i] in "'\"":
            i = _closing_quote(command, i)
        i += 1
    if op.startswith("<<") and not op.startswith("<<<"):
        delimiter = re.sub(r"[\"'\\]", "", command[target_start:i])
        heredocs.append((delimiter, op.startswith("<<-")))
    return i


def _skip_heredocs(command: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """Index after the bodies of the pending heredocs, which start at ``i``."""
    for delimiter, strip_tabs in heredocs:
        while i < len(command):
            end = command.find("\n", i)
            end = len(command) if end < 0 else end
            line = command[i:end]
            i = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return min(i, len(command))


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1].lower()


def _skip_options(words: list[str], i: int) -> int:
    """Index of the first operand at or after ``i`` (options and their values skipped)."""
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        i += 2 if words[i] in _VALUE_OPTIONS else 1
    if i < len(words) and words[i] == "--":
        i += 1
    return i


def _runner_of(words: list[str], i: int) -> str | None:
    """The runner of the simple command ``words[i:]``."""
    while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in _KEYWORDS):
        i += 1
    if i >= len(words):
        return None
    name = _base(words[i])
    if name in _PREFIXES:
        i = _skip_options(words, i + 1)
        if name == "timeout" and i < len(words):
            i += 1  # the duration
        return _runner_of(words, i)
    if name in _RUN_VERBS:
        j = _skip_options(words, i + 1)
        if j < len(words) and words[j] == _RUN_VERBS[name]:
            return _runner_of(words, _skip_options(words, j + 1))
        return None
    if name in _DIRECT_PREFIXES:
        return _runner_of(words, _skip_options(words, i + 1))
    if any(w in _NOT_A_RUN for w in words[i + 1 :]):
        return None
    return _program_runner(name, words, i)


def _program_runner(name: str, words: list[str], i: int) -> str | None:
    if name in _DIRECT:
        return _DIRECT[name]
    if name in ("sh", "bash", "zsh", "dash"):
        return _shell_runner(words, i)
    if name.startswith("python") or name == "coverage":
        return _python_runner(words, i)
    operands = _operands(words, i + 1)
    if not operands:
        return None
    return _subcommand_runner(name, operands, words)


def _shell_runner(words: list[str], i: int) -> str | None:
    """The runner of ``bash -c 'script'`` / ``bash -lc 'script'``."""
    for j in range(i + 1, len(words) - 1):
        flag = words[j]
        if not flag.startswith("-") or flag.startswith("--"):
            return None
        if "c" in flag:
            return test_runner(words[j + 1])
    return None


def _operands(words: list[str], i: int) -> list[str]:
    """The non-option words after ``i`` (skipping the values of known options)."""
    out: list[str] = []
    while i < len(words):
        j = _skip_options(words, i)
        if j >= len(words):
            break
        out.append(words[j])
        i = j + 1
    return out


def _python_runner(words: list[str], i: int) -> str | None:
    rest = words[i + 1 :]
    if "-m" in rest:
        m = rest.index("-m")
        return _MODULES.get(rest[m + 1]) if m + 1 < len(rest) else None
    if len(rest) >= 2 and _base(rest[0]) == "manage.py" and rest[1] == "test":
        return "unittest"
    return None


def _is_test_name(name: str, *, check: bool = False) -> bool:
    name = name.lower()
    if check and name == "check":
        return True
    return name in ("test", "tests") or (
        name.startswith("test") and name[4:5] in (":", "-", "_", "")
    )


def _subcommand_runner(name: str, ops: list[str], words: list[str]) -> str | None:
    sub = ops[0]
    if name in ("npm", "pnpm", "yarn", "bun"):
        return _package_script_runner(name, ops, words)
    if name in ("go", "deno", "dotnet") and sub == "test":
        return name
    if name == "cargo":
        sub = ops[1] if sub.startswith("+") and len(ops) > 1 else sub
        return "cargo" if sub in ("test", "t") else "nextest" if sub == "nextest" else None
    if name in ("make", "gmake", "just"):
        hit = any(_is_test_name(t, check=True) for t in ops if "=" not in t)
        return ("just" if name == "just" else "make") if hit else None
    if name in ("mvn", "mvnw"):
        return "maven" if any(t in ("test", "verify") for t in ops) else None
    if name in ("gradle", "gradlew"):
        hit = any(t.rsplit(":", 1)[-1] in ("test", "check") for t in ops)
        return "gradle" if hit else None
    if name == "php" and len(ops) >= 2 and _base(sub) == "artisan" and ops[1] == "test":
        return "phpunit"
    return None


def _package_script_runner(name: str, ops: list[str], words: list[str]) -> str | None:
    sub = ops[0]
    if name == "bun" and sub == "test":
        return "bun"
    if sub in ("test", "t", "tst") or (name != "npm" and _is_test_name(sub)):
        return name
    if sub in ("run", "run-script") and len(ops) > 1 and _is_test_name(ops[1]):
        return name
    if sub in ("exec", "dlx", "x"):
        start = words.index(sub) + 1
        return _runner_of(words, _skip_options(words, start))
    if name != "npm" and _base(sub) in _DIRECT:
        return _DIRECT[_base(sub)]  # ``yarn jest``, ``pnpm vitest run``
    return None


# --------------------------------------------------------------------------------------
# Summary parsing
# --------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_Found = tuple[int, TestCounts]  # (end offset of the summary in the text, counts)

# Every pattern that is searched for starts with a literal, so that the regex engine can
# skip through the text as fast as a substring search; the line-start conditions are
# checked afterwards.  Summaries that start with a number (pytest, mocha, rspec, bun) are
# found through a literal anchor inside them, then matched from the start of their line.
_PYTEST_ANCHOR = re.compile(r" in [\d.]+ ?s")
_PYTEST = re.compile(r"[ \t=]*((?:\d+ [a-z]+, )*\d+ [a-z]+|no tests ran) in [\d.]+ ?s(?:econds)?\b")
_PYTEST_WORDS = {
    "passed": "p",
    "xpassed": "p",
    "failed": "f",
    "error": "f",
    "errors": "f",
    "skipped": "s",
    "xfailed": "s",
    "deselected": "",
    "warning": "",
    "warnings": "",
    "rerun": "",
}
_ITEM = re.compile(r"(\d+) ([a-z]+(?: out)?)")
_UNITTEST = re.compile(
    r"Ran (\d+) tests? in [\d.]+s[ \t]*\n(?:[ \t]*\n)*(OK|FAILED|NO TESTS RAN)"
    r"(?:[ \t]+\(([^)\n]*)\))?"
)
_UNITTEST_ITEM = re.compile(r"([a-z ]+)=(\d+)")
_JEST = re.compile(r"Tests:[ \t]+(\d+ [a-z][^\n]*?\d+ total)")
_VITEST = re.compile(r"Tests[ \t]+(\d+ [a-z][^\n(]*?)[ \t]*\((\d+)\)")
_MOCHA_ANCHOR = re.compile(r" passing \(")
_MOCHA = re.compile(
    r"[ \t]*(\d+) passing \([^)\n]*\)[ \t]*(?:\n[ \t]*(\d+) pending[ \t]*)?"
    r"(?:\n[ \t]*(\d+) failing[ \t]*)?(?![^\n])"
)
_GO_TEST = re.compile(r"--- (PASS|FAIL|SKIP): ")
_GO_DURATION = r"(?:[\d.]+m?s\b|\(cached\)|\[(?:build|setup) failed\])"
_GO_OK = re.compile(r"ok [ \t]*\S+[ \t]+" + _GO_DURATION)
_GO_FAIL = re.compile(r"FAIL[ \t]+\S+[ \t]+" + _GO_DURATION)
_CARGO = re.compile(r"test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed(?:; (\d+) ignored)?")
_NEXTEST = re.compile(r"Summary \[[^\]\n]*\][ \t]+\d+ tests? run: ([^\n]*)")
_NEXTEST_ITEM = re.compile(r"(\d+) (passed|failed|exec failed|skipped|timed out)\b")
_RSPEC_ANCHOR = re.compile(r" examples?, \d+ failure")
_RSPEC = re.compile(
    r"(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?"
    r"(?:, (\d+) errors? occurred outside of examples)?"
)
_PHPUNIT_OK = re.compile(r"OK \((\d+) tests?, \d+ assertions?\)")
_PHPUNIT = re.compile(r"Tests: (\d+), Assertions: \d+((?:, [A-Za-z ]+: \d+)*)\.")
_PHPUNIT_ITEM = re.compile(r", ([A-Za-z ]+): (\d+)")
_DENO_OK = re.compile(r"ok \| (\d+ passed[^\n]*)")
_DENO_FAILED = re.compile(r"FAILED \| (\d+ passed[^\n]*)")
_BUN_ANCHOR = re.compile(r" fail[ \t]*(?![^\n])")
_BUN = re.compile(r"^[ \t]*(\d+) (pass|fail|skip|todo)[ \t]*$", re.M)
_MAVEN = re.compile(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)")
_DOTNET = re.compile(r"Failed:\s+(\d+),\s+Passed:\s+(\d+),\s+Skipped:\s+(\d+)")
_DOTNET_SUMMARY = re.compile(
    r"Test summary: total: \d+, failed: (\d+), succeeded: (\d+), skipped: (\d+)"
)


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _at_line_start(text: str, m: re.Match[str], lead: str) -> bool:
    """True when only characters of ``lead`` precede the match on its line."""
    start = m.start()
    return not text[_line_start(text, start) : start].strip(lead)


def _all(pattern: re.Pattern[str], text: str, lead: str = " \t") -> list[re.Match[str]]:
    return [m for m in pattern.finditer(text) if _at_line_start(text, m, lead)]


def _last(pattern: re.Pattern[str], text: str, lead: str = " \t") -> re.Match[str] | None:
    for m in reversed(list(pattern.finditer(text))):
        if _at_line_start(text, m, lead):
            return m
    return None


def _last_line(anchor: re.Pattern[str], line: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of ``line`` from the start of a line, holding a match of ``anchor``."""
    for hit in reversed(list(anchor.finditer(text))):
        m = line.match(text, _line_start(text, hit.start()))
        if m is not None and m.end() >= hit.end():
            return m
    return None


def _pytest(text: str) -> _Found | None:
    m = _last_line(_PYTEST_ANCHOR, _PYTEST, text)
    if m is None:
        return None
    counts = {"p": 0, "f": 0, "s": 0, "": 0}
    if m.group(1) != "no tests ran":
        for number, word in _ITEM.findall(m.group(1)):
            if word not in _PYTEST_WORDS:
                return None
            counts[_PYTEST_WORDS[word]] += int(number)
    return m.end(), TestCounts("pytest", counts["p"], counts["f"], counts["s"])


def _unittest(text: str) -> _Found | None:
    m = _last(_UNITTEST, text, "")
    if m is None:
        return None
    details = {k.strip(): int(v) for k, v in _UNITTEST_ITEM.findall(m.group(3) or "")}
    failed = details.get("failures", 0) + details.get("errors", 0)
    failed += details.get("unexpected successes", 0)
    skipped = details.get("skipped", 0) + details.get("expected failures", 0)
    passed = max(int(m.group(1)) - failed - skipped, 0)
    return m.end(), TestCounts("unittest", passed, failed, skipped)


def _items(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for number, word in _ITEM.findall(text):
        out[word] = out.get(word, 0) + int(number)
    return out


def _jest(text: str) -> _Found | None:
    m = _last(_JEST, text)
    if m is None:
        return None
    c = _items(m.group(1))
    skipped = c.get("skipped", 0) + c.get("todo", 0) + c.get("pending", 0)
    return m.end(), TestCounts("jest", c.get("passed", 0), c.get("failed", 0), skipped)


def _vitest(text: str) -> _Found | None:
    m = _last(_VITEST, text)
    if m is None:
        return None
    c = _items(m.group(1))
    skipped = c.get("skipped", 0) + c.get("todo", 0)
    return m.end(), TestCounts("vitest", c.get("passed", 0), c.get("failed", 0), skipped)


def _mocha(text: str) -> _Found | None:
    m = _last_line(_MOCHA_ANCHOR, _MOCHA, text)
    if m is None:
        return None
    passed, pending, failing = (int(g or 0) for g in m.groups())
    return m.end(), TestCounts("mocha", passed, failing, pending)


def _go(text: str) -> _Found | None:
    if "=== RUN" in text or "--- PASS: " in text:
        tests = _all(_GO_TEST, text, "")
        kinds = [t.group(1) for t in tests]
    else:
        tests = sorted(_all(_GO_OK, text, "") + _all(_GO_FAIL, text, ""), key=lambda m: m.end())
        kinds = ["PASS" if t.re is _GO_OK else "FAIL" for t in tests]
    if not tests:
        return None
    counts = TestCounts("go", kinds.count("PASS"), kinds.count("FAIL"), kinds.count("SKIP"))
    return tests[-1].end(), counts


def _cargo(text: str) -> _Found | None:
    lines = _all(_CARGO, text)
    if not lines:
        return None
    passed = sum(int(m.group(1)) for m in lines)
    failed = sum(int(m.group(2)) for m in lines)
    ignored = sum(int(m.group(3) or 0) for m in lines)
    return lines[-1].end(), TestCounts("cargo", passed, failed, ignored)


def _nextest(text: str) -> _Found | None:
    m = _last(_NEXTEST, text)
    if m is None:
        return None
    c: dict[str, int] = {}
    for number, word in _NEXTEST_ITEM.findall(m.group(1)):
        key = "skipped" if word == "skipped" else "passed" if word == "passed" else "failed"
        c[key] = c.get(key, 0) + int(number)
    counts = TestCounts("nextest", c.get("passed", 0), c.get("failed", 0), c.get("skipped", 0))
    return m.end(), counts


def _rspec(text: str) -> _Found | None:
    m = _last_line(_RSPEC_ANCHOR, _RSPEC, text)
    if m is None:
        return None
    examples, failures, pending, outside = (int(g or 0) for g in m.groups())
    passed = max(examples - failures - pending, 0)
    return m.end(), TestCounts("rspec", passed, failures + outside, pending)


def _phpunit(text: str) -> _Found | None:
    ok, full = _last(_PHPUNIT_OK, text, ""), _last(_PHPUNIT, text, "")
    if ok is not None and (full is None or ok.end() > full.end()):
        return ok.end(), TestCounts("phpunit", int(ok.group(1)), 0, 0)
    if full is None:
        return None
    c = {k.strip(): int(v) for k, v in _PHPUNIT_ITEM.findall(full.group(2))}
    failed = c.get("Errors", 0) + c.get("Failures", 0)
    skipped = c.get("Skipped", 0) + c.get("Incomplete", 0)
    passed = max(int(full.group(1)) - failed - skipped, 0)
    return full.end(), TestCounts("phpunit", passed, failed, skipped)


def _deno(text: str) -> _Found | None:
    found = [m for m in (_last(_DENO_OK, text, ""), _last(_DENO_FAILED, text, "")) if m]
    if not found:
        return None
    m = max(found, key=lambda m: m.end())
    c = _items(re.sub(r"\(\d+ steps?\)", "", m.group(1)))
    counts = TestCounts("deno", c.get("passed", 0), c.get("failed", 0), c.get("ignored", 0))
    return m.end(), counts


def _bun(text: str) -> _Found | None:
    for hit in reversed(list(_BUN_ANCHOR.finditer(text))):
        # The summary block is a few adjacent ``N pass`` / ``N fail`` ... lines.
        start = _line_start(text, max(_line_start(text, hit.start()) - 200, 0))
        block: list[re.Match[str]] = []
        for m in _BUN.finditer(text, start, min(hit.end() + 200, len(text))):
            block = [*block, m] if block and m.start() == block[-1].end() + 1 else [m]
            if m.end() >= hit.end() and m.group(2) == "fail":
                break
        words = {m.group(2): int(m.group(1)) for m in block}
        if "pass" in words and "fail" in words:
            skipped = words.get("skip", 0) + words.get("todo", 0)
            return block[-1].end(), TestCounts("bun", words["pass"], words["fail"], skipped)
    return None


def _maven(text: str) -> _Found | None:
    m = _last(_MAVEN, text, " \t[]ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    if m is None:
        return None
    run, failures, errors, skipped = (int(g) for g in m.groups())
    failed = failures + errors
    return m.end(), TestCounts("maven", max(run - failed - skipped, 0), failed, skipped)


def _dotnet(text: str) -> _Found | None:
    summary = _last(_DOTNET_SUMMARY, text)
    lines = list(_DOTNET.finditer(text))
    if summary is not None and (not lines or summary.end() > lines[-1].end()):
        failed, passed, skipped = (int(g) for g in summary.groups())
        return summary.end(), TestCounts("dotnet", passed, failed, skipped)
    if not lines:
        return None
    failed, passed, skipped = (sum(int(m.group(k)) for m in lines) for k in (1, 2, 3))
    return lines[-1].end(), TestCounts("dotnet", passed, failed, skipped)


_FORMATS: dict[str, Callable[[str], _Found | None]] = {
    "pytest": _pytest,
    "unittest": _unittest,
    "jest": _jest,
    "vitest": _vitest,
    "mocha": _mocha,
    "go": _go,
    "cargo": _cargo,
    "nextest": _nextest,
    "rspec": _rspec,
    "phpunit": _phpunit,
    "deno": _deno,
    "bun": _bun,
    "maven": _maven,
    "dotnet": _dotnet,
}
# At least one of these is in every summary above (the cheap first test).
_MARKERS: tuple[str, ...] = (
    "pass",
    "Pass",
    "fail",
    "FAIL",
    "error",
    "skip",
    "Test",
    "Ran ",
    "--- ",
    "ok ",
)
_MARKERS += ("OK (", "example", "no tests ran", "deselected")
# The formats a runner from test_runner prints, most specific first.
_RUNNER_FORMATS = {name: (name,) for name in _FORMATS} | {
    "cargo": ("nextest", "cargo"),
    "nextest": ("nextest", "cargo"),
}


def parse_counts(output: str, runner: str | None = None) -> TestCounts | None:
    """Counts parsed from a runner's summary output, or None when no summary is present.

    ``runner`` (a :func:`test_runner` name) puts that runner's formats first; wrappers such
    as ``npm`` or ``make`` and unknown names fall back to trying every format.  Only the
    last :data:`TAIL_CHARS` characters are read.
    """
    tail = output[-TAIL_CHARS:]
    if not any(marker in tail for marker in _MARKERS):
        return None
    if "\x1b" in tail:
        tail = _ANSI.sub("", tail)
    if "\r" in tail:
        tail = tail.replace("\r\n", "\n").replace("\r", "\n")
    for name in _RUNNER_FORMATS.get(runner or "", ()):
        found = _FORMATS[name](tail)
        if found is not None:
            return found[1]
    best: _Found | None = None
    for parse in _FORMATS.values():
        found = parse(tail)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    return None if best is None else best[1]

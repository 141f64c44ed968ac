"""Which test runner a shell command invokes, read from the command line alone.

Agents run test suites constantly; :func:`test_runner` reads a shell command line --
usually compound, such as ``cd pkg && FOO=1 timeout 60 uv run pytest -x 2>&1 | tail -20``
-- and names the test runner it invokes, or None.  Pure: no I/O, stdlib only.  The counts
that run printed are :func:`helixd.core.testruns.parse_counts`'s job.

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
Wrappers print whatever the underlying runner prints, so
:func:`helixd.core.testruns.parse_counts` detects the format from the output for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["test_runner"]


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

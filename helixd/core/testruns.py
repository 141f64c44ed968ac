"""Test runs in shell tool calls: the counts a test runner printed.

Agents run test suites constantly, and "did the tests pass, and how many" is one of the most
useful facts a session memory can keep.  :func:`parse_counts` reads a runner's output and
returns the passed / failed / skipped counts of its *last* summary, or None when no summary
is present.  Pure: no I/O, stdlib only.  Which runner a command invokes is
:func:`helixd.core.testcommands.test_runner`'s job.

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
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TAIL_CHARS", "TestCounts", "parse_counts"]

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
# The formats a runner from testcommands.test_runner prints, most specific first.
_RUNNER_FORMATS = {name: (name,) for name in _FORMATS} | {
    "cargo": ("nextest", "cargo"),
    "nextest": ("nextest", "cargo"),
}


def parse_counts(output: str, runner: str | None = None) -> TestCounts | None:
    """Counts parsed from a runner's summary output, or None when no summary is present.

    ``runner`` (a :func:`helixd.core.testcommands.test_runner` name) puts that runner's formats
    first; wrappers such as ``npm`` or ``make`` and unknown names fall back to trying every
    format.  Only the last :data:`TAIL_CHARS` characters are read.
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

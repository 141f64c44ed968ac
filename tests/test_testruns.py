"""helixd.core.testruns: test-runner recognition and summary counts.

Real outputs and commands come from the shared corpus (see
``tests/fixtures/testruns/README.md``); formats the corpus does not hold are tested with
canonical outputs written here and marked "canonical format, not from the corpus".
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from helixd.core import testcommands
from helixd.core.testruns import TAIL_CHARS, TestCounts, parse_counts

FIXTURES = Path(__file__).parent / "fixtures" / "testruns"


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- real outputs from the corpus ---------------------------------------------------------

# Expected counts were read by hand from each output's last summary line and, where the
# progress dots are complete, cross-checked against them (e.g. 112 passed = 72 + 40 dots;
# 23 passed = 1+1+3+5+3+4+6 dots; 383 + 3 = "collected 386 items").
REAL = [
    ("pytest_v_x_1failed_7passed.txt", TestCounts("pytest", 7, 1, 0)),
    ("pytest_v_x_1failed_7passed_rerun.txt", TestCounts("pytest", 7, 1, 0)),
    ("pytest_x_1failed_112passed.txt", TestCounts("pytest", 112, 1, 0)),
    ("pytest_v_9passed.txt", TestCounts("pytest", 9, 0, 0)),
    ("pytest_v_3failed_383passed.txt", TestCounts("pytest", 383, 3, 0)),
    ("pytest_v_23passed.txt", TestCounts("pytest", 23, 0, 0)),
    ("pytest_v_1failed_22passed.txt", TestCounts("pytest", 22, 1, 0)),
]


@pytest.mark.parametrize(("name", "expected"), REAL, ids=[n for n, _ in REAL])
def test_real_pytest_outputs(name: str, expected: TestCounts) -> None:
    output = _fixture(name)
    assert parse_counts(output, "pytest") == expected
    assert parse_counts(output) == expected  # detected without the hint
    assert parse_counts(output, "npm") == expected  # a wrapper falls back to detection


@pytest.mark.parametrize("name", ["pytest_usage_error.txt", "ruff_all_checks_passed.txt"])
def test_real_outputs_without_a_summary(name: str) -> None:
    # A pytest usage error, and ruff's "All checks passed!": no test summary in either.
    assert parse_counts(_fixture(name)) is None
    assert parse_counts(_fixture(name), "pytest") is None


def test_real_formatter_output_is_not_a_summary() -> None:
    # Verbatim tool result of `uv run ruff format ...` in
    # claude/dagster-io__erk/a5c478e1-0d31-46d4-9fd6-3b6b203b3752.jsonl (MIT).
    assert parse_counts("1 file reformatted, 1 file left unchanged") is None


def test_real_summary_survives_ansi_colour() -> None:
    # The real 9-passed output, coloured the way pytest colours a terminal summary.
    plain = _fixture("pytest_v_9passed.txt")
    rule = "=" * 30
    coloured = plain.replace(
        f"{rule} 9 passed in 0.38s {rule}",
        f"\x1b[32m{rule} \x1b[32m\x1b[1m9 passed\x1b[0m"
        f"\x1b[32m in 0.38s\x1b[0m\x1b[32m {rule}\x1b[0m",
    )
    assert coloured != plain
    assert parse_counts(coloured) == TestCounts("pytest", 9, 0, 0)


def test_the_last_summary_wins() -> None:
    first, second = _fixture("pytest_v_3failed_383passed.txt"), _fixture("pytest_v_9passed.txt")
    assert parse_counts(first + "\n" + second) == TestCounts("pytest", 9, 0, 0)
    assert parse_counts(second + "\n" + first) == TestCounts("pytest", 383, 3, 0)


def test_only_the_tail_is_read() -> None:
    summary = _fixture("pytest_v_9passed.txt")
    noise = "x" * 99 + "\n"
    before = noise * 10_000 + summary  # 1 MB of noise, summary at the end
    assert parse_counts(before) == TestCounts("pytest", 9, 0, 0)
    after = summary + noise * (TAIL_CHARS // len(noise) + 1)  # summary beyond the tail
    assert parse_counts(after) is None
    within = summary + noise * (TAIL_CHARS // len(noise) // 2)
    assert parse_counts(within) == TestCounts("pytest", 9, 0, 0)


# --- pytest forms (canonical format, not from the corpus) ----------------------------------

PYTEST_FORMS = [
    (
        "===== 3 failed, 120 passed, 2 skipped, 1 xfailed, 1 error in 4.56s =====",
        TestCounts("pytest", 120, 4, 3),
    ),
    ("5 passed in 0.1s", TestCounts("pytest", 5, 0, 0)),
    ("12 passed, 1 warning in 0.5s", TestCounts("pytest", 12, 0, 0)),
    ("no tests ran in 0.01s", TestCounts("pytest", 0, 0, 0)),
    ("============ no tests ran in 0.01s ============", TestCounts("pytest", 0, 0, 0)),
    ("== 1 failed, 2 passed, 1 xpassed, 3 deselected in 1.00s ==", TestCounts("pytest", 3, 1, 0)),
    ("===== 2 errors in 0.30s =====", TestCounts("pytest", 0, 2, 0)),
    ("====== 3 failed, 383 passed in 42.11s (0:00:42) ======", TestCounts("pytest", 383, 3, 0)),
    ("7 passed in 0.12 seconds", TestCounts("pytest", 7, 0, 0)),  # pytest < 5
]


@pytest.mark.parametrize(("line", "expected"), PYTEST_FORMS)
def test_pytest_summary_forms(line: str, expected: TestCounts) -> None:
    output = "tests/test_x.py ....\n" + line + "\n"
    assert parse_counts(output, "pytest") == expected
    assert parse_counts(output) == expected


@pytest.mark.parametrize(
    "text",
    [
        "pytest passed: 7 passed in 1.91s",  # prose, not at the start of a line
        "Processed 3 files in 0.2s",
        "3 files in 0.2s",  # not pytest's vocabulary
        "Finished in 0.5 seconds",
        "error: could not compile `calc`",
        "",
    ],
)
def test_no_summary(text: str) -> None:
    assert parse_counts(text) is None


# --- other runners (canonical format, not from the corpus) --------------------------------

UNITTEST_FAILED = """\
..s.F.E.E...
======================================================================
ERROR: test_load (test_store.StoreTest.test_load)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "test_store.py", line 9, in test_load
KeyError: 'x'

----------------------------------------------------------------------
Ran 12 tests in 0.003s

FAILED (failures=1, errors=2, skipped=1)
"""

JEST_PLAIN = """\
PASS src/a.test.ts
FAIL src/b.test.ts
  ● b › works

    expect(received).toBe(expected)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 2 skipped, 3 todo, 10 passed, 16 total
Snapshots:   0 total
Time:        1.234 s
Ran all test suites.
"""
# Coloured as jest colours a terminal.
JEST = (
    JEST_PLAIN.replace("Tests:", "\x1b[1mTests:\x1b[22m")
    .replace("1 failed", "\x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m")
    .replace("10 passed", "\x1b[1m\x1b[32m10 passed\x1b[39m\x1b[22m")
)

VITEST = """\
 ✓ src/a.test.ts (3 tests) 5ms
 ❯ src/b.test.ts (43 tests | 2 failed) 7ms

 Test Files  1 failed | 1 passed (2)
      Tests  2 failed | 40 passed | 1 skipped (43)
   Start at  10:00:00
   Duration  1.20s (transform 20ms, setup 0ms, collect 30ms, tests 12ms)
"""

MOCHA = """\
  calc
    ✓ adds
    1) subtracts
    - multiplies


  12 passing (45ms)
  1 pending
  2 failing

  1) calc
       subtracts:
     AssertionError [ERR_ASSERTION]: 1 == 2
"""

GO_VERBOSE = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSub
=== RUN   TestSub/neg
    sub_test.go:12: wrong sign
=== RUN   TestSub/pos
--- FAIL: TestSub (0.00s)
    --- FAIL: TestSub/neg (0.00s)
    --- PASS: TestSub/pos (0.00s)
=== RUN   TestSkip
    skip_test.go:5: not on CI
--- SKIP: TestSkip (0.00s)
FAIL
FAIL\texample.com/calc\t0.004s
=== RUN   TestTrim
--- PASS: TestTrim (0.00s)
PASS
ok  \texample.com/util\t0.002s
FAIL
"""

GO_PACKAGES = """\
--- FAIL: TestSub (0.00s)
    sub_test.go:12: wrong sign
FAIL
FAIL\texample.com/calc\t0.004s
ok  \texample.com/util\t(cached)
?   \texample.com/cmd\t[no test files]
ok  \texample.com/web\t0.120s\tcoverage: 71.2% of statements
FAIL
"""

CARGO = """\
   Compiling calc v0.1.0 (/work/calc)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.52s
     Running unittests src/lib.rs (target/debug/deps/calc-1a2b3c)

running 3 tests
test tests::adds ... ok
test tests::subtracts ... FAILED
test tests::slow ... ignored

failures:
    tests::subtracts

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/integration.rs (target/debug/deps/integration-4d5e6f)

running 2 tests
test parses ... ok
test renders ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

   Doc-tests calc

running 1 test
test src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.15s

error: 1 target failed:
    `-p calc --lib`
"""

NEXTEST = """\
    Starting 4 tests across 2 binaries (1 test skipped)
        PASS [   0.004s] calc tests::adds
        FAIL [   0.005s] calc tests::subtracts
──── STDOUT:             calc tests::subtracts

running 1 test
test tests::subtracts ... FAILED

failures:
    tests::subtracts

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s

        PASS [   0.006s] calc tests::parses
        PASS [   0.007s] calc tests::renders
────────────
     Summary [   0.021s] 4 tests run: 3 passed, 1 failed, 1 skipped
"""

RSPEC = """\
..F*.F....

Failures:

  1) Calc adds
     Failure/Error: expect(add(1, 1)).to eq(3)

Finished in 0.1234 seconds (files took 0.5 seconds to load)
10 examples, 2 failures, 1 pending

Failed examples:

rspec ./spec/calc_spec.rb:5 # Calc adds
"""

PHPUNIT_FAILED = """\
PHPUnit 10.5.0 by Sebastian Bergmann and contributors.

..F.S                                                               5 / 5 (100%)

Time: 00:00.012, Memory: 8.00 MB

There was 1 failure:

1) CalcTest::testSub
Failed asserting that 1 matches expected 2.

FAILURES!
Tests: 5, Assertions: 8, Failures: 1, Skipped: 1.
"""

PHPUNIT_OK = """\
.....                                                               5 / 5 (100%)

Time: 00:00.010, Memory: 8.00 MB

OK (5 tests, 10 assertions)
"""

DENO = """\
running 3 tests from ./calc_test.ts
adds ... ok (2ms)
subtracts ... FAILED (1ms)

 ERRORS

subtracts => ./calc_test.ts:8:6

FAILED | 5 passed | 1 failed | 2 ignored (12ms)

error: Test failed
"""

BUN = """\
calc.test.ts:
✓ adds [0.12ms]
✗ subtracts [0.30ms]

 5 pass
 1 skip
 1 todo
 1 fail
 12 expect() calls
Ran 8 tests across 2 files. [15.00ms]
"""

MAVEN = """\
[INFO] Tests run: 3, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.05 s - in a.CalcTest
[ERROR] Tests run: 4, Failures: 1, Errors: 1, Skipped: 1, Time elapsed: 0.1 s <<< FAILURE!
[INFO]
[INFO] Results:
[INFO]
[ERROR] Tests run: 7, Failures: 1, Errors: 1, Skipped: 1
[INFO]
[INFO] BUILD FAILURE
"""

DOTNET = """\
Failed!  - Failed:     1, Passed:     9, Skipped:     2, Total:    12, Duration: 1 s - A.dll
Passed!  - Failed:     0, Passed:     5, Skipped:     0, Total:     5, Duration: 2 ms - B.dll
"""

# Expected counts are from the summary lines above (hand-written, so hand-checked).
CANONICAL = [
    ("unittest", UNITTEST_FAILED, TestCounts("unittest", 8, 3, 1)),
    (
        "unittest",
        "....s\n---\nRan 5 tests in 0.1s\n\nOK (skipped=2)\n",
        TestCounts("unittest", 3, 0, 2),
    ),
    ("unittest", "Ran 4 tests in 0.001s\n\nOK\n", TestCounts("unittest", 4, 0, 0)),
    ("jest", JEST, TestCounts("jest", 10, 1, 5)),
    ("jest", JEST_PLAIN, TestCounts("jest", 10, 1, 5)),
    ("vitest", VITEST, TestCounts("vitest", 40, 2, 1)),
    ("mocha", MOCHA, TestCounts("mocha", 12, 2, 1)),
    ("mocha", "\n  3 passing (8ms)\n\n", TestCounts("mocha", 3, 0, 0)),
    ("go", GO_VERBOSE, TestCounts("go", 2, 1, 1)),
    ("go", GO_PACKAGES, TestCounts("go", 2, 1, 0)),
    ("cargo", CARGO, TestCounts("cargo", 4, 1, 1)),
    ("nextest", NEXTEST, TestCounts("nextest", 3, 1, 1)),
    ("rspec", RSPEC, TestCounts("rspec", 7, 2, 1)),
    ("rspec", "\n1 example, 0 failures\n", TestCounts("rspec", 1, 0, 0)),
    ("phpunit", PHPUNIT_FAILED, TestCounts("phpunit", 3, 1, 1)),
    ("phpunit", PHPUNIT_OK, TestCounts("phpunit", 5, 0, 0)),
    ("deno", DENO, TestCounts("deno", 5, 1, 2)),
    ("deno", "ok | 2 passed (3 steps) | 0 failed (9ms)\n", TestCounts("deno", 2, 0, 0)),
    ("bun", BUN, TestCounts("bun", 5, 1, 2)),
    ("maven", MAVEN, TestCounts("maven", 4, 2, 1)),
    ("dotnet", DOTNET, TestCounts("dotnet", 14, 1, 2)),
]


@pytest.mark.parametrize(
    ("runner", "output", "expected"),
    CANONICAL,
    ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(CANONICAL)],
)
def test_canonical_formats(runner: str, output: str, expected: TestCounts) -> None:
    # canonical format, not from the corpus
    assert parse_counts(output, runner) == expected
    assert parse_counts(output) == expected
    assert parse_counts(output, "yarn") == expected


def test_cargo_runner_prefers_the_nextest_summary() -> None:
    # canonical format, not from the corpus: nextest echoes libtest's per-test result line
    assert parse_counts(NEXTEST, "cargo") == TestCounts("nextest", 3, 1, 1)


def test_a_given_runner_is_tried_first() -> None:
    # canonical format, not from the corpus: a jest summary followed by a pytest one
    both = JEST + "\n" + PYTEST_FORMS[0][0] + "\n"
    assert parse_counts(both, "jest") == TestCounts("jest", 10, 1, 5)
    assert parse_counts(both) == TestCounts("pytest", 120, 4, 3)  # the later one
    assert parse_counts(both, "go") == TestCounts("pytest", 120, 4, 3)  # go finds nothing


def test_carriage_returns_are_line_breaks() -> None:
    # canonical format, not from the corpus: a progress line redrawn with \r
    output = "running 1/3\rrunning 3/3\r12 passed, 1 skipped in 0.50s\r\n"
    assert parse_counts(output) == TestCounts("pytest", 12, 0, 1)


# --- performance -----------------------------------------------------------------------


def _best_of(runs: int, output: str) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        parse_counts(output)
        best = min(best, time.perf_counter() - start)
    return best


def test_a_megabyte_without_a_summary_is_cheap() -> None:
    # Measured ~0.4 ms (1 MB, no marker) and ~0.6 ms (1 MB of real tool output with
    # "error", "passed" ... but no summary); the bound is loose so that it cannot flake.
    blank = "x" * 1_000_000
    assert _best_of(5, blank) < 0.020
    real = _fixture("pytest_v_3failed_383passed.txt")
    body = re.sub(r"^=+ 3 failed, 383 passed.*$", "", real, flags=re.M)
    assert body != real
    noisy = (body * (1_000_000 // len(body) + 1))[:1_000_000]
    assert parse_counts(noisy) is None
    assert _best_of(5, noisy) < 0.020


# --- test_runner --------------------------------------------------------------------------

COMMANDS = json.loads((FIXTURES / "commands.json").read_text())


@pytest.mark.parametrize(
    "row", COMMANDS, ids=[f"{i}-{r['runner']}" for i, r in enumerate(COMMANDS)]
)
def test_real_commands(row: dict[str, str | None]) -> None:
    command = row["command"]
    assert command is not None
    assert testcommands.test_runner(command) == row["runner"]


RUNNERS = [
    ("cd foo && uv run pytest -x tests/ 2>&1 | tail -20", "pytest"),
    ("source .venv/bin/activate; pytest", "pytest"),
    ("FOO=1 pytest", "pytest"),
    ("timeout 60 pytest -q", "pytest"),
    ("timeout -s KILL 60 pytest -q", "pytest"),
    ("py.test tests", "pytest"),
    (".venv/bin/pytest -q", "pytest"),
    ("python -m pytest -q", "pytest"),
    ("python3 -m pytest tests/ -k slow", "pytest"),
    ("poetry run pytest", "pytest"),
    ("uv run -- pytest", "pytest"),
    ("coverage run -m pytest", "pytest"),
    ("bash -lc 'cd repo && pytest -q'", "pytest"),
    ("(cd sub && pytest)", "pytest"),
    ("env PYTHONPATH=. pytest", "pytest"),
    ("sudo -u ci pytest", "pytest"),
    ("if pytest -q; then echo ok; fi", "pytest"),
    ("tox -e py311", "tox"),
    ("nox -s tests", "nox"),
    ("python -m unittest discover -s tests", "unittest"),
    ("python manage.py test", "unittest"),
    ("jest --ci", "jest"),
    ("npx jest src/", "jest"),
    ("yarn jest --watch=false", "jest"),
    ("vitest run", "vitest"),
    ("npx vitest run", "vitest"),
    ("pnpm vitest", "vitest"),
    ("mocha test/", "mocha"),
    ("npm test", "npm"),
    ("npm run test", "npm"),
    ("npm t", "npm"),
    ("npm test -- --coverage", "npm"),
    ("npm --prefix web test", "npm"),
    ("npm run test:unit", "npm"),
    ("pnpm test", "pnpm"),
    ("pnpm run test", "pnpm"),
    ("pnpm --filter web test", "pnpm"),
    ("yarn test", "yarn"),
    ("bun test", "bun"),
    ("go test ./...", "go"),
    ("time go test -v ./pkg/...", "go"),
    ("cargo test", "cargo"),
    ("cargo +nightly test --workspace", "cargo"),
    ("cargo nextest run", "nextest"),
    ("make test", "make"),
    ("make -C sub -j4 test", "make"),
    ("make check", "make"),
    ("make test-unit", "make"),
    ("just test", "just"),
    ("rspec spec/calc_spec.rb", "rspec"),
    ("bundle exec rspec", "rspec"),
    ("vendor/bin/phpunit", "phpunit"),
    ("php artisan test", "phpunit"),
    ("deno test --allow-read", "deno"),
    ("dotnet test", "dotnet"),
    ("mvn test", "maven"),
    ("./mvnw -q verify", "maven"),
    ("gradle test", "gradle"),
    ("./gradlew :app:test", "gradle"),
    # not test runs
    ("pip install pytest", None),
    ("uv add --dev pytest", None),
    ("cat pytest.ini", None),
    ("grep -r jest .", None),
    ("ls tests", None),
    ('echo "run go test"', None),
    ("echo pytest", None),
    ("which pytest", None),
    ("pytest --version", None),
    ("npm install --save-dev jest", None),
    ("npm run build", None),
    ("go build ./...", None),
    ("go vet ./...", None),
    ("cargo build --release", None),
    ("make build", None),
    ("make testdata", None),
    ("mvn clean install", None),
    ("python -m pip install pytest", None),
    ("python -c 'import pytest'", None),
    ("git commit -m 'run pytest'", None),
    ("vim tests/test_x.py # then pytest", None),
    ("cat > notes.md <<'EOF'\npytest -q\nEOF", None),
    ("", None),
]


@pytest.mark.parametrize(("command", "expected"), RUNNERS)
def test_runner_table(command: str, expected: str | None) -> None:
    assert testcommands.test_runner(command) == expected


def test_the_first_runner_in_a_compound_command_wins() -> None:
    assert testcommands.test_runner("cargo test && pytest") == "cargo"
    assert testcommands.test_runner("cat <<EOF > x\ngo test\nEOF\npytest -q") == "pytest"

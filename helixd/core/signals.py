"""Signals of one session, derived from its event rows (pure; the analyze pass stores them).

Each signal points at the events it came from (``seq`` within the session):

* **tool calls**: the call, its result (matched by call id), the result's status (success /
  error / rejected by the user / interrupted — also a call left without a result when the
  user stepped in; ``missing`` when no result was recorded at all) and
  the time from call to result;
* **test runs**: a call whose command runs a test suite (or whose output carries a test
  summary), with the passed / failed / skipped counts the adapter read from the output;
* **file operations**: path, operation, lines added / removed and language of each edit, and
  whether the user accepted it (``accepted``: the edit call succeeded; not accepted: the
  user rejected it — a denied Claude permission prompt, a declined Codex patch approval, a
  cancelled Gemini confirmation — or stepped in while it waited; unknown when it failed on
  its own or no result was recorded);
* **errors** (fingerprinted), **retries** (a call repeating a call that failed: same tool,
  same command or path; ``ref_seq`` is the failed call) and **human interventions**.

Rows come from ``helixd.store.facts`` (``SIGNAL_COLUMNS``, in ``seq`` order).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from helixd.core.languages import language_of

SIGNAL_KINDS: Final = (
    "tool_call",
    "tool_result",
    "edit",
    "test_run",
    "error",
    "human_intervention",
)
# The order of the values in each row handed to ``extract``.
SIGNAL_COLUMNS: Final = (
    "seq",
    "ts",
    "kind",
    "tool",
    "call_id",
    "summary",
    "body",
    "is_error",
    "status",
    "test_framework",
    "tests_passed",
    "tests_failed",
    "tests_skipped",
    "lines_added",
    "lines_removed",
)
WRITE_TOOLS: Final = frozenset({"Write", "write_file", "create_file"})

_NOISE = (
    (re.compile(r"(?:/[\w.\-@]+)+/?"), "<path>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"\d+"), "#"),
    (re.compile(r"(['\"`]).*?\1"), "<str>"),
    (re.compile(r"\s+"), " "),
)


def error_fingerprint(message: str) -> str:
    """A fingerprint of the error's first line with numbers, paths, hex ids and quoted
    strings masked, so that the same error with different details groups together."""
    text = message.strip().splitlines()[0] if message.strip() else ""
    norm = text.lower()
    for pattern, repl in _NOISE:
        norm = pattern.sub(repl, norm)
    norm = norm.strip()[:200]
    return hashlib.blake2b(norm.encode(), digest_size=6).hexdigest()


@dataclass(frozen=True, slots=True)
class ToolCall:
    call_seq: int
    result_seq: int | None
    ts: int | None
    tool: str
    target: str
    status: str
    duration_ms: int | None


@dataclass(frozen=True, slots=True)
class TestRun:
    call_seq: int
    result_seq: int | None
    ts: int | None
    command: str
    framework: str | None
    passed: int | None
    failed: int | None
    skipped: int | None
    status: str  # passed / failed / error / interrupted / rejected / missing
    duration_ms: int | None


@dataclass(frozen=True, slots=True)
class FileOperation:
    seq: int
    ts: int | None
    operation: str
    file_path: str
    language: str | None
    lines_added: int
    lines_removed: int
    status: str | None  # the edit call's result status
    accepted: bool | None = None  # see ``accepted_of``


def accepted_of(status: str | None) -> bool | None:
    """Whether the user accepted an edit, from its call's result status: applied (``success``)
    yes; ``rejected`` / ``interrupted`` (the user said no, or stepped in) no; a tool error or
    a missing result is not the user's decision (None)."""
    if status == "success":
        return True
    if status in ("rejected", "interrupted"):
        return False
    return None


@dataclass(frozen=True, slots=True)
class Marker:
    """An error, a retry or a human intervention."""

    kind: str  # error / retry / intervention
    seq: int
    ref_seq: int | None
    tool: str | None
    fingerprint: str | None = None
    sample: str = ""


@dataclass(slots=True)
class Signals:
    tool_calls: list[ToolCall] = field(default_factory=list)
    test_runs: list[TestRun] = field(default_factory=list)
    file_operations: list[FileOperation] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for m in self.markers if m.kind == kind)


def _result_status(row: Sequence[Any]) -> str:
    status = row[8]
    if isinstance(status, str) and status:
        return status
    return "error" if row[7] else "success"  # rows written before statuses existed


def _test_status(result: Sequence[Any] | None) -> str:
    if result is None:
        return "missing"
    status = _result_status(result)
    if status in ("rejected", "interrupted"):
        return status
    failed = result[11]
    if failed:
        return "failed"
    if status == "error":
        return "error" if result[9] is None else "failed"
    return "passed"


def _duration(call_ts: int | None, result: Sequence[Any] | None) -> int | None:
    if result is None or call_ts is None or result[1] is None:
        return None
    return max(int(result[1]) - int(call_ts), 0)


def extract(rows: Sequence[Sequence[Any]]) -> Signals:
    """The signals of one session from its ``SIGNAL_COLUMNS`` rows in ``seq`` order."""
    ex = _Extraction(rows)
    handlers = {
        "tool_call": ex.tool_call,
        "tool_result": ex.tool_result,
        "test_run": ex.test_run,
        "edit": ex.edit,
        "error": ex.error,
        "human_intervention": ex.intervention,
    }
    for row in rows:
        handler = handlers.get(row[2])
        if handler is not None:
            handler(row)
    ex.out.test_runs.sort(key=lambda t: t.call_seq)
    return ex.out


class _Extraction:
    """The walk over one session's rows: what has been seen so far."""

    def __init__(self, rows: Sequence[Sequence[Any]]) -> None:
        self.out = Signals()
        self.results: dict[str, Sequence[Any]] = {}
        for row in rows:
            if row[2] == "tool_result" and row[4] and row[4] not in self.results:
                self.results[row[4]] = row
        self.calls: dict[str, Sequence[Any]] = {}
        self.tested: set[str] = set()
        self.last_call: Sequence[Any] | None = None
        self.failed_call: Sequence[Any] | None = None
        self.unanswered: list[int] = []  # calls without any result since the last intervention

    def result_of(self, row: Sequence[Any]) -> Sequence[Any] | None:
        return self.results.get(row[4]) if row[4] else None

    def call_of(self, row: Sequence[Any]) -> Sequence[Any] | None:
        return self.calls.get(row[4]) if row[4] else None

    def tool_call(self, row: Sequence[Any]) -> None:
        seq, ts, tool, target = row[0], row[1], row[3], row[5] or ""
        result = self.result_of(row)
        if row[4]:
            self.calls[row[4]] = row
        if result is None:
            self.unanswered.append(len(self.out.tool_calls))
        self.out.tool_calls.append(
            ToolCall(
                seq,
                result[0] if result else None,
                ts,
                tool or "?",
                target,
                _result_status(result) if result else "missing",
                _duration(ts, result),
            )
        )
        failed = self.failed_call
        if failed is not None and (tool, target) == (failed[3], failed[5]):
            self.out.markers.append(Marker("retry", seq, failed[0], tool))
        self.failed_call = None
        self.last_call = row

    def tool_result(self, row: Sequence[Any]) -> None:
        # the call this result answers failed: the next call repeating it is a retry (with
        # parallel calls, results come back in any order)
        if _result_status(row) == "error":
            self.failed_call = self.call_of(row) or self.last_call
        call = self.call_of(row) if row[4] else self.last_call
        key = row[4] or f"#{(call or row)[0]}"
        if row[9] is not None and key not in self.tested:
            # a test summary in the output of a call not recognised as a test command (a
            # wrapper script, make): still a test run
            self.tested.add(key)
            self.out.test_runs.append(_test_run(call or row, row, (call or row)[5] or ""))

    def test_run(self, row: Sequence[Any]) -> None:
        # Its call by id; an agent that records no call ids (cursor-agent transcripts)
        # derives the test run right after its call: the last call seen.
        call = self.call_of(row) if row[4] else self.last_call
        key = row[4] or f"#{(call or row)[0]}"
        if key in self.tested:
            return
        self.tested.add(key)
        command = row[6] or row[5] or ""
        self.out.test_runs.append(_test_run(call or row, self.result_of(row), command))

    def edit(self, row: Sequence[Any]) -> None:
        # The adapters put the edited paths in the body, one a line (a patch can touch
        # several; the table keeps one row per edit, so the first).  An edit whose paths are
        # unknown (a redacted patch) names no file: its summary is the tool's name.
        path = next((p for p in (row[6] or "").split("\n") if p.strip()), "")
        if not path and row[5] and row[5] != row[3]:
            path = row[5]  # the body was not kept: the summary names the path
        if not path:
            return
        result = self.result_of(row)
        status = _result_status(result) if result else None
        self.out.file_operations.append(
            FileOperation(
                row[0],
                row[1],
                "write" if row[3] in WRITE_TOOLS else "edit",
                path,
                language_of(path) if path else None,
                int(row[13] or 0),
                int(row[14] or 0),
                status,
                accepted_of(status),
            )
        )

    def error(self, row: Sequence[Any]) -> None:
        message = row[6] or row[5] or ""
        fp = error_fingerprint(message)
        call = self.call_of(row)
        marker = Marker("error", row[0], call[0] if call else None, row[3], fp, message)
        self.out.markers.append(marker)

    def intervention(self, row: Sequence[Any]) -> None:
        self.out.markers.append(Marker("intervention", row[0], None, row[3]))
        # calls left without any result when the user stepped in were interrupted (a Codex
        # turn_aborted, an Esc while a command ran)
        for i in self.unanswered:
            self.out.tool_calls[i] = replace(self.out.tool_calls[i], status="interrupted")
        self.unanswered.clear()


def _test_run(call: Sequence[Any], result: Sequence[Any] | None, command: str) -> TestRun:
    return TestRun(
        call_seq=call[0],
        result_seq=result[0] if result else None,
        ts=call[1],
        command=command,
        framework=result[9] if result else None,
        passed=result[10] if result else None,
        failed=result[11] if result else None,
        skipped=result[12] if result else None,
        status=_test_status(result),
        duration_ms=_duration(call[1], result) if result is not call else None,
    )


def summarize(sig: Signals) -> dict[str, Any]:
    """The digest's view of the signals: counts, not lists (the lists are in the store)."""
    by_status: dict[str, int] = {}
    durations = sorted(c.duration_ms for c in sig.tool_calls if c.duration_ms is not None)
    for call in sig.tool_calls:
        by_status[call.status] = by_status.get(call.status, 0) + 1
    runs: dict[str, int] = {}
    for run in sig.test_runs:
        runs[run.status] = runs.get(run.status, 0) + 1
    last = sig.test_runs[-1] if sig.test_runs else None
    languages: dict[str, int] = {}
    paths: set[str] = set()
    decided = [op.accepted for op in sig.file_operations if op.accepted is not None]
    for op in sig.file_operations:
        paths.add(op.file_path)
        if op.language:
            languages[op.language] = languages.get(op.language, 0) + 1
    return {
        "tool_calls": {
            "total": len(sig.tool_calls),
            "by_status": dict(sorted(by_status.items())),
            "duration_ms_p50": durations[len(durations) // 2] if durations else None,
            "duration_ms_max": durations[-1] if durations else None,
        },
        "test_runs": {
            "total": len(sig.test_runs),
            "by_status": dict(sorted(runs.items())),
            "last": None
            if last is None
            else {
                "command": last.command[:200],
                "framework": last.framework,
                "status": last.status,
                "passed": last.passed,
                "failed": last.failed,
                "skipped": last.skipped,
                "seq": last.call_seq,
            },
        },
        "files": {
            "operations": len(sig.file_operations),
            "paths": len(paths),
            "lines_added": sum(op.lines_added for op in sig.file_operations),
            "lines_removed": sum(op.lines_removed for op in sig.file_operations),
            "by_language": dict(sorted(languages.items())),
            "accepted": sum(decided),
            "rejected": len(decided) - sum(decided),
        },
    }

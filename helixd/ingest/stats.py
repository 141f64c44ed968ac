"""What one ingest did: the counts ``helixctl ingest`` prints (light: no event loop).

A file Helix would read but cannot (permission denied, not a regular file, a link leading
out of the roots, a directory that cannot be listed…) is never skipped in silence: it is
counted by reason in ``skipped`` and named in ``errors`` (the first ``MAX_NAMED``)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

MAX_NAMED: Final = 50


class IngestStats:
    """The counts of one ingest (a plain class: ``dataclasses`` costs a re-scan ~12 ms of
    imports).  ``more``: a read budget stopped a file before its end (``unfinished``: those
    files); ``skipped_paths``: path -> reason; ``failed``: path -> why it could not be read."""

    __slots__ = (
        "bad_lines",
        "bytes_read",
        "errors",
        "events",
        "failed",
        "files_gone",
        "files_read",
        "files_seen",
        "lines",
        "more",
        "redactions",
        "replaced",
        "seconds",
        "sessions",
        "skipped",
        "skipped_paths",
        "unfinished",
        "unknown_records",
    )

    def __init__(self, files_seen: int = 0, seconds: float = 0.0) -> None:
        self.files_seen = files_seen
        self.files_read = 0
        self.files_gone = 0
        self.bytes_read = 0
        self.lines = 0
        self.events = 0
        self.bad_lines = 0
        self.unknown_records = 0
        self.redactions = 0
        self.replaced = 0
        self.sessions: set[str] = set()
        self.errors: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.skipped_paths: dict[str, str] = {}
        self.failed: dict[str, str] = {}
        self.seconds = seconds
        self.more = False
        self.unfinished: list[str] = []

    def skip(self, path: str, reason: str, message: str) -> None:
        """Count a file that could not be read (``reason``: a key of ``gate.REASONS``), once
        however many times it was met (a companion file is also a session file)."""
        if path in self.skipped_paths:
            return
        self.skipped[reason] += 1
        if len(self.skipped_paths) < 10_000:
            self.skipped_paths[path] = reason
        if len(self.errors) < MAX_NAMED:
            self.errors.append(message)

    def as_dict(self) -> dict[str, Any]:
        mb_s = self.bytes_read / 1e6 / self.seconds if self.seconds else 0.0
        unnamed = sum(self.skipped.values()) - len(self.errors)
        return {
            "files": self.files_seen,
            "files_read": self.files_read,
            "files_gone": self.files_gone,
            "bytes": self.bytes_read,
            "lines": self.lines,
            "sessions": len(self.sessions),
            "events": self.events,
            "malformed_lines": self.bad_lines,
            "unknown_records": self.unknown_records,
            "redactions": self.redactions,
            "replaced_files": self.replaced,
            "skipped": dict(sorted(self.skipped.items())),
            "errors": self.errors + ([f"… and {unnamed} more"] if unnamed > 0 else []),
            "seconds": round(self.seconds, 3),
            "mb_per_s": round(mb_s, 1),
        }

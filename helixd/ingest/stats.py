"""What one ingest did: the counts ``helixctl ingest`` prints (light: no event loop).

A file Helix would read but cannot (permission denied, not a regular file, a link leading
out of the roots, a directory that cannot be listed…) is never skipped in silence: it is
counted by reason in ``skipped`` and named in ``errors`` (the first ``MAX_NAMED``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

MAX_NAMED: Final = 50


@dataclass(slots=True)
class IngestStats:
    files_seen: int = 0
    files_read: int = 0
    files_gone: int = 0
    bytes_read: int = 0
    lines: int = 0
    events: int = 0
    bad_lines: int = 0
    unknown_records: int = 0
    redactions: int = 0
    replaced: int = 0
    sessions: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_paths: dict[str, str] = field(default_factory=dict)  # path -> reason
    failed: dict[str, str] = field(default_factory=dict)  # path -> why it could not be read
    seconds: float = 0.0
    more: bool = False  # a read budget stopped a file before its end
    unfinished: list[str] = field(default_factory=list)  # ... those files

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

"""What one ingest did: the counts ``helixctl ingest`` prints (light: no event loop)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    failed: dict[str, str] = field(default_factory=dict)  # path -> why it could not be read
    seconds: float = 0.0
    more: bool = False  # a read budget stopped a file before its end

    def as_dict(self) -> dict[str, Any]:
        mb_s = self.bytes_read / 1e6 / self.seconds if self.seconds else 0.0
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
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "mb_per_s": round(mb_s, 1),
        }

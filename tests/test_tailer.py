"""Where to resume: the pure decision, and the identity rules behind it."""

from __future__ import annotations

from helixd.core.records import Cursor
from helixd.sources.tailer import fingerprint, resume_offset

HEAD = b'{"type":"user","uuid":"u1"}\n'


def cursor(offset: int, head: bytes = HEAD) -> Cursor:
    return Cursor(
        path="/x.jsonl",
        agent="claude",
        root="/",
        dev=1,
        ino=2,
        size=offset,
        mtime_ns=0,
        offset=offset,
        head_hash=fingerprint(head),
        head_len=len(head),
        generation=0,
        adapter_version=1,
        state={},
    )


def test_new_file_starts_at_zero() -> None:
    assert resume_offset(None, 100, None, b"") == (0, False)


def test_grown_file_resumes_at_the_cursor() -> None:
    assert resume_offset(cursor(28), 60, fingerprint(HEAD), b"\n") == (28, False)


def test_shrunk_file_was_truncated_and_is_reread() -> None:
    assert resume_offset(cursor(28), 10, fingerprint(HEAD), b"") == (0, True)


def test_different_head_means_a_replaced_file() -> None:
    assert resume_offset(cursor(28), 60, fingerprint(b"other"), b"\n") == (0, True)


def test_cursor_not_on_a_record_boundary_means_rewritten() -> None:
    assert resume_offset(cursor(28), 60, fingerprint(HEAD), b"x") == (0, True)


def test_final_line_taken_without_newline_is_a_valid_boundary() -> None:
    assert resume_offset(cursor(28), 60, fingerprint(HEAD), b"}") == (28, False)

"""JSONL framing: complete lines only, the final-line escape, and forgiving decoding."""

from __future__ import annotations

import pytest

from helixd.adapters import jsonl


def test_partial_last_line_is_left_for_the_next_read() -> None:
    lines, consumed = jsonl.frame(b'{"a":1}\n{"b":', at_eof=False)
    assert lines == [(0, b'{"a":1}')]
    assert consumed == 8


def test_partial_last_line_is_left_even_at_eof_when_it_is_not_complete_json() -> None:
    lines, consumed = jsonl.frame(b'{"a":1}\n{"b":', at_eof=True)
    assert consumed == 8 and len(lines) == 1


def test_final_line_without_newline_is_taken_at_eof_when_it_is_a_complete_object() -> None:
    lines, consumed = jsonl.frame(b'{"a":1}\n{"b":2}', at_eof=True)
    assert lines == [(0, b'{"a":1}'), (8, b'{"b":2}')]
    assert consumed == 15


def test_a_newline_appended_later_does_not_duplicate_the_final_line() -> None:
    data = b'{"a":1}\n{"b":2}'
    first, consumed = jsonl.frame(data, at_eof=True)
    second, _ = jsonl.frame((data + b"\n")[consumed:], at_eof=True)
    assert len(first) == 2 and second == []


def test_final_non_object_is_not_taken() -> None:
    assert jsonl.frame(b"[1,2]", at_eof=True) == ([], 0)
    assert jsonl.frame(b"null", at_eof=True) == ([], 0)


def test_blank_lines_and_crlf_are_handled() -> None:
    lines, consumed = jsonl.frame(b'\n  \r\n{"a":1}\r\n\n', at_eof=False)
    assert lines == [(5, b'{"a":1}')]
    assert consumed == 15


def test_invalid_utf8_is_repaired_and_flagged() -> None:
    obj, repaired = jsonl.decode(b'{"a":"caf\xe9"}')
    assert repaired and obj["a"] == "caf\ufffd"


def test_lone_surrogate_escape_is_scrubbed() -> None:
    obj, repaired = jsonl.decode(b'{"a":"x\\ud800y"}')
    assert repaired
    obj["a"].encode("utf-8")  # would raise on a lone surrogate


@pytest.mark.parametrize("line", [b"{not json", b"[1,2]", b'"str"', b"42", b"\xff\xfe"])
def test_unusable_lines_raise_line_error(line: bytes) -> None:
    with pytest.raises(jsonl.LineError):
        jsonl.decode(line)

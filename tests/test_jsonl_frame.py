"""``jsonl.frame`` against a plain reference implementation, on any bytes.

``frame`` is on every adapter's hot path, so it is written for speed (one split, no copy of
the buffer, one ``rstrip`` per line).  The reference below is the obvious version it
replaced; any input must give the same lines, offsets and consumed count.
"""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from helixd.adapters import jsonl


def reference_frame(data: bytes, at_eof: bool) -> tuple[list[tuple[int, bytes]], int]:
    lines: list[tuple[int, bytes]] = []
    end = data.rfind(b"\n")
    consumed = end + 1
    if consumed:
        pos = 0
        for piece in data[:end].split(b"\n"):
            if piece.strip():
                lines.append((pos, piece.rstrip()))
            pos += len(piece) + 1
    if at_eof and consumed < len(data):
        tail = data[consumed:]
        stripped = tail.strip()
        if stripped.startswith(b"{") and stripped.endswith(b"}"):
            try:
                complete = isinstance(orjson.loads(stripped), dict)
            except orjson.JSONDecodeError:
                complete = False
            if complete:
                lines.append((consumed, tail.rstrip()))
                consumed = len(data)
    return lines, consumed


PIECES = [b"\n", b"\r\n", b"\r", b" ", b"\t", b"\x0b", b"\x0c", b"{", b"}", b'"a":1', b"x", b"\xff"]
framed = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)


@given(data=framed | st.binary(max_size=200), at_eof=st.booleans())
@settings(max_examples=400, deadline=None)
def test_frame_equals_the_reference(data: bytes, at_eof: bool) -> None:
    assert jsonl.frame(data, at_eof) == reference_frame(data, at_eof)


@given(data=framed, at_eof=st.booleans())
@settings(max_examples=200, deadline=None)
def test_lines_are_where_their_offsets_say(data: bytes, at_eof: bool) -> None:
    lines, consumed = jsonl.frame(data, at_eof)
    assert consumed == len(data) or data[:consumed].endswith(b"\n") or consumed == 0
    for offset, line in lines:
        assert line and data[offset : offset + len(line)] == line
        assert offset == 0 or data[offset - 1 : offset] == b"\n"
        assert not line[-1:].isspace()


def test_whitespace_only_tail_is_not_taken_at_eof() -> None:
    assert jsonl.frame(b'{"a":1}\n  \r ', at_eof=True) == ([(0, b'{"a":1}')], 8)


def test_tail_with_leading_blanks_keeps_them_like_a_whole_line_would() -> None:
    whole, _ = jsonl.frame(b' {"b":2}\n', at_eof=False)
    early, consumed = jsonl.frame(b' {"b":2}\r', at_eof=True)
    assert whole == early == [(0, b' {"b":2}')] and consumed == 9

"""Pure JSONL framing shared by every line-oriented adapter.

``frame`` splits a byte buffer into complete lines and says how many bytes it consumed.
It never consumes a partial line: the trailing fragment stays for the next read, except
when ``at_eof`` is set and the fragment is a complete JSON object on its own (finished
files without a final newline, formats.md §11.1).  A newline appended later then shows up
as an empty line at the start of the next read, which is skipped, so nothing is duplicated.

``decode`` turns one line into a JSON object with one decoder, orjson, and one behaviour:
what orjson refuses is refused (``NaN``, ``Infinity``, numbers that overflow a double, nesting
deeper than 1024, duplicate-free garbage …), except text that is not valid UTF-8 or holds
lone UTF-16 surrogate escapes: that line is repaired (invalid bytes and lone surrogates
become U+FFFD), parsed again by orjson, and flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from helixd.core.records import BadLine, Parsed

if TYPE_CHECKING:
    from helixd.adapters.base import Chunk


class LineError(ValueError):
    """A complete line that is not a usable JSON object."""


def frame(data: bytes, at_eof: bool) -> tuple[list[tuple[int, bytes]], int]:
    """Return ``([(offset, line_without_newline), ...], consumed)`` for ``data``.

    Offsets are relative to the start of ``data``.  Blank lines (only whitespace) are
    consumed but not returned; trailing whitespace (``\r`` of CRLF files) is cut, so a line
    read whole and the same line taken early at EOF are the same bytes.
    """
    lines: list[tuple[int, bytes]] = []
    consumed = data.rfind(b"\n") + 1  # 0 when there is no newline at all
    if consumed:
        pieces = data.split(b"\n")
        pieces.pop()  # the fragment after the last newline (read again next time)
        append = lines.append
        pos = 0
        for piece in pieces:
            # rstrip returns the piece itself when there is nothing to cut; an empty result
            # means the line was blank (only whitespace).
            line = piece.rstrip()
            if line:
                append((pos, line))
            pos += len(piece) + 1
    if at_eof and consumed < len(data):
        tail = data[consumed:].rstrip()
        if tail and _is_complete_object(tail):
            lines.append((consumed, tail))
            consumed = len(data)
    return lines, consumed


def _is_complete_object(tail: bytes) -> bool:
    stripped = tail.strip()
    if not (stripped.startswith(b"{") and stripped.endswith(b"}")):
        return False
    try:
        return isinstance(orjson.loads(stripped), dict)
    except orjson.JSONDecodeError:
        return False


def decode(line: bytes) -> tuple[dict[str, Any], bool]:
    """Parse one line into a JSON object; returns ``(obj, repaired)``.

    ``repaired`` is true when the line was not valid UTF-8 (or held lone surrogate escapes)
    and was parsed after replacing those with U+FFFD.  Raises ``LineError`` for anything
    else orjson refuses and for a value that is not an object.
    """
    repaired = False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        fixed = _repair(line)
        if fixed is None:
            raise LineError(f"malformed JSON: {exc}") from None
        try:
            obj = orjson.loads(fixed)
        except orjson.JSONDecodeError as again:
            raise LineError(f"malformed JSON: {again}") from None
        repaired = True
    if not isinstance(obj, dict):
        raise LineError(f"not a JSON object but {type(obj).__name__}")
    return obj, repaired


# A JSON escape that matters for surrogates: an escaped backslash (skipped whole, so that
# ``\\ud800`` stays text), or a \uD800-\uDFFF escape with the low half that may follow it.
_SURROGATE_ESCAPE = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _repair(line: bytes) -> bytes | None:
    """``line`` as valid UTF-8 without lone surrogate escapes, or None when it has neither
    problem (then the decoder's refusal stands)."""
    try:
        line.decode("utf-8")
        text = line
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="replace").encode("utf-8")
    if b"\\u" in text:
        text = _SURROGATE_ESCAPE.sub(_lone_to_replacement, text)
    return text if text != line else None


def _lone_to_replacement(m: re.Match[bytes]) -> bytes:
    escape = m.group(0)
    if escape == b"\\\\" or len(escape) == 12:  # an escaped backslash, a surrogate pair
        return escape
    return b"\\ufffd"


def iter_text_blocks(content: Any) -> Iterator[str]:
    """Yield the text pieces of a message ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                yield block
            elif isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    yield text


def whole_document(chunk: Chunk, what: str) -> dict[str, Any] | Parsed:
    """A file rewritten whole (one JSON document): the object, or the ``Parsed`` to return
    at once — nothing consumed while the read has not reached the end or the writer is
    mid-rewrite (the document does not end with ``}`` yet); a finished but unreadable
    document is one bad line, consumed."""
    data = chunk.data
    stripped = data.strip()
    if not stripped or not chunk.at_eof:
        return Parsed(consumed=0, state={})
    try:
        obj, _repaired = decode(stripped)
    except LineError as exc:
        if not stripped.endswith(b"}"):
            return Parsed(consumed=0, state={})  # mid-rewrite: wait for the next version
        bad = BadLine(chunk.base, len(data), f"unreadable {what}: {exc}")
        return Parsed(consumed=len(data), state={}, bad=[bad], lines=1)
    return obj

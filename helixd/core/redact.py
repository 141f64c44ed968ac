"""Pure secret redaction applied to every byte Helix stores (and the hook spool).

Redaction is **length-preserving**: a secret is overwritten in place by a label padded
with ``*`` (``[REDACTED:github-token]*****``), so byte offsets in the stored raw lines stay
equal to the source file's offsets.  A replacement holds no quote, backslash or newline,
and a span never splits a JSON escape (``\\n``, ``\\"``, ``\\u00e9``), so a JSON line stays
valid JSON with the same line breaks.

Speed: Python's regex engine is slow at alternations (about 100 MB/s) and one substring
scan per rule costs ~0.6 ms/MB per rule, so each rule (``helixd.core.secret_rules``) names
the plain substrings every match contains (its triggers) and one Aho-Corasick pass (the
Rust ``ahocorasick_rs``, without holding the GIL) finds them all; a rule's finder then runs
only at each hit.

Tokens inside JSON strings: a secret right after an escape (``\\nghp_…``, ``\\tAKIA…``,
``\\u003cey…``) or a percent-escape (``%20sk-…``) starts a token even though the byte before
it is a letter or digit.

``RedactStream`` masks one long byte stream handed over in pieces (an over-long line is
stored 4 MiB at a time): it holds back the last ``TAIL`` bytes of each piece, so a secret
straddling two pieces is masked as if the line came whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ahocorasick_rs

from helixd.core.secret_rules import RULES, Rule

if TYPE_CHECKING:
    from typing import Final

Masked = tuple[int, int, bytes]  # [start, end) and the rule's label

_TOKEN_BYTES: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_ESCAPE_LETTERS: Final = frozenset(b"nrtbf")
_BACKSLASH: Final = 0x5C


def _index(rules: tuple[Rule, ...]) -> tuple[list[bytes], list[Rule]]:
    owner: dict[bytes, Rule] = {}
    for rule in rules:
        for trigger in rule.triggers:
            if owner.setdefault(trigger, rule) is not rule:
                raise ValueError(f"trigger {trigger!r} belongs to two rules")
    return list(owner), list(owner.values())


_TRIGGERS, _RULE_OF = _index(RULES)
_FINDER: Final = ahocorasick_rs.BytesAhoCorasick(
    _TRIGGERS, implementation=ahocorasick_rs.Implementation.DFA
)


def starts_token(data: bytes, pos: int) -> bool:
    """Whether a token may start at ``pos``: at the start, after a separator, or right
    after a JSON escape (``\\n``, ``\\t``, ``\\r``, ``\\b``, ``\\f``, ``\\uXXXX``) or a
    percent-escape (``%2F``), whose last byte is a letter or digit but not part of the
    token."""
    if pos == 0 or data[pos - 1] not in _TOKEN_BYTES:
        return True
    if pos >= 2 and data[pos - 2] == _BACKSLASH and data[pos - 1] in _ESCAPE_LETTERS:
        return True
    if pos >= 6 and data[pos - 6] == _BACKSLASH and data[pos - 5] in b"uU":
        return all(b in _HEX for b in data[pos - 4 : pos])
    return pos >= 3 and data[pos - 3] == 0x25 and all(b in _HEX for b in data[pos - 2 : pos])


def _escaped(data: bytes, pos: int) -> bool:
    """Whether the byte at ``pos`` is the second byte of an escape (an odd run of
    backslashes right before it)."""
    run = 0
    while pos - run - 1 >= 0 and data[pos - run - 1] == _BACKSLASH:
        run += 1
    return run % 2 == 1


def _whole_escapes(data: bytes, start: int, end: int) -> tuple[int, int]:
    """Widen a span so that it never begins or ends inside a JSON escape: a lone
    backslash left before a mask, or an escaped quote left after one, breaks the JSON."""
    if start > 0 and _escaped(data, start):
        start -= 1
    else:
        for back in range(2, 6):  # inside the four hex digits of \\uXXXX
            u = start - back
            if u >= 1 and data[u] in b"uU" and _escaped(data, u):
                if all(b in _HEX for b in data[u + 1 : start]):
                    start = u - 1
                break
    if end < len(data) and end > start and _escaped(data, end):
        end += 1
    return start, end


def find_spans(data: bytes) -> list[Masked]:
    """Every secret in ``data``: ``(start, end, label)``, in order of their triggers."""
    hits = _FINDER.find_matches_as_indexes(data, overlapping=True)
    spans: list[Masked] = []
    done = 0  # hits inside the last secret found are part of it
    for index, start, end in hits:
        if start < done:
            continue
        rule = _RULE_OF[index]
        found = rule.find(data, start, end)
        if not found or (rule.boundary and not starts_token(data, found[0][0])):
            continue
        for begin, stop in found:
            begin, stop = _whole_escapes(data, begin, stop)
            spans.append((begin, stop, rule.label))
        done = max(done, found[0][1])
    return spans


def mask(label: bytes, length: int) -> bytes:
    text = b"[REDACTED:" + label + b"]"
    if len(text) > length:
        return b"*" * length
    return text + b"*" * (length - len(text))


def apply(data: bytes, spans: list[Masked]) -> bytes:
    """``data`` with each span masked; line breaks inside a span are kept."""
    if not spans:
        return data
    out = bytearray(data)
    for start, end, label in spans:
        out[start:end] = mask(label, end - start)
        piece = data[start:end]
        if b"\n" in piece or b"\r" in piece:
            for i, b in enumerate(piece):
                if b in (0x0A, 0x0D):
                    out[start + i] = b
    return bytes(out)


def redact(data: bytes) -> tuple[bytes, int]:
    """Return ``(data with secrets masked, number of secrets masked)``; same length."""
    spans = find_spans(data)
    return apply(data, spans), len({s[0] for s in spans})


class RedactStream:
    """Masks one long stream given piece by piece; the output lags ``tail`` bytes behind
    the input so that a secret across a piece boundary is seen whole.  ``feed`` and
    ``close`` together return exactly as many bytes as were fed."""

    TAIL: Final = 64 << 10  # longer than any secret a rule masks (a private key: 20 KB)
    CONTEXT: Final = 256  # bytes kept before the pending ones, for keywords and boundaries

    def __init__(self, tail: int = TAIL) -> None:
        self.tail = tail
        self.found = 0
        self._context = b""
        self._pending = b""
        self._carried: list[Masked] = []  # spans already counted, relative to _pending

    def feed(self, piece: bytes) -> bytes:
        return self._advance(piece, final=False)

    def close(self) -> bytes:
        return self._advance(b"", final=True)

    def _advance(self, piece: bytes, final: bool) -> bytes:
        if not final and len(self._pending) + len(piece) < 2 * self.tail:
            self._pending += piece  # small pieces: wait until a scan can emit a tail's worth
            return b""
        base = len(self._context)
        buf = self._context + self._pending + piece
        carried = [(s + base, e + base, label) for s, e, label in self._carried]
        known = {s for s, _, _ in carried}
        spans = carried + [sp for sp in find_spans(buf) if sp[1] > base]
        self.found += len({s for s, _, _ in spans if s >= base and s not in known})
        cut = len(buf) if final else max(base, len(buf) - self.tail)
        moved = True
        while moved:  # never cut through a secret: hold it back whole
            moved = False
            for s, e, _ in spans:
                if s < cut < e and s >= base:
                    cut, moved = s, True
        out = apply(buf, spans)[base:cut]
        self._context = buf[max(cut - self.CONTEXT, 0) : cut]
        self._pending = buf[cut:]
        self._carried = [(max(s, cut) - cut, e - cut, lb) for s, e, lb in spans if e > cut]
        return out

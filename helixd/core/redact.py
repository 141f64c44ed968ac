"""Pure secret redaction applied to every byte Helix stores.

Redaction is **length-preserving**: a secret is overwritten in place by a label padded
with ``*``, so byte offsets in the stored raw lines stay equal to the source file's
offsets.  Replacements contain no quote, backslash or newline, so a JSON line stays valid
JSON.

Speed: Python's regex engine is slow at alternations (about 100 MB/s here) and one
substring scan per rule costs ~0.6 ms/MB per rule, so each rule names the plain
substrings every match contains (``triggers``) and one Aho-Corasick pass (the Rust
``ahocorasick_rs``, about 600 MB/s here, without holding the GIL) finds them all; a rule's
regex then runs only in a small window around each hit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import ahocorasick_rs

_TOKEN_BYTES: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True, slots=True)
class _Rule:
    label: bytes
    triggers: tuple[bytes, ...]  # substrings every match contains
    pattern: re.Pattern[bytes]
    before: int = 0  # how far before a trigger a match may start
    after: int = 256  # how far after a trigger it may end
    boundary: bool = True  # the byte before the match must not be part of a token
    keep: int = 0  # leading bytes left readable (the word "Bearer ")


RULES: Final[tuple[_Rule, ...]] = (
    _Rule(
        b"api-key", (b"sk-",), re.compile(rb"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}")
    ),
    _Rule(b"aws-key", (b"AKIA", b"ASIA"), re.compile(rb"A[KS]IA[0-9A-Z]{16}(?![0-9A-Za-z])")),
    _Rule(b"github-token", (b"ghp_", b"ghs_"), re.compile(rb"gh[ps]_[A-Za-z0-9]{36,}")),
    _Rule(b"github-token", (b"github_pat_",), re.compile(rb"github_pat_[A-Za-z0-9_]{40,}")),
    _Rule(b"slack-token", (b"xox",), re.compile(rb"xox[abposr]-[A-Za-z0-9\-]{10,}")),
    _Rule(b"google-key", (b"AIza",), re.compile(rb"AIza[0-9A-Za-z_\-]{35}")),
    _Rule(b"stripe-key", (b"k_live_",), re.compile(rb"[sr]k_live_[0-9A-Za-z]{20,}"), before=1),
    _Rule(b"xai-key", (b"xai-",), re.compile(rb"xai-[A-Za-z0-9]{40,}")),
    _Rule(
        b"private-key",
        (b"PRIVATE KEY-----",),
        re.compile(
            rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[^\"\n]{0,20000}?-----END "
            rb"[A-Z0-9 ]{0,40}PRIVATE KEY-----"
        ),
        boundary=False,
        before=60,
        after=20_100,
    ),
    _Rule(
        b"bearer-token",
        (b"earer ",),
        re.compile(rb"[Bb]earer [A-Za-z0-9_\-\.=]{24,}"),
        boundary=False,
        keep=7,
        before=1,
        after=4096,
    ),
)


def _mask(label: bytes, length: int) -> bytes:
    text = b"[REDACTED:" + label + b"]"
    if len(text) > length:
        return b"*" * length
    return text + b"*" * (length - len(text))


_TRIGGERS: Final = [t for rule in RULES for t in rule.triggers]
_TRIGGER_RULE: Final = [rule for rule in RULES for _ in rule.triggers]
_FINDER: Final = ahocorasick_rs.BytesAhoCorasick(_TRIGGERS)


def redact(data: bytes) -> tuple[bytes, int]:
    """Return ``(data with secrets masked, number of secrets masked)``; same length."""
    hits = _FINDER.find_matches_as_indexes(data)
    if not hits:
        return data, 0
    out = bytearray(data)
    found = 0
    done = 0  # secrets never overlap: skip hits inside the last one masked
    for index, start, _end in hits:
        if start < done:
            continue
        rule = _TRIGGER_RULE[index]
        lo = max(start - rule.before, done)
        m = rule.pattern.search(data, lo, min(start + rule.after, len(data)))
        if m is None or m.start() > start:
            continue
        begin = m.start()
        if rule.boundary and begin > 0 and data[begin - 1] in _TOKEN_BYTES:
            continue
        out[begin + rule.keep : m.end()] = _mask(rule.label, m.end() - begin - rule.keep)
        found += 1
        done = m.end()
    return (bytes(out) if found else data), found

"""Pure secret redaction applied to every byte Helix stores.

Redaction is **length-preserving**: a secret is overwritten in place by a label padded
with ``*``, so byte offsets in the stored raw lines stay equal to the source file's
offsets.  Replacements contain no quote, backslash or newline, so a JSON line stays valid
JSON.

Speed: Python's regex engine is slow at alternations (about 100 MB/s here), so each rule
names the plain substrings every match contains (``triggers``); ``bytes.__contains__``
checks those at memchr-like speed (about 1.5 GB/s each) and a rule's pattern runs only on
buffers that contain one of its triggers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_TOKEN_BYTES: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True, slots=True)
class _Rule:
    label: bytes
    triggers: tuple[bytes, ...]  # substrings every match contains
    pattern: re.Pattern[bytes]
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
    _Rule(b"stripe-key", (b"k_live_",), re.compile(rb"[sr]k_live_[0-9A-Za-z]{20,}")),
    _Rule(b"xai-key", (b"xai-",), re.compile(rb"xai-[A-Za-z0-9]{40,}")),
    _Rule(
        b"private-key",
        (b"PRIVATE KEY-----",),
        re.compile(
            rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[^\"\n]{0,20000}?-----END "
            rb"[A-Z0-9 ]{0,40}PRIVATE KEY-----"
        ),
        boundary=False,
    ),
    _Rule(
        b"bearer-token",
        (b"earer ",),
        re.compile(rb"[Bb]earer [A-Za-z0-9_\-\.=]{24,}"),
        boundary=False,
        keep=7,
    ),
)


def _mask(label: bytes, length: int) -> bytes:
    text = b"[REDACTED:" + label + b"]"
    if len(text) > length:
        return b"*" * length
    return text + b"*" * (length - len(text))


def redact(data: bytes) -> tuple[bytes, int]:
    """Return ``(data with secrets masked, number of secrets masked)``; same length."""
    out: bytearray | None = None
    found = 0
    for rule in RULES:
        if not any(t in data for t in rule.triggers):
            continue
        for m in rule.pattern.finditer(data):
            start = m.start()
            if rule.boundary and start > 0 and data[start - 1] in _TOKEN_BYTES:
                continue
            if out is None:
                out = bytearray(data)
            begin = start + rule.keep
            out[begin : m.end()] = _mask(rule.label, m.end() - begin)
            found += 1
    return (bytes(out) if out is not None else data), found

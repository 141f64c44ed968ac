"""Pure secret redaction applied to every byte Helix stores.

Redaction is **length-preserving**: a secret is overwritten in place by a label padded
with ``*``, so byte offsets in the stored raw lines stay equal to the source file's
offsets.  Replacements contain no quote, backslash or newline, so a JSON line stays valid
JSON.  Each pattern has a cheap literal trigger checked with ``in`` first; the regex only
runs on buffers that contain it, which keeps the common case at memchr speed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class _Rule:
    label: bytes
    triggers: tuple[bytes, ...]
    pattern: re.Pattern[bytes]


_TOKEN = rb"[A-Za-z0-9_\-]"
RULES: Final[tuple[_Rule, ...]] = (
    _Rule(b"anthropic-key", (b"sk-ant-",), re.compile(rb"sk-ant-" + _TOKEN + rb"{20,}")),
    _Rule(
        b"openai-key",
        (b"sk-",),
        re.compile(rb"(?<![A-Za-z0-9_\-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}"),
    ),
    _Rule(b"aws-key", (b"AKIA", b"ASIA"), re.compile(rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    _Rule(
        b"github-token",
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
        re.compile(rb"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ),
    _Rule(b"slack-token", (b"xox",), re.compile(rb"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    _Rule(b"google-key", (b"AIza",), re.compile(rb"\bAIza[0-9A-Za-z_\-]{35}")),
    _Rule(b"stripe-key", (b"sk_live_", b"rk_live_"), re.compile(rb"\b[sr]k_live_[0-9A-Za-z]{20,}")),
    _Rule(b"xai-key", (b"xai-",), re.compile(rb"\bxai-[A-Za-z0-9]{40,}")),
    _Rule(
        b"private-key",
        (b"PRIVATE KEY-----",),
        re.compile(
            rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[^\"\n]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
    ),
    _Rule(
        b"bearer-token",
        (b"Bearer ", b"bearer "),
        re.compile(rb"(?<=[Bb]earer )[A-Za-z0-9_\-\.=]{24,}"),
    ),
)


def _mask(label: bytes, length: int) -> bytes:
    text = b"[REDACTED:" + label + b"]"
    if len(text) > length:
        return b"*" * length
    return text + b"*" * (length - len(text))


def redact(data: bytes) -> tuple[bytes, int]:
    """Return ``(data with secrets masked, number of secrets masked)``; same length."""
    count = 0
    for rule in RULES:
        if not any(t in data for t in rule.triggers):
            continue
        found = 0

        def repl(m: re.Match[bytes], rule: _Rule = rule) -> bytes:
            nonlocal found
            found += 1
            return _mask(rule.label, len(m.group(0)))

        data = rule.pattern.sub(repl, data)
        count += found
    return data, count

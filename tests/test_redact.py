"""Secret redaction: length-preserving, JSON-safe, and quiet on ordinary text."""

from __future__ import annotations

import orjson
import pytest

from helixd.core.redact import redact

SECRETS = [
    b"sk-ant-api03-" + b"A1b2C3d4" * 6,
    b"sk-proj-" + b"x" * 40,
    b"AKIAIOSFODNN7EXAMPLE",
    b"ghp_" + b"a" * 36,
    b"github_pat_" + b"B" * 50,
    b"xoxb-123456789012-abcdefghij",
    b"AIza" + b"S" * 35,
    b"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjE\\n"
    b"-----END OPENSSH PRIVATE KEY-----",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_secret_is_masked_in_place_and_json_stays_valid(secret: bytes) -> None:
    line = b'{"type":"user","message":{"content":"use ' + secret + b' please"}}'
    out, n = redact(line)
    assert n == 1
    assert secret not in out
    assert len(out) == len(line)
    assert b"[REDACTED:" in out or b"*" * 8 in out
    assert orjson.loads(out)["type"] == "user"


def test_bearer_token_in_a_header_is_masked() -> None:
    out, n = redact(b'curl -H "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345"')
    assert n == 1 and b"abcdefghijklmnopqrstuvwxyz012345" not in out


@pytest.mark.parametrize(
    "text",
    [
        b"ask-the-user about the task-runner and disk-usage",
        b"sk-short",
        b"AKIA is a prefix",
        b'{"signature":"EqQBCkYIBxgCKkB' + b"Q" * 60 + b'"}',
    ],
)
def test_ordinary_text_is_left_alone(text: bytes) -> None:
    assert redact(text) == (text, 0)

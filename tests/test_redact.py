"""Secret redaction (``helixd.core.redact``): every family in every position a transcript puts
it, length-preserving, JSON-safe, idempotent, across piece boundaries, and quiet on ordinary
text.  The corpus is ``tests/secret_corpus.py``."""

from __future__ import annotations

import io
import json
import string
from pathlib import Path

import orjson
import pytest
import zstandard

from helixd.adapters.declared import claude
from helixd.core.redact import RedactStream, find_spans, redact, starts_token
from helixd.sources.gate import COMPANION_MAX as SIDECAR_MAX
from helixd.sources.gate import Source
from helixd.sources.tailer import compress_range, masked_sidecar
from tests.secret_corpus import FAMILIES, POSITIONS, enc, is_json, rand


def _problems(family: str) -> list[str]:
    text, needles = FAMILIES[family]
    problems = []
    for where, place in POSITIONS.items():
        line = place(text)
        encoded = [enc(n) for n in needles]
        assert all(n in line for n in encoded), (family, where)  # the plant is really there
        out, found = redact(line)
        leaked = [n for n in encoded if n in out]
        if leaked or found == 0:
            problems.append(f"{where}: {leaked or 'nothing masked'} in {out!r}")
        elif len(out) != len(line):
            problems.append(f"{where}: length {len(line)} -> {len(out)}")
        elif is_json(line) and orjson.loads(out).keys() != orjson.loads(line).keys():
            problems.append(f"{where}: JSON changed shape: {out!r}")
        elif out.count(b"\n") != line.count(b"\n"):
            problems.append(f"{where}: line breaks changed")
        elif redact(out)[0] != out:
            problems.append(f"{where}: a second pass changes it again")
    return problems


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_is_masked_in_every_position(family: str) -> None:
    assert _problems(family) == []


def test_masks_say_what_they_hid_and_keep_the_readable_parts() -> None:
    line = b'{"text":"curl -H \\"Authorization: Bearer ' + b"abc123DEF456ghi789JKL0mnoP" + b'\\""}'
    out, n = redact(line)
    assert n == 1 and b"Authorization: Bearer [REDACTED:authorization]" in out
    assert redact(b"ghp_" + b"a1" * 18) == (b"[REDACTED:github-token]" + b"*" * 17, 1)
    out, _ = redact(b"password=hunter22")
    assert out == b"password=********"  # shorter than its label: stars only


def test_an_aws_secret_after_its_key_id_is_masked_whatever_follows_it() -> None:
    key_id = "AKIA" + rand(16, string.ascii_uppercase + string.digits)
    secret = "xR4O/HLlF8azW76/v7oglgOiSU6bx1Zw8QO6tYsa"  # the form hypothesis found leaking
    for left in (" ", "=", "\n", ","):
        for right in ("", "=", "==", "=x", "0", "/abc", "+Zz9", ",", '"', "\n"):
            line = orjson.dumps({"text": "x" + left + key_id + "," + secret + right})
            out, _ = redact(line)
            leaked = [n for n in (key_id, secret) if n.encode() in out]
            assert not leaked, (left, right, out)
            assert orjson.loads(out).keys() == {"text"}
    token = "IQoJb3JpZ2luX2VjE" + "Ab9+/z" * 100  # a session token glued on, past the window
    for text in (
        f"{key_id} HOME=/home/alice/work/projects/infrastructure/terraform {secret}",
        f"{key_id} note: averyveryverylongidentifierwithoutanydigitsinsideatall , {secret}",
        f"{key_id} " + "x " * 100 + secret + "Zq9" * 100,  # starts at the window's end
        f"{key_id},{secret}{token}== tail",
    ):
        out, _ = redact(orjson.dumps({"text": text}))
        leaked = [n for n in (key_id, secret, secret[-20:], token[-30:]) if n.encode() in out]
        assert not leaked, (text, out)
        assert out.endswith(b' tail"}') or b"tail" not in text.encode()


def test_an_escape_before_a_token_is_a_separator_but_a_letter_is_not() -> None:
    token = b"ghp_" + rand(36).encode()
    for before in (b"\\n", b"\\t", b"\\r", b"\\b", b"\\f", b"\\u00e9", b"%2F", b" ", b'\\"'):
        data = b"x" + before + token
        assert starts_token(data, len(data) - len(token)), before
        assert redact(data)[1] == 1, before
    for glued in (b"a", b"7", b"_", b"-"):
        assert redact(glued + token) == (glued + token, 0)


def test_a_span_never_splits_a_json_escape() -> None:
    # A key cut short inside a JSON string, followed by an escaped quote and more JSON.
    text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + rand(40) + '\\"'
    line = orjson.dumps({"out": text, "next": "kept"})
    out, n = redact(line)
    assert n == 1 and orjson.loads(out)["next"] == "kept"
    for s, e, _ in find_spans(line):
        assert _backslashes_before(line, s) % 2 == 0 and _backslashes_before(line, e) % 2 == 0


def _backslashes_before(data: bytes, pos: int) -> int:
    return len(data[:pos]) - len(data[:pos].rstrip(b"\\"))


ORDINARY = [
    b"ask-the-user about the task-runner and disk-usage",
    b"sk-short and sk-learn-pipeline",
    b"AKIA is a prefix; AKIA123 too short",
    b'{"signature":"EqQBCkYIBxgCKkB' + b"Q" * 60 + b'"}',
    b"commit 3f2a9c1e0b7d4e5f6a8b9c0d1e2f3a4b5c6d7e8f on main",
    b"sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    b"uuid 550e8400-e29b-41d4-a716-446655440000 and msg_01XFDUDYJgAACzvnptvVoYEL",
    b'"requestId":"req_011CPZDsVwbRPjx5yPrHqzLx","id":"toolu_01A09q90qw90lq917835lq9"',
    b'{"type":"image","source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk'
    b'+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","media_type":"image/png"}}',
    b"data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkS",
    b'"usage":{"input_tokens":12,"output_tokens":953,"cache_read_input_tokens":103219}',
    b"token counts: 2048 tokens in, max_tokens=4096, tokens per second",
    b"the password policy asks for a token refresh; the secret sauce",
    b"def login(password: str, token: Optional[str] = None) -> bool:",
    b"password = os.environ['DB_PASSWORD']; password=password; self.password = password",
    b"token = make_token(user); secret = secrets.token_hex(32); api_key=settings.api_key",
    b"token: ${{ secrets.GITHUB_TOKEN }} and password: {{ vault_password }}",
    b'curl -H "Authorization: Bearer $TOKEN" -H "Authorization: Bearer ${API_TOKEN}"',
    b"Authorization: Bearer <token> and Basic usage of the API",
    b"https://example.com/a:b@c and mailto:bob@example.com and git@github.com:o/r.git",
    b"postgres://user:${DB_PASSWORD}@localhost/db",
    b"ghp_short npm_config_cache hf_hub_download api_org_id xoxo sk_test",
    b"https://hooks.example.com/services and eyJ without a dot",
    b"docker run -u 1000:1000 and git push -u origin main",
    b"AKIAIOSFODNN7EXAMPLEXTRA is one long word",
    b"C:\\\\new\\\\token_path and \\\\nextcloud",
    b"connect(user=user, password=password); password=DB_PASSWORD; username, password = split",
    b"password: hashedPassword; password: SecretBytes; token = tokenizer; passwd=pwd",
    b'the --username and --password options; "passwd:gecos", "passwd:shell"',
]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (b"password=supersecret", b"supersecret"),
        (b"PASSWORD=letmein\n", b"letmein"),
        (b"[db]\npassword = hunter2", b"hunter2"),
        (b"password: sekrit", b"sekrit"),
        (b'{"password":"abc"}', b"abc"),
        (b"mysql --password S3cret!x", b"S3cret!x"),
    ],
)
def test_a_password_literal_is_masked_even_when_short_or_plain(text: bytes, secret: bytes) -> None:
    out, n = redact(text)
    assert n == 1 and secret not in out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: bytes) -> None:
    assert redact(text) == (text, 0)


def _long_line(text: str, at: int) -> tuple[bytes, int]:
    """A JSON line of ~200 KB with ``text`` starting at byte ``at``."""
    head = (b'{"text":"' + b"x " * (at // 2))[: at - 1] + b" "
    return head + enc(text) + b" " + b"y" * 100_000 + b'"}\n', len(head)


@pytest.mark.parametrize(
    "family",
    [
        "github classic pat (ghp_)",
        "aws key pair (csv)",
        "jwt",
        "private key (OPENSSH)",
        "private key cut short (no END line)",
        "password=",
        "Authorization: Bearer",
        "url credentials (postgres)",
    ],
)
def test_a_secret_straddling_two_pieces_is_masked_as_if_whole(family: str) -> None:
    text, needles = FAMILIES[family]
    line, start = _long_line(text, 100_000)
    whole, count = redact(line)
    assert count >= 1
    for cut in range(start - 3, start + len(enc(text)) + 3):
        stream = RedactStream()
        out = stream.feed(line[:cut]) + stream.feed(line[cut:]) + stream.close()
        assert out == whole, (family, cut)
        assert stream.found == count


def test_a_stream_of_many_small_pieces_equals_the_whole() -> None:
    texts = [FAMILIES[f][0] for f in ("jwt", "token=", "private key (RSA)", "npm token")]
    line = orjson.dumps({"text": " filler ".join(texts * 40)})
    whole, count = redact(line)
    for size in (1, 7, 4096):
        stream = RedactStream(tail=20_500)
        out = b"".join(stream.feed(line[i : i + size]) for i in range(0, len(line), size))
        out += stream.close()
        assert (out, stream.found) == (whole, count), size


def test_an_over_long_line_is_compressed_with_secrets_masked_across_pieces() -> None:
    text = FAMILIES["anthropic api key"][0]
    line, start = _long_line(text, 4096 - 20)  # the key crosses the first 4096-byte piece
    f = io.BytesIO(b"before\n" + line)
    raw_z, found = compress_range(f, 7, len(line), piece=4096)
    stored = zstandard.ZstdDecompressor().decompressobj().decompress(raw_z)
    assert found == 1 and stored == redact(line)[0] and enc(text) not in stored
    assert json.loads(stored)["text"].startswith("x x")


def test_a_companion_file_cut_at_64_kib_keeps_no_readable_part_of_a_secret(tmp_path: Path) -> None:
    token = FAMILIES["github classic pat (ghp_)"][0].encode()
    start = b'{"agentType":"x","note":"'
    head = start + b" " * (SIDECAR_MAX - 20 - len(start))  # the token starts 20 bytes before
    rel = "-work-p/5e55e55e-0000-4000-8000-000000000001/subagents/agent-a1.jsonl"
    transcript = tmp_path / rel
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"")
    (transcript.parent / "agent-a1.meta.json").write_bytes(head + token + b'"}')
    stored = masked_sidecar(Source(claude.ADAPTER, str(tmp_path), str(transcript), rel))
    assert stored is not None and len(stored) == SIDECAR_MAX
    assert stored[: len(head)] == head and token[:20] not in stored
    assert stored[len(head) :] == b"[REDACTED:github-tok"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_json_nested_in_a_row_stays_valid_with_several_secrets(family: str) -> None:
    """A SQLite row line (``helixd/sources/sqlite.py``) whose ``data`` column is a JSON
    document holding, in a string, another JSON document: every family three times at each
    level is masked and every level still parses (a private key cut short was masked
    through the backslashes of ``\\\\\\"``, unescaping the inner document's closing quote)."""
    from helixd.sources.sqlite import row_line

    text, needles = FAMILIES[family]
    several = f"{text} and {text}\n{text}"
    doc = {"type": "text", "text": several, "nested": json.dumps({"t": several})}
    line = row_line("part", {"id": "p", "data": json.dumps(doc)})
    masked, found = redact(line)
    assert found >= 2 and len(masked) == len(line)  # (a key cut short runs to its end)
    outer = orjson.loads(masked)
    inner = orjson.loads(outer["row"]["data"])
    innermost = orjson.loads(inner["nested"])
    assert isinstance(innermost, dict) and set(inner) == set(doc)
    assert [n for n in needles if n.encode() in masked] == []


def test_a_long_run_of_backslashes_after_a_key_cut_short_is_linear() -> None:
    """A private key cut short and then 40 kB of escaped backslashes in its string: masked to
    the string's end in linear time (each pair looked ahead over the rest of the run: 0.6 s)."""
    import time

    line = b'{"t": "-----BEGIN RSA PRIVATE KEY-----\\nMIIEow' + b"\\" * 20_000 + b'x"}\n'
    start = time.process_time()
    masked, found = redact(line)
    assert time.process_time() - start < 0.1
    assert found == 1 and b"MIIEow" not in masked and masked.endswith(b'"}\n')
    assert orjson.loads(masked)

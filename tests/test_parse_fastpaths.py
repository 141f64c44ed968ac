"""The parse loops' fast paths (issue 12, worker side) answer exactly what the general path
answers: ``fields.count``'s early return for the usual values against ``values.tokens`` for
any JSON value (same count, or the same refusal naming the same field); ``keys.key64`` (a
copied hasher) against its definition; the defaults of the Claude and Codex ``emit``, which make
events from their fields in order; ``toolkinds.shorten``'s shorter first look at a long text
against the collapse of its whole head."""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helixd.adapters.claude import _FileParse as claude_parse
from helixd.adapters.codex import _FileParse as codex_parse
from helixd.adapters.fields import count
from helixd.adapters.toolkinds import SUMMARY_CHARS, shorten
from helixd.core.records import Event
from helixd.core.values import MAX_TOKENS, Rejected, tokens
from helixd.store.keys import key64

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, MAX_TOKENS, MAX_TOKENS + 1, -1])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["12", "1e3", " 7 ", "-3", "nan"]),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


def _answer(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "count", fn(*args)
    except Rejected as exc:
        return "rejected", str(exc)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.booleans())
def test_count_answers_as_tokens_for_any_value(value: Any, present: bool) -> None:
    obj = {"n": value} if present else {}
    expected = _answer(tokens, obj.get("n"), "message.usage.n")
    assert _answer(count, obj, "n", "message.usage") == expected


def _key64_by_definition(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | st.sampled_from(["", "a\ud800b", "uuid#0:1a2b3c4d", "é" * 200]))
def test_key64_is_blake2b_8_little_endian_signed(text: str) -> None:
    """The stored keys must not change: every event row and usage fact is found by them."""
    assert key64(text) == _key64_by_definition(text)


def test_key64_known_value() -> None:
    assert key64("claude:abc") == _key64_by_definition("claude:abc")
    assert key64("claude:abc") != key64("claude:abd")


@pytest.mark.parametrize("emit", [claude_parse.emit, codex_parse.emit])
def test_emit_defaults_are_the_events(emit: Any) -> None:
    """The Claude and Codex adapters make events from their fields in order
    (``Event._make``): every field they leave out takes ``Event``'s own default."""
    defaults = {
        name: p.default
        for name, p in inspect.signature(emit).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert defaults
    for name, value in defaults.items():
        if name in Event._field_defaults:
            assert value == Event._field_defaults[name], name


def _shorten_by_definition(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(text[: limit * 2].split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BLANKS = st.sampled_from([" ", "  ", "\n", "\t", "\r\n", "\xa0", "\u3000", " " * 40, "\n" * 9])


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.text(max_size=40) | _BLANKS | st.sampled_from(["w" * 60, "é" * 199]), max_size=30),
    st.sampled_from([SUMMARY_CHARS, 150, 8, 1]),
)
def test_shorten_answers_as_the_collapse_of_the_whole_head(parts: list[str], limit: int) -> None:
    text = "".join(parts)
    assert shorten(text, limit) == _shorten_by_definition(text, limit)

"""The parse loops' fast paths (issue 12, worker side) answer exactly what the general path
answers: ``fields.count``'s early return for the usual values against ``values.tokens`` for
any JSON value (same count, or the same refusal naming the same field)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helixd.adapters.fields import count
from helixd.core.values import MAX_TOKENS, Rejected, tokens

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

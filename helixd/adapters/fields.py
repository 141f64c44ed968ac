"""Pure, forgiving access to fields of decoded JSON records.

Agents' formats drift: a field that was a string becomes an object, blocks go missing.
These helpers return a typed default instead of raising, so an adapter's happy path stays
short and a surprising record never costs the whole line.  Numbers and timestamps are
checked by ``helixd.core.values`` (token counts there may reject a line).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from helixd.adapters.jsonl import iter_text_blocks
from helixd.core.values import MAX_TOKENS, tokens, usd


def count(obj: Mapping[str, Any], key: str, where: str) -> int:
    """The token count ``obj[key]`` (``helixd.core.values.tokens``): 0 when absent; raises
    ``Rejected`` naming ``where.key`` for a value that is not a count.  The usual values (an
    int in range, or nothing) return before the field's name is built (issue 12: five
    counts per Claude response, ~0.3 µs each)."""
    value = obj.get(key)
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return value
    if value is None:
        return 0
    return tokens(value, f"{where}.{key}")


def cost(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    """The dollars ``obj[key]`` an agent recorded (``helixd.core.values.usd``): None when
    absent or 0; raises ``Rejected`` naming ``where.key`` for a value that is not a cost."""
    return usd(obj.get(key), f"{where}.{key}")


def get_str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def get_dict(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def dump(value: Any) -> bytes:
    """Bytes of a payload: strings as UTF-8, anything else as compact JSON."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace")
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def result_text(content: Any) -> str:
    """The text of a tool result's content (a string or a list of text blocks)."""
    if isinstance(content, str):
        return content
    return "\n".join(iter_text_blocks(content))


def first_str(obj: Any, *keys: str) -> str | None:
    """The first of ``keys`` whose value in ``obj`` is a non-blank string, stripped; None
    when there is none (or ``obj`` is not a dict)."""
    if not isinstance(obj, dict):
        return None
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None

"""The price table cost is computed with: the bundled offline table (``prices.json``, dated),
or a table file named in the config, with per-model overrides from the config on top.

``(date, {model: {input, output, cache_read, cache_write_5m, cache_write_1h}})`` in USD per
million tokens.  The date shown with every cost says which table priced it; overrides add
``+ config`` to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from helixd.core.usage_report import load_prices

PriceTable = tuple[str, dict[str, dict[str, float]]]
FIELDS: Final = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
BUNDLED: Final = Path(__file__).parent / "prices.json"


class PriceTableError(ValueError):
    """The configured price table cannot be read."""


def bundled() -> PriceTable:
    return load_prices(BUNDLED.read_bytes())


def with_overrides(base: PriceTable, overrides: Mapping[str, Mapping[str, float]]) -> PriceTable:
    """``base`` with each overridden model's given fields replaced (new models get 0 for
    the fields not given)."""
    if not overrides:
        return base
    date, table = base
    merged = dict(table)
    for model, fields in overrides.items():
        merged[model] = {f: float(fields.get(f, merged.get(model, {}).get(f, 0.0))) for f in FIELDS}
    return f"{date} + config", merged


def effective(table_file: Path | None, overrides: Mapping[str, Mapping[str, float]]) -> PriceTable:
    """The table the config asks for (``[prices]``: ``table`` and ``models``)."""
    if table_file is None:
        base = bundled()
    else:
        try:
            base = load_prices(Path(table_file).expanduser().read_bytes())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PriceTableError(f"price table {table_file}: {exc}") from exc
        for model, fields in base[1].items():
            missing = [f for f in FIELDS if not isinstance(fields.get(f), int | float)]
            if missing:
                raise PriceTableError(f"price table {table_file}: {model} lacks {missing}")
    return with_overrides(base, overrides)

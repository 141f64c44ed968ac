"""Where prices come from: the book of ``helixd.core.pricing`` built from the config and the
installed price data.

* ``[prices] models`` overrides and a ``[prices] table`` file from the config, first;
* then pydantic's ``genai-prices`` (a dependency; its data ships inside the package and is
  read offline — its opt-in ``UpdatePrices`` downloader is never started, nothing is fetched
  at run time).  Importing it costs about a second, so its providers and models are
  flattened once per installed version into ``<cache dir>/genai-prices.json`` (a few
  milliseconds to read), keyed by the path, size and mtime of its data module;
* then the bundled table (``helixd/core/prices.json``) for the models neither knows.

Without genai-prices installed (or with data it cannot read) the bundled table prices
everything, and the label says so.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from helixd.core.pricing import (
    FIELDS,
    FlatLayer,
    PriceBook,
    PriceTableError,
    bundled_layer,
    genai_layer,
    load_prices,
)
from helixd.paths import cache_dir

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from helixd.core.pricing import Layer, PriceTable

FORMAT = 1


def effective(
    table_file: Path | None,
    overrides: Mapping[str, Mapping[str, float]],
    today: str | None = None,
    cache: Path | None = None,
) -> PriceTable:
    """The prices the config asks for: ``(label, book)``; PriceTableError for a configured
    table that cannot be read."""
    layers: list[Layer] = []
    if table_file is not None:
        layers.append(_table_layer(Path(table_file).expanduser()))
    day = today or time.strftime("%Y-%m-%d", time.gmtime())
    genai = genai_prices_layer(day, cache or cache_dir())
    if genai is not None:
        layers.append(genai)
    layers.append(bundled_layer())
    book = PriceBook(layers, overrides)
    return book.label, book


def _table_layer(path: Path) -> FlatLayer:
    try:
        date, table = load_prices(path.read_bytes())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PriceTableError(f"price table {path}: {exc}") from exc
    for model, fields in table.items():
        missing = [f for f in FIELDS if not isinstance(fields.get(f), int | float)]
        if missing:
            raise PriceTableError(f"price table {path}: {model} lacks {missing}")
    return FlatLayer(f"table {path} {date}".rstrip(), table)


def genai_prices_layer(today: str, cache: Path) -> Layer | None:
    """genai-prices' data as of ``today``, from the flattened cache (rebuilt when the
    installed package changed); None when the package is not installed.  The cache is an
    index of providers and one file of models per provider, so a lookup reads only the
    providers it needs (the whole data is ~0.4 MB of JSON)."""
    key = _installed_key()
    if key is None:
        return None
    where = cache / "genai-prices" / f"{zlib.crc32(key.encode()):08x}-{len(key)}"
    try:
        return _layer(where, (where / "index.json").read_bytes(), today)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        index, models = flatten(key)
    except Exception:  # data this code cannot read: the bundled table prices everything
        return None
    _publish(where, index, models)
    return genai_layer(json.dumps(index).encode(), today, functools.partial(_models_in, models))


def _layer(where: Path, index: bytes, today: str) -> Layer:
    return genai_layer(index, today, functools.partial(_models_read, where))


# The layers' model readers are module functions, not closures: a price table can then be
# pickled (``helixctl ingest`` sends it to the parse workers that build the digests).
def _models_in(models: dict[str, list[Any]], provider: str) -> list[Any]:
    return models.get(provider, [])


def _models_read(where: Path, provider: str) -> list[Any]:
    try:
        found: list[Any] = json.loads((where / f"{provider}.json").read_bytes())
    except (OSError, ValueError):
        return []
    return found


def _publish(where: Path, index: dict[str, Any], models: dict[str, list[Any]]) -> None:
    """Write the cache into a new directory and rename it into place (a reader sees all of
    it or none); older versions' directories go.  A cache that cannot be written is only
    slower."""
    import shutil
    import tempfile

    tmp: Path | None = None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=where.parent, prefix=".new-"))
        for provider, entries in models.items():
            (tmp / f"{provider}.json").write_text(json.dumps(entries, separators=(",", ":")))
        (tmp / "index.json").write_text(json.dumps(index, separators=(",", ":")))
        os.replace(tmp, where)
    except OSError:  # another process published it first, or a read-only cache
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    for old in where.parent.iterdir():
        if old != where and not old.name.startswith(".new-"):
            shutil.rmtree(old, ignore_errors=True)


def _installed_key() -> str | None:
    """Where genai-prices' data module is, its size and mtime — without importing it (nor
    importlib's machinery: the directories of ``sys.path`` are looked at, as the import
    system would, then ``find_spec`` for anything unusual)."""
    if "genai_prices" in sys.modules and sys.modules["genai_prices"] is None:
        return None  # made unimportable on purpose
    data = next(
        (
            os.path.join(entry, "genai_prices", "data.py")
            for entry in sys.path
            if entry and os.path.isfile(os.path.join(entry, "genai_prices", "__init__.py"))
        ),
        None,
    )
    if data is None:
        import importlib.util

        try:
            spec = importlib.util.find_spec("genai_prices")
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        data = os.path.join(next(iter(spec.submodule_search_locations)), "data.py")
    try:
        st = os.stat(data)
    except OSError:
        return None
    return f"{FORMAT}:{data}:{st.st_size}:{st.st_mtime_ns}"


# -- flattening genai-prices' data ----------------------------------------------------------
_CLAUSES = {
    "ClauseStartsWith": ("starts_with", "starts_with"),
    "ClauseEndsWith": ("ends_with", "ends_with"),
    "ClauseContains": ("contains", "contains"),
    "ClauseEquals": ("equals", "equals"),
    "ClauseRegex": ("regex", "regex"),
    "ClauseOr": ("or", "or_"),
    "ClauseAnd": ("and", "and_"),
}


def _clause(c: Any) -> dict[str, Any] | None:
    if c is None:
        return None
    kind, attr = _CLAUSES[type(c).__name__]
    value = getattr(c, attr)
    return {kind: [_clause(x) for x in value] if kind in ("or", "and") else value}


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return float(getattr(value, "base", value))  # tiered: the base price (see docs)


def _price(mp: Any, start: str | None) -> list[Any]:
    """``[start, input, output, cache_read, cache_write, cache_write_1h]`` per million."""
    keys = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
    return [start, *(_number(getattr(mp, k, None)) for k in (*keys, "cache_write_1h_mtok"))]


def _prices(model: Any) -> list[list[Any]]:
    """A model's prices in order; a price that starts on a date carries it.  Prices for a
    time of day (off-peak discounts) are left out: the standard price applies."""
    if not isinstance(model.prices, list):
        return [_price(model.prices, None)]
    out = []
    for i, conditional in enumerate(model.prices):
        constraint = conditional.constraint
        start = getattr(constraint, "start_date", None)
        if constraint is not None and start is None and i > 0:
            continue
        out.append(_price(conditional.prices, start.isoformat() if start else None))
    return out


def flatten(key: str) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """genai-prices' providers (the index) and each provider's models, as plain JSON
    (imports its data: about a second)."""
    from importlib.metadata import version

    from genai_prices.data import providers

    index = {
        "key": key,
        "version": version("genai-prices"),
        "providers": [
            {
                "id": p.id,
                "match": _clause(p.model_match),
                "fallback": list(p.fallback_model_providers or ()),
            }
            for p in providers
        ],
    }
    models = {
        p.id: [{"id": m.id, "match": _clause(m.match), "prices": _prices(m)} for m in p.models]
        for p in providers
    }
    return index, models

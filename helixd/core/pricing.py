"""The prices cost is computed with: a book of layers, each model priced by the first layer
that knows it.

Layers, first to last (``helixd/prices.py`` builds the book from the config):

1. per-model overrides from the config (``[prices.models]``): the fields given replace the
   price the lower layers found (a model they do not know gets 0 for the fields not given);
2. a table file named in the config (``[prices] table``), in the bundled format;
3. pydantic's ``genai-prices`` data (maintained, shipped offline with the package), flattened
   into plain JSON (:func:`genai_layer` reads it): providers matched on the model name, then
   the provider's models by their match clauses, the price in effect on the book's date;
4. the bundled table (``prices.json``, dated), for models nothing above knows.

Prices are USD per million tokens by field (``FIELDS``).  The book's ``label`` names the
source and date shown with every cost; ``source(model)`` says which layer priced a model.
Pure: the data comes in as bytes or mappings; only :func:`bundled` reads the package file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # kept out of the run time: the status line imports this module
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any, Final, Protocol, TypeAlias

    Price: TypeAlias = Mapping[str, float]
    ModelsOf: TypeAlias = Callable[[str], Sequence[Mapping[str, Any]]]

    class Layer(Protocol):
        @property
        def name(self) -> str: ...

        def find(self, model: str) -> Price | None: ...


FIELDS: Final = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
BUNDLED: Final = Path(__file__).parent / "prices.json"
_DATED: Final = re.compile(r"-\d{8}$")


class PriceTableError(ValueError):
    """The configured price table cannot be read."""


# -- flat tables (the bundled table, a configured file) -------------------------------------
def load_prices(data: bytes) -> tuple[str, dict[str, dict[str, float]]]:
    """``(date, {model: {input, output, cache_read, cache_write_5m, cache_write_1h}})``."""
    doc = json.loads(data)
    return str(doc.get("date", "")), {str(k): dict(v) for k, v in doc["models"].items()}


def flat_price(table: Mapping[str, Price], model: str) -> Price | None:
    """Exact name, else without a ``-YYYYMMDD`` suffix, else the longest prefix key."""
    if model in table:
        return table[model]
    bare = _DATED.sub("", model)
    if bare in table:
        return table[bare]
    best = max((k for k in table if bare.startswith(k + "-")), key=len, default=None)
    return table[best] if best else None


class FlatLayer:
    """A dated table keyed by model name (the bundled table, a configured file)."""

    __slots__ = ("name", "table")

    def __init__(self, name: str, table: Mapping[str, Price]) -> None:
        self.name, self.table = name, table

    def find(self, model: str) -> Price | None:
        return flat_price(self.table, model)


# -- genai-prices, flattened ----------------------------------------------------------------
def _matches(clause: Mapping[str, Any], ref: str) -> bool:
    """One of genai-prices' match clauses (``starts_with``, ``ends_with``, ``contains``,
    ``equals``, ``regex``, ``or``, ``and``) against a lower-cased model reference."""
    for kind, value in clause.items():
        if kind == "starts_with":
            return ref.startswith(str(value).lower())
        if kind == "ends_with":
            return ref.endswith(str(value).lower())
        if kind == "contains":
            return str(value).lower() in ref
        if kind == "equals":
            return ref == str(value).lower()
        if kind == "regex":
            return re.search(str(value), ref) is not None
        if kind == "or":
            return any(_matches(c, ref) for c in value)
        if kind == "and":
            return all(_matches(c, ref) for c in value)
    return False


_COMPACT_DATE: Final = re.compile(r"-(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def _dashed_date(ref: str) -> str:
    """``gpt-5.2-20251211`` -> ``gpt-5.2-2025-12-11`` (the form genai-prices retries with)."""
    return _COMPACT_DATE.sub(lambda m: f"-{m.group(1)}-{m.group(2)}-{m.group(3)}", ref)


class GenaiLayer:
    """genai-prices' providers (``providers``: id, match clause, fallback providers) and, per
    provider, its models (``models_of(id)``, read when first needed), priced as of ``date``
    (``YYYY-MM-DD``): the last price whose start date has come, else the first."""

    def __init__(
        self, name: str, date: str, providers: Sequence[Mapping[str, Any]], models_of: ModelsOf
    ) -> None:
        self.name, self.date, self.providers = name, date, providers
        self._models_of = models_of
        self._models: dict[str, Sequence[Mapping[str, Any]]] = {}
        self._ids = {str(p["id"]) for p in providers}

    def models(self, provider: str) -> Sequence[Mapping[str, Any]]:
        found = self._models.get(provider)
        if found is None:
            found = self._models[provider] = self._models_of(provider)
        return found

    def model(self, model: str) -> tuple[str, Mapping[str, Any]] | None:
        """``(provider id, model entry)`` genai-prices would use for ``model``."""
        ref = model.lower()
        provider = next(
            (p for p in self.providers if p.get("match") and _matches(p["match"], ref)), None
        )
        if provider is None:
            return None
        for candidate in dict.fromkeys((ref, _dashed_date(ref))):
            found = self._in(str(provider["id"]), provider.get("fallback", ()), candidate)
            if found is not None:
                return found
        return None

    def _in(
        self, provider: str, fallback: Iterable[str], ref: str
    ) -> tuple[str, Mapping[str, Any]] | None:
        for m in self.models(provider):
            if _matches(m["match"], ref):
                return provider, m
        for other in fallback:  # one step: another provider's price for a model it hosts
            if other in self._ids:
                found = self._in(other, (), ref)
                if found is not None:
                    return found
        return None

    def find(self, model: str) -> Price | None:
        found = self.model(model)
        if found is None:
            return None
        prices = found[1]["prices"]  # [[start, input, output, cache_read, write, write_1h]]
        current = next(
            (p for p in reversed(prices) if p[0] is None or p[0] <= self.date),
            prices[0] if prices else None,
        )
        return None if current is None else _fields(current)


def _fields(p: Sequence[Any]) -> dict[str, float]:
    """genai-prices' per-million prices ``[start, input, output, cache_read, cache_write,
    cache_write_1h]`` as ours.  Cache tokens are part of the input there: with no cache price
    of their own they cost the input price."""
    _, base, output, read, write, write_1h = p
    base = float(base or 0.0)
    return {
        "input": base,
        "output": float(output or 0.0),
        "cache_read": float(base if read is None else read),
        "cache_write_5m": float(base if write is None else write),
        "cache_write_1h": float(write_1h if write_1h is not None else write or base),
    }


def genai_layer(index: bytes, date: str, models_of: ModelsOf) -> GenaiLayer:
    """The layer of a flattened genai-prices index (``helixd/prices.py`` writes it) whose
    providers' models ``models_of`` reads."""
    doc = json.loads(index)
    return GenaiLayer(f"genai-prices {doc['version']}", date, doc["providers"], models_of)


# -- the book -------------------------------------------------------------------------------
class PriceBook:
    """Models priced by the first layer that knows them, with config overrides on top."""

    def __init__(
        self,
        layers: Sequence[Layer],
        overrides: Mapping[str, Mapping[str, float]] | None = None,
        label: str = "",
    ) -> None:
        self.layers = tuple(layers)
        self.overrides = dict(overrides or {})
        self.label = label or "; ".join(_label(layer) for layer in self.layers)
        if self.overrides:
            self.label += " + config"
        self._memo: dict[str, tuple[Price | None, str | None]] = {}

    def _resolve(self, model: str) -> tuple[Price | None, str | None]:
        found = self._memo.get(model)
        if found is None:
            price, source = None, None
            for layer in self.layers:
                price = layer.find(model)
                if price is not None:
                    source = layer.name
                    break
            extra = flat_price(self.overrides, model)  # as a table's keys match
            if extra is not None:
                price = {f: float(extra.get(f, (price or {}).get(f, 0.0))) for f in FIELDS}
                source = "config"
            found = self._memo[model] = (price, source)
        return found

    def price(self, model: str) -> Price | None:
        return self._resolve(model)[0]

    def source(self, model: str) -> str | None:
        """The layer that priced ``model`` (``config`` for an override), None if unpriced."""
        return self._resolve(model)[1]

    def describe(self, models: Iterable[str]) -> dict[str, Any]:
        """For a report: the book's label, and which source priced each model."""
        return {"source": self.label, "models": {m: self.source(m) for m in sorted(models)}}


def _label(layer: Layer) -> str:
    date = getattr(layer, "date", "")
    return f"{layer.name}, {date}" if date else layer.name


if TYPE_CHECKING:
    Prices: TypeAlias = PriceBook | Mapping[str, Price]
    PriceTable: TypeAlias = tuple[str, Prices]


def price_for(prices: Prices, model: str) -> Price | None:
    """The price of ``model`` in a book, or in a plain flat table."""
    if isinstance(prices, PriceBook):
        return prices.price(model)
    return flat_price(prices, model)


def cost(prices: Prices, model: str, c: Sequence[int]) -> float:
    """USD for one model's counters (input, output, cache read, cache write 5 m, 1 h, …);
    0 for an unpriced model.  Reasoning tokens are part of output already: never charged
    twice."""
    p = price_for(prices, model)
    if p is None:
        return 0.0
    return (
        c[0] * p["input"]
        + c[1] * p["output"]
        + c[2] * p["cache_read"]
        + c[3] * p["cache_write_5m"]
        + c[4] * p["cache_write_1h"]
    ) / 1e6


def bundled_layer() -> FlatLayer:
    date, table = load_prices(BUNDLED.read_bytes())
    return FlatLayer(f"bundled table {date}", table)


def bundled() -> PriceTable:
    """The bundled table alone (a fallback, and what tests pin)."""
    book = PriceBook([bundled_layer()])
    return book.label, book


def with_overrides(base: PriceTable, overrides: Mapping[str, Mapping[str, float]]) -> PriceTable:
    """``base`` with each overridden model's given fields replaced (new models get 0 for
    the fields not given)."""
    if not overrides:
        return base
    label, prices = base
    layers = prices.layers if isinstance(prices, PriceBook) else [FlatLayer(label, prices)]
    book = PriceBook(layers, overrides, label=label)
    return book.label, book

"""Cost in USD: the bundled dated price table, a table file named in the config, and per-model
overrides, seen by the analyze pass, the digests and the reports (real CLI, real store)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from helixd.core.pricing import PriceBook, bundled, price_for, with_overrides
from tests.conftest import FIXTURES, REPO, RunCli

SESSION = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
UID = f"claude:{SESSION}"
# All claude-sonnet-4 (dated 20250514): 93 input, 953 output, 103 219 cache read and 12 698
# cache write (5 m) tokens (tests/test_claude_golden.py works them out).
TOKENS = (93, 953, 103_219, 12_698)


def usd(input_: float, output: float, read: float, write: float) -> float:
    n = TOKENS
    return round((n[0] * input_ + n[1] * output + n[2] * read + n[3] * write) / 1e6, 6)


def setup(home: Path) -> Path:
    project = home / ".claude" / "projects" / "p"
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude" / "d-kimuson__claude-code-viewer" / f"{SESSION}.jsonl", project)
    config = home / ".config" / "helix" / "config.toml"
    config.parent.mkdir(parents=True)
    return config


def digest(helixctl: RunCli) -> dict[str, object]:
    doc: dict[str, object] = orjson.loads(helixctl("lookup", UID, "--json").stdout)
    return doc


def report_cost(helixctl: RunCli) -> float:
    doc = orjson.loads(helixctl("report", "daily", "--json", "-z", "UTC").stdout)
    return float(doc["totals"]["totalCost"])


def test_config_overrides_and_replaces_the_default_prices(home: Path, helixctl: RunCli) -> None:
    config = setup(home)
    helixctl("ingest")
    d = digest(helixctl)
    label = str(d["price_table_date"])
    assert label.startswith("genai-prices ") and "; bundled table " in label
    assert d["cost"]["usd"] == usd(3.0, 15.0, 0.30, 3.75)  # type: ignore[index]
    assert round(report_cost(helixctl), 6) == usd(3.0, 15.0, 0.30, 3.75)

    # One model overridden in the config: its other fields keep the values found below.
    config.write_text('[prices.models."claude-sonnet-4"]\ninput = 6.0\ncache_read = 0.6\n')
    out = helixctl("analyze", "--all", "--json")
    assert orjson.loads(out.stdout)["price_table_date"] == f"{label} + config"
    d = digest(helixctl)
    assert d["price_table_date"] == f"{label} + config"
    assert d["cost"]["usd"] == usd(6.0, 15.0, 0.60, 3.75)  # type: ignore[index]
    assert round(report_cost(helixctl), 6) == usd(6.0, 15.0, 0.60, 3.75)

    # A table file of one's own comes first (and names its date).
    table = home / "prices.json"
    model = {
        "input": 1.0,
        "output": 2.0,
        "cache_read": 0.1,
        "cache_write_5m": 1.25,
        "cache_write_1h": 2.0,
    }
    table.write_text(json.dumps({"date": "2030-01-01", "models": {"claude-sonnet-4": model}}))
    config.write_text(f'[prices]\ntable = "{table}"\n')
    helixctl("analyze", UID)
    d = digest(helixctl)
    assert str(d["price_table_date"]).startswith(f"table {table} 2030-01-01; genai-prices ")
    assert d["cost"]["usd"] == usd(1.0, 2.0, 0.1, 1.25)  # type: ignore[index]


def test_a_bad_price_table_is_a_clear_configuration_error(home: Path, helixctl: RunCli) -> None:
    config = setup(home)
    helixctl("ingest")
    config.write_text(f'[prices]\ntable = "{home / "missing.json"}"\n')
    proc = helixctl("analyze", check=False)
    assert proc.returncode == 2 and "price table" in proc.stderr
    (home / "broken.json").write_text('{"date": "x", "models": {"m": {"input": 1}}}')
    config.write_text(f'[prices]\ntable = "{home / "broken.json"}"\n')
    proc = helixctl("report", "daily", check=False)
    assert proc.returncode == 2 and "lacks" in proc.stderr
    config.write_text("[prices.models.m]\ninput = -1\n")
    proc = helixctl("analyze", check=False)
    assert proc.returncode == 2 and "invalid configuration" in proc.stderr


def test_analyze_names_sessions_it_cannot_find(home: Path, helixctl: RunCli) -> None:
    setup(home)
    helixctl("ingest")
    proc = helixctl("analyze", "nosuchsession", check=False)
    assert proc.returncode == 1 and "nosuchsession" in proc.stderr
    ok = orjson.loads(helixctl("analyze", SESSION[:8], "--json").stdout)
    assert ok["digests"] == 1 and ok["raw_bytes"] > 0


def test_overrides_merge_field_by_field() -> None:
    fields = {
        "input": 1.0,
        "output": 2.0,
        "cache_read": 0.1,
        "cache_write_5m": 1.25,
        "cache_write_1h": 2.0,
    }
    base = ("2026-01-01", {"m": fields})
    label, book = with_overrides(base, {"m": {"output": 9.0}, "new": {"input": 4.0}})
    assert label == "2026-01-01 + config"
    assert price_for(book, "m") == {**fields, "output": 9.0}
    assert price_for(book, "m-20260101") == {**fields, "output": 9.0}  # keys match as a table's
    assert price_for(book, "new") == {
        "input": 4.0,
        "output": 0.0,
        "cache_read": 0.0,
        "cache_write_5m": 0.0,
        "cache_write_1h": 0.0,
    }
    assert isinstance(book, PriceBook) and book.source("new") == "config"
    assert with_overrides(base, {}) is base


# -- genai-prices: the source, its fallbacks, and that it never fetches ------------------------
NAMES = [
    "claude-sonnet-4-20250514",
    "claude-opus-4-5-20251101",
    "claude-opus-4-1-20250805",
    "claude-haiku-4-5-20251001",
    "claude-3-5-haiku-20241022",
    "claude-3-7-sonnet-20250219",
    "gpt-5",
    "gpt-5-codex",
    "gpt-5.1-codex-max",
    "gpt-5.2-20251211",
    "gpt-5.3-codex",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-3-pro-preview",
    "grok-code-fast-1",
    "grok-4",
    "anthropic/claude-sonnet-4",
    "glm-4.6",
    "<synthetic>",
]


def test_models_resolve_as_genai_prices_resolves_them(tmp_path: Path) -> None:
    """The flattened data is matched the way genai-prices matches its own (provider by the
    name, then its models, a fallback provider, a compact date retried dashed), at the
    price genai-prices computes."""
    from datetime import UTC, datetime

    from genai_prices import Usage, calc_price
    from genai_prices.data_snapshot import get_snapshot

    from helixd.core.pricing import GenaiLayer
    from helixd.prices import genai_prices_layer

    today = datetime.now(UTC).date().isoformat()
    layer = genai_prices_layer(today, tmp_path)
    assert isinstance(layer, GenaiLayer)
    snapshot = get_snapshot()
    bundled_names = json.loads((REPO / "helixd/core/prices.json").read_text())["models"]
    for name in [*NAMES, *bundled_names]:
        try:
            _, theirs = snapshot.find_provider_model(name, None, None, None)
        except LookupError:
            theirs = None
        ours = layer.model(name)
        assert (ours[1]["id"] if ours else None) == (theirs.id if theirs else None), name
        if theirs is None:
            continue
        price = layer.find(name)
        assert price is not None
        for usage, field in (
            (Usage(input_tokens=1000), "input"),
            (Usage(output_tokens=1000), "output"),
            (Usage(input_tokens=1000, cache_read_tokens=1000), "cache_read"),
            (Usage(input_tokens=1000, cache_write_tokens=1000), "cache_write_5m"),
        ):
            expected = float(calc_price(usage, name).total_price) * 1000
            assert price[field] == pytest.approx(expected, rel=1e-9), (name, field)


def test_genai_prices_first_the_bundled_table_for_the_rest(tmp_path: Path) -> None:
    from helixd.prices import effective

    label, book = effective(None, {}, today="2026-11-26", cache=tmp_path)
    assert label.startswith("genai-prices ") and label.endswith(bundled_label())
    assert book.source("claude-sonnet-4-20250514").startswith("genai-prices ")
    # not in genai-prices' data: the bundled table prices it
    assert book.source("gpt-5.3-codex-mini") == bundled_label()
    assert book.source("<synthetic>") is None and book.price("<synthetic>") is None
    # the flattened data is cached: the second build reads it (no import of genai-prices)
    assert len(list((tmp_path / "genai-prices").iterdir())) == 1


def bundled_label() -> str:
    return str(bundled()[0])


def _child(code: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_building_the_price_data_opens_no_connection(tmp_path: Path) -> None:
    """genai-prices' data is read offline: with every socket refused, the flattened data is
    built from the installed package and prices a model."""
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n    raise OSError('no network in this test')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from pathlib import Path\nfrom helixd.prices import effective\n"
        "label, book = effective(None, {}, cache=Path(sys.argv[1]))\n"
        "print(label, '|', book.source('claude-opus-4-5-20251101'))\n"
    )
    proc = _child(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    label, source = proc.stdout.strip().split(" | ")
    assert label.startswith("genai-prices ") and source.startswith("genai-prices ")
    assert (tmp_path / "genai-prices").is_dir()


def test_without_genai_prices_the_bundled_table_prices_everything(tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['genai_prices'] = None  # not importable\n"
        "from pathlib import Path\nfrom helixd.prices import effective\n"
        "label, book = effective(None, {}, cache=Path(sys.argv[1]))\n"
        "print(label, '|', book.source('claude-opus-4-5-20251101'))\n"
    )
    proc = _child(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{bundled_label()} | {bundled_label()}"


def test_reports_and_lookup_say_which_source_and_date_priced_them(
    home: Path, helixctl: RunCli
) -> None:
    setup(home)
    helixctl("ingest")
    doc = orjson.loads(helixctl("report", "daily", "--json").stdout)
    assert doc["prices"]["source"].startswith("genai-prices ")
    assert doc["prices"]["models"] == {
        "claude-sonnet-4-20250514": doc["prices"]["source"].split(",")[0]
    }
    text = helixctl("report", "daily").stdout
    assert f"Prices: {doc['prices']['source']}" in text
    tokens = orjson.loads(helixctl("tokens", "--repo", "/", "--json").stdout)
    assert tokens["prices"]["source"] == doc["prices"]["source"]
    shown = helixctl("lookup", UID).stdout
    assert f"prices of {doc['prices']['source']}" in shown


def test_the_effective_price_table_pickles_and_prices_the_same(tmp_path: Path) -> None:
    """``helixctl ingest`` sends the table to the parse workers that build the digests: from
    a fresh flattening and from the cache, it pickles and prices every name as before."""
    import pickle

    from helixd.prices import effective

    for _ in ("fresh", "cached"):
        label, book = effective(None, {"glm-4.6": {"input": 1.0}}, cache=tmp_path)
        again_label, again = pickle.loads(pickle.dumps((label, book)))
        assert again_label == label
        for name in NAMES:
            assert price_for(again, name) == price_for(book, name), name

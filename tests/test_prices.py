"""Cost in USD: the bundled dated price table, a table file named in the config, and per-model
overrides, seen by the analyze pass, the digests and the reports (real CLI, real store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson

from helixd.core.pricing import bundled, with_overrides
from tests.conftest import FIXTURES, RunCli

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


def test_config_overrides_and_replaces_the_bundled_prices(home: Path, helixctl: RunCli) -> None:
    config = setup(home)
    helixctl("ingest")
    d = digest(helixctl)
    date = bundled()[0]
    assert d["price_table_date"] == date
    assert d["cost"]["usd"] == usd(3.0, 15.0, 0.30, 3.75)  # type: ignore[index]
    assert round(report_cost(helixctl), 6) == usd(3.0, 15.0, 0.30, 3.75)

    # One model overridden in the config: its other fields keep the bundled values.
    config.write_text('[prices.models."claude-sonnet-4"]\ninput = 6.0\ncache_read = 0.6\n')
    out = helixctl("analyze", "--all", "--json")
    assert orjson.loads(out.stdout)["price_table_date"] == f"{date} + config"
    d = digest(helixctl)
    assert d["price_table_date"] == f"{date} + config"
    assert d["cost"]["usd"] == usd(6.0, 15.0, 0.60, 3.75)  # type: ignore[index]
    assert round(report_cost(helixctl), 6) == usd(6.0, 15.0, 0.60, 3.75)

    # A table file of one's own replaces the bundled table (and names its date).
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
    assert d["price_table_date"] == "2030-01-01"
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
    base = (
        "2026-01-01",
        {
            "m": {
                "input": 1.0,
                "output": 2.0,
                "cache_read": 0.1,
                "cache_write_5m": 1.25,
                "cache_write_1h": 2.0,
            }
        },
    )
    date, table = with_overrides(base, {"m": {"output": 9.0}, "new": {"input": 4.0}})
    assert date == "2026-01-01 + config"
    assert table["m"] == {**base[1]["m"], "output": 9.0}
    assert table["new"] == {
        "input": 4.0,
        "output": 0.0,
        "cache_read": 0.0,
        "cache_write_5m": 0.0,
        "cache_write_1h": 0.0,
    }
    assert with_overrides(base, {}) is base

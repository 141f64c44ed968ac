"""The light reader of the settings a read needs agrees with the full pydantic model, for every
source (defaults, TOML file, HELIX_* environment, HELIX_STORE_DB) and names what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helixd import config
from helixd.configkeys import ConfigError
from helixd.readconfig import BUDGET_KEYS, ReadConfig, read_config

CASES: list[tuple[str, str, dict[str, str]]] = [
    ("defaults", "", {}),
    ("store in file", '[store]\ndb = "/srv/h.db"\n', {}),
    ("store with tilde", '[store]\ndb = "~/mem/h.db"\n', {}),
    ("HELIX_STORE_DB wins over file", '[store]\ndb = "/a.db"\n', {"HELIX_STORE_DB": "/b.db"}),
    ("HELIX_STORE__DB", "", {"HELIX_STORE__DB": "/c.db"}),
    ("both env names", "", {"HELIX_STORE__DB": "/c.db", "HELIX_STORE_DB": "/d.db"}),
    ("lower-case env name", "", {"helix_store__db": "/e.db"}),
    ("HELIX_STORE_DB is read as written", "", {"helix_store_db": "/f.db"}),
    (
        "budgets with units",
        '[retention]\nraw_soft_cap_bytes = "512MiB"\nraw_hard_cap_bytes = 1000000000\n',
        {"HELIX_RETENTION__DISTILLED_CAP_BYTES": "2GB"},
    ),
    (
        "prices",
        '[prices]\ntable = "~/p.json"\n[prices.models."m-1"]\ninput = 1.5\noutput = 2\n',
        {},
    ),
    (
        "agents",
        '[agents.claude]\nroots = ["~/x", "/y"]\n[agents.codex]\nenabled = false\n',
        {"HELIX_AGENTS__GROK__ROOTS": '["/g"]', "HELIX_AGENTS__GEMINI__ENABLED": "false"},
    ),
    ("unrelated keys ignored", '[daemon]\ndebounce_ms = 5\n[ingest]\nchunk_bytes = "1MiB"\n', {}),
    (
        "fleet",
        '[fleet]\ndsn = "host=/run/pg dbname=helix user=me"\nmachine = "ci-7"\n'
        'password_file = "~/.fleet-pw"\noutbox_warn_rows = 10\n',
        {"HELIX_FLEET__USER": "bot", "HELIX_FLEET__CONNECT_TIMEOUT_SECONDS": "3"},
    ),
    ("fleet password env is not a key", "", {"HELIX_FLEET_PASSWORD": "x"}),
    # The design spec's names (§5.1, §11.2) are read as Helix's.
    (
        "spec-shaped file",
        '[store]\ndb_path = "/spec/mem.db"\n[session_memory.retention]\n'
        'raw_soft_cap_bytes = "1GiB"\ndistilled_cap_bytes = "2GiB"\ncadence = "weekly"\n',
        {},
    ),
    # Forms the light reader does not interpret itself: it builds the full model.
    ("whole section as JSON", "", {"HELIX_STORE": '{"db": "/json.db"}'}),
    ("one model's price from env", "", {"HELIX_PRICES__MODELS__X__INPUT": "3"}),
]


def _comparable(rc: ReadConfig) -> dict[str, object]:
    return {
        "db": rc.store_db,
        "table": rc.prices_table,
        "overrides": {m: dict(v) for m, v in rc.price_overrides.items()},
        "budgets": dict(rc.budgets),
        "agents": {n: (a.enabled, a.roots) for n, a in rc.agents.items()},
        "fleet": (
            rc.fleet.dsn,
            rc.fleet.password_file,
            rc.fleet.machine,
            rc.fleet.user,
            rc.fleet.outbox_warn_rows,
            rc.fleet.connect_timeout_seconds,
        ),
    }


def _full(cfg: Path | None) -> dict[str, object]:
    s = config.load(cfg)
    return {
        "db": s.store.db,
        "table": s.prices.table.expanduser() if s.prices.table else None,
        "overrides": s.prices.overrides(),
        "budgets": {k: getattr(s.retention, k) for k in BUDGET_KEYS},
        "agents": {
            n: (a.enabled, tuple(r.expanduser() for r in a.roots)) for n, a in s.agents.items()
        },
        "fleet": (
            s.fleet.dsn,
            s.fleet.password_file,
            s.fleet.machine,
            s.fleet.user,
            s.fleet.outbox_warn_rows,
            s.fleet.connect_timeout_seconds,
        ),
    }


@pytest.mark.parametrize(("name", "toml", "env"), CASES, ids=[c[0] for c in CASES])
def test_the_light_reader_agrees_with_the_full_model(
    name: str, toml: str, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in __import__("os").environ if k.upper().startswith("HELIX_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cfg = None
    if toml:
        cfg = tmp_path / "config.toml"
        cfg.write_text(toml)
    light = _comparable(read_config(cfg))
    assert light == _full(cfg)
    assert light["db"] != Path("~") and "~" not in str(light["db"])


@pytest.mark.parametrize(
    ("toml", "env", "says"),
    [
        ("[store]\ndb = 3\n", {}, "db in [store]"),
        ('[retention]\nraw_soft_cap_bytes = "lots"\n', {}, "raw_soft_cap_bytes in [retention]"),
        ("", {"HELIX_RETENTION__RAW_HARD_CAP_BYTES": "9 parsecs"}, "HELIX_RETENTION__RAW_HARD"),
        ('[agents.claude]\nroots = "/x"\n', {}, "roots in [agents.claude]"),
        ("", {"HELIX_AGENTS__CLAUDE__ROOTS": "/x"}, "HELIX_AGENTS__CLAUDE__ROOTS"),
        ('[prices.models."m"]\ninptu = 1\n', {}, "inptu in [prices.models"),
        ("[store\n", {}, "not TOML"),
        ("[fleet]\ndsn = 5\n", {}, "dsn in [fleet]"),
        ("", {"HELIX_FLEET__OUTBOX_WARN_ROWS": "many"}, "HELIX_FLEET__OUTBOX_WARN_ROWS"),
        ("[fleet]\ndsn = 'postgresql://u:pw@h/db'\n", {}, "must not carry a password"),
    ],
)
def test_a_bad_value_names_its_key_and_where_it_was_set(
    toml: str, env: dict[str, str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cfg = tmp_path / "config.toml"
    cfg.write_text(toml)
    with pytest.raises(ConfigError, match=r".*") as err:
        read_config(cfg)
    assert says in str(err.value)


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        read_config(tmp_path / "nope.toml")


def test_reading_the_read_settings_does_not_import_pydantic(tmp_path: Path) -> None:
    code = (
        "import sys; from helixd.readconfig import read_config; read_config();"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('pydantic', 'pydantic_settings', 'aiosqlite', 'structlog', 'rich')))"
    )
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_known_keys_are_the_models_keys() -> None:
    from helixd.configkeys import AGENT_KEYS, KNOWN_KEYS

    model = config.Settings.model_fields
    assert set(KNOWN_KEYS) == set(model)
    for section, keys in KNOWN_KEYS.items():
        if section == "agents":
            assert set(config.AgentSettings.model_fields) == AGENT_KEYS
            continue
        annotation = model[section].annotation
        assert keys == set(annotation.model_fields), section  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("[store]\ndbpath = '/x'\n", "unknown key 'dbpath' in [store]; did you mean 'db'?"),
        ("[retenton]\n", "unknown section [retenton]; did you mean 'retention'?"),
        ("[agents.claude]\nroot = []\n", "unknown key 'root' in [agents.claude]; did you mean"),
        ("[daemon]\ndebounce = 5\n", "did you mean 'debounce_ms'?"),
    ],
)
def test_a_typo_names_the_key_its_section_and_the_closest_valid_key(
    toml: str, says: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(toml)
    with pytest.raises(ConfigError) as err:
        read_config(cfg)
    assert says in str(err.value)


def test_the_spec_names_set_the_same_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[store]\ndb_path = "/spec/mem.db"\n[session_memory.retention]\n'
        'raw_soft_cap_bytes = "1GiB"\nraw_max_age_days = 7\ncadence = "daily"\n'
    )
    s = config.load(cfg)
    assert s.store.db == Path("/spec/mem.db")
    assert s.retention.raw_soft_cap_bytes == 1024**3 and s.retention.raw_max_age_days == 7
    assert s.daemon.evict_seconds == 86_400
    assert read_config(cfg, {}).store_db == Path("/spec/mem.db")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[store]\ndb = "/a.db"\ndb_path = "/b.db"\n', ["db_path in [store]", "same key"]),
        (
            "[retention]\nraw_max_age_days = 3\n[session_memory.retention]\nraw_max_age_days = 4\n",
            ["raw_max_age_days in [session_memory.retention]", "same key"],
        ),
        ('[session_memory.retention]\ncadence = "on-hook"\n', ["on-hook", "evict_seconds"]),
        ("[session_memory.sources]\nx = 1\n", ["[session_memory.sources]", "[retention]"]),
    ],
)
def test_a_spec_name_without_a_helix_meaning_is_refused_in_words(
    tmp_path: Path, text: str, words: list[str]
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    for load in (lambda: config.load(cfg), lambda: read_config(cfg, {})):
        with pytest.raises(ConfigError) as err:
            load()
        assert all(w in str(err.value) for w in words), str(err.value)

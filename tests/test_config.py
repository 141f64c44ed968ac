"""Settings: the example file loads, and every override path works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helixd import config
from helixd.adapters.declared import claude
from tests.conftest import REPO, cli_env

EXAMPLE = REPO / "helixd" / "data" / "helix.example.toml"


def test_example_config_loads_and_matches_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HELIX_STORE_DB", raising=False)
    loaded = config.load(EXAMPLE)
    defaults = config.Settings()
    assert loaded.ingest == defaults.ingest
    assert loaded.store == defaults.store
    assert loaded.daemon == defaults.daemon
    assert loaded.retention == defaults.retention
    assert loaded.fleet == defaults.fleet
    assert loaded.agent("claude").enabled and loaded.agent("claude").roots == []


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[store]\ndb = "/from/file.db"\n[ingest]\nchunk_bytes = "1MiB"\n')
    assert config.load(cfg).store.db == Path("/from/file.db")
    assert config.load(cfg).ingest.chunk_bytes == 1024 * 1024
    monkeypatch.setenv("HELIX_STORE_DB", str(tmp_path / "env.db"))
    monkeypatch.setenv("HELIX_INGEST__CHUNK_BYTES", "2MB")
    s = config.load(cfg)
    assert s.store.db == tmp_path / "env.db"
    assert s.ingest.chunk_bytes == 2_000_000


def test_default_store_is_in_the_user_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HELIX_STORE_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert config.load().store.db == tmp_path / "data" / "helix" / "helix.db"


@pytest.mark.parametrize(
    "bad", ['[ingest]\nchunk_bytes = "lots"\n', "[nope]\nx = 1\n", "not toml ["]
)
def test_invalid_config_is_a_clear_error(tmp_path: Path, bad: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(bad)
    with pytest.raises(config.ConfigError, match=str(cfg)):
        config.load(cfg)


def test_invalid_config_exits_2_from_the_cli(tmp_path: Path) -> None:
    """A command that uses the whole configuration validates all of it (a read command
    checks the keys' names and the values it uses: tests/test_readconfig.py)."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[ingest]\nchunk_bytes = "lots"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "--config", str(cfg), "ingest"],
        env=cli_env(tmp_path, tmp_path / "s.db"),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2 and "chunk_bytes" in proc.stderr


def test_claude_roots_honour_claude_config_dir(tmp_path: Path) -> None:
    home = tmp_path
    assert claude.default_roots({}, home) == [
        home / ".claude/projects",
        home / ".config/claude/projects",
    ]
    env = {"CLAUDE_CONFIG_DIR": "/a/one, /b/two"}
    assert claude.default_roots(env, home) == [Path("/a/one/projects"), Path("/b/two/projects")]


def test_configured_roots_replace_the_defaults(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[agents.claude]\nroots = ["{tmp_path}/x"]\n')
    pairs = config.agent_roots(config.load(cfg), [claude.ADAPTER], {}, tmp_path)
    assert [root for _, root in pairs] == [tmp_path / "x"]


FULL_MODEL_CASES = [
    (
        "[daemon]\ndebounce_msec = 5\n",
        {},
        "unknown key 'debounce_msec' in [daemon]; did you mean 'debounce_ms'?",
    ),
    (
        "[agents.claude]\nroot = ['/x']\n",
        {},
        "unknown key 'root' in [agents.claude]; did you mean 'roots'?",
    ),
    ("[daemon]\nwatch = 'maybe'\n", {}, "watch in [daemon] of {cfg}: want true or false"),
    (
        '[prices.models."gpt-5"]\ninput = -1\n',
        {},
        "] of {cfg}: want",  # the read settings and the model word it alike: "input in
        # [prices.models.gpt-5] of FILE: want a value >= 0, got -1"
    ),
    ("", {"HELIX_DAEMON__DEBOUNCE_MS": "abc"}, "HELIX_DAEMON__DEBOUNCE_MS: want a whole number"),
    (
        "",
        {"HELIX_DAEMON__DEBOUNCEMS": "5"},
        "unknown key 'debouncems' in [daemon] of HELIX_DAEMON__DEBOUNCEMS;"
        " did you mean 'debounce_ms'?",
    ),
]


@pytest.mark.parametrize(("text", "env", "said"), FULL_MODEL_CASES)
@pytest.mark.parametrize("command", [["config", "check"], ["ingest"], ["evict", "--dry-run"]])
def test_the_full_model_names_the_key_its_section_and_the_closest_valid_key(
    tmp_path: Path, text: str, env: dict[str, str], said: str, command: list[str]
) -> None:
    """Issue 14: a config typo read by the full model (daemon, ingest, analyze, evict, doctor)
    says what the read commands say, in plain words, without pydantic's internals."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "--config", str(cfg), *command],
        env={**cli_env(tmp_path, tmp_path / "s.db"), **env},
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2, proc.stderr
    assert said.format(cfg=cfg) in proc.stderr
    for internal in ("validation error", "errors.pydantic.dev", "input_type", "BoundSettings"):
        assert internal not in proc.stderr


def test_the_daemon_names_a_config_typo_in_plain_words(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[retention]\nraw_soft_cap = '1GiB'\n")
    proc = subprocess.run(
        [sys.executable, "-m", "helixd.daemon.app", "--config", str(cfg), "--once"],
        env=cli_env(tmp_path, tmp_path / "s.db"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "unknown key 'raw_soft_cap' in [retention]" in proc.stderr
    assert "did you mean 'raw_soft_cap_bytes'?" in proc.stderr
    assert "validation error" not in proc.stderr

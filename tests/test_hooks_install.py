"""Issue 5, item 3: ``helixctl hooks install|uninstall|status`` on copies of realistic
settings files in a temporary HOME (the real CLI, in process through tests/cli_runner.py)."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from helixd.cli.main import main
from tests.cli_runner import CliRunner, Result

HOOKS = Path(__file__).parent / "fixtures" / "hooks"
EXE = "/opt/helix/bin/helixctl"
AGENT_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GROK_HOME", "GEMINI_CLI_HOME", "XDG_STATE_HOME")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    for d in (".claude", ".codex", ".grok", ".gemini"):
        (h / d).mkdir(parents=True)
    shutil.copy(HOOKS / "claude-settings.json", h / ".claude" / "settings.json")
    shutil.copy(HOOKS / "codex-config.toml", h / ".codex" / "config.toml")
    shutil.copy(HOOKS / "codex-hooks.json", h / ".codex" / "hooks.json")
    shutil.copy(HOOKS / "gemini-settings.json", h / ".gemini" / "settings.json")
    return h


Run = Callable[..., Result]


@pytest.fixture
def helixctl(home: Path, tmp_path: Path) -> Run:
    env: dict[str, str | None] = {k: None for k in AGENT_ENV}
    env |= {"HOME": str(home), "HELIX_STATE_DIR": str(tmp_path / "state")}

    def run(*args: str, extra: dict[str, str] | None = None) -> Result:
        argv = [*args, "--helixctl", EXE]
        return CliRunner().invoke(main, argv, env={**env, **(extra or {})})

    return run


def files(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


def backups(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state").rglob("*.*Z"))


def ours(cmd: str) -> str:
    return f"{EXE} hook {cmd}"


def test_install_adds_each_agents_entries_and_keeps_every_other_hook(
    home: Path, helixctl: Run
) -> None:
    result = helixctl("hooks", "install")
    assert result.exit_code == 0, result.output
    claude = json.loads((home / ".claude/settings.json").read_text())
    before = json.loads((HOOKS / "claude-settings.json").read_text())
    assert claude["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    assert claude["hooks"]["Stop"][0] == before["hooks"]["Stop"][0]  # the user's stays first
    assert claude["hooks"]["Stop"][1]["hooks"][0] == {
        "type": "command",
        "command": ours("claude"),
        "async": True,
        "timeout": 10,
    }
    for event in ("SessionStart", "SessionEnd"):
        assert claude["hooks"][event][0]["hooks"][0]["command"] == ours("claude")
    assert {k: v for k, v in claude.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    assert list(claude) == list(before)  # key order kept
    codex_hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert codex_hooks["SessionEnd"][0]["hooks"][0] == {
        "type": "command",
        "command": ours("codex"),
        "timeout": 3,
    }
    assert codex_hooks["SessionStart"][0]["matcher"] == "startup|resume|clear"
    gemini = json.loads((home / ".gemini/settings.json").read_text())["hooks"]
    names = {e: g[-1]["hooks"][0]["name"] for e, g in gemini.items() if e != "BeforeTool"}
    assert names == {
        "SessionStart": "helix-session-start",
        "AfterAgent": "helix-after-agent",
        "SessionEnd": "helix-session-end",
    }
    assert gemini["SessionEnd"][0]["hooks"][0]["timeout"] == 3000
    grok = json.loads((home / ".grok/hooks/helix.json").read_text())["hooks"]
    assert sorted(grok) == ["SessionEnd", "SessionStart", "Stop"]
    assert "Codex runs new hooks only once trusted" in result.output


def test_a_second_install_changes_no_byte_and_makes_no_backup(
    home: Path, helixctl: Run, tmp_path: Path
) -> None:
    assert helixctl("hooks", "install").exit_code == 0
    first, stats = files(home), {p: p.stat().st_mtime_ns for p in home.rglob("*") if p.is_file()}
    made = backups(tmp_path)
    again = helixctl("hooks", "install")
    assert again.exit_code == 0
    assert files(home) == first
    assert {p: p.stat().st_mtime_ns for p in home.rglob("*") if p.is_file()} == stats
    assert backups(tmp_path) == made
    assert again.output.count("already installed") == 5


def test_uninstall_restores_every_file_byte_for_byte(
    home: Path, helixctl: Run, tmp_path: Path
) -> None:
    before = files(home)
    assert helixctl("hooks", "install").exit_code == 0
    assert files(home) != before
    result = helixctl("hooks", "uninstall")
    assert result.exit_code == 0, result.output
    assert files(home) == before  # the owned Grok file is gone again
    assert helixctl("hooks", "uninstall").output.count("no Helix entries") == 5


def test_backups_hold_the_previous_bytes(home: Path, helixctl: Run, tmp_path: Path) -> None:
    before = files(home)
    assert helixctl("hooks", "install").exit_code == 0
    saved = {p.parent.name + "/" + p.name.split(".", 1)[0]: p for p in backups(tmp_path)}
    assert saved["claude/settings"].read_bytes() == before[".claude/settings.json"]
    assert saved["codex/config"].read_bytes() == before[".codex/config.toml"]
    assert saved["codex/hooks"].read_bytes() == before[".codex/hooks.json"]
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in saved.values())


def test_codex_notify_chains_the_users_program_and_gives_it_back(home: Path, helixctl: Run) -> None:
    config = home / ".codex/config.toml"
    assert helixctl("hooks", "install", "codex").exit_code == 0
    text = config.read_text()
    assert tomllib.loads(text)["notify"] == [
        EXE,
        "hook",
        "codex-notify",
        "--then",
        "terminal-notifier",
        "-title",
        "Codex",
        "-group",
        "codex",
    ]
    assert "# Desktop notification when a turn completes." in text
    assert "hooks = true   # Codex ≥ 0.125" in text
    # An upgrade moved helixctl: the entry is updated, the user's program still chained.
    moved = CliRunner().invoke(
        main,
        ["hooks", "install", "codex", "--helixctl", "/new/bin/helixctl"],
        env={"HOME": str(home), "CODEX_HOME": None, "HELIX_STATE_DIR": str(home / "st")},
    )
    assert moved.exit_code == 0, moved.output
    notify = tomllib.loads(config.read_text())["notify"]
    assert notify[:4] == ["/new/bin/helixctl", "hook", "codex-notify", "--then"]
    assert notify[4:] == ["terminal-notifier", "-title", "Codex", "-group", "codex"]
    assert helixctl("hooks", "uninstall", "codex").exit_code == 0
    assert config.read_bytes() == (HOOKS / "codex-config.toml").read_bytes()


def test_codex_notify_is_added_before_the_first_table_and_removed_cleanly(
    home: Path, helixctl: Run
) -> None:
    config = home / ".codex/config.toml"
    original = '# only comments and a table\nmodel = "o3"\n\n[tui]\nnotifications = true\n'
    config.write_text(original)
    assert helixctl("hooks", "install", "codex").exit_code == 0
    parsed = tomllib.loads(config.read_text())
    assert parsed["notify"] == [EXE, "hook", "codex-notify"]
    assert "notify" not in parsed["tui"]
    assert helixctl("hooks", "uninstall", "codex").exit_code == 0
    assert config.read_text() == original


def test_a_stale_helix_entry_is_replaced_where_it_was(home: Path, helixctl: Run) -> None:
    settings = home / ".claude/settings.json"
    doc = json.loads(settings.read_text())
    old = {"type": "command", "command": "'/old/venv/bin/helixctl' hook claude", "timeout": 5}
    doc["hooks"]["Stop"].insert(0, {"hooks": [old]})
    settings.write_text(json.dumps(doc, indent=2) + "\n")
    assert helixctl("hooks", "status", "claude").output.split()[1] == "outdated"
    assert helixctl("hooks", "install", "claude").exit_code == 0
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert len(stop) == 2
    assert stop[0]["hooks"][0]["command"] == ours("claude")  # in the old entry's place
    assert stop[1]["hooks"][0]["command"].startswith("afplay")
    assert helixctl("hooks", "status", "claude").output.split()[1] == "installed"


@pytest.mark.parametrize(
    ("agent", "name", "dest", "message"),
    [
        ("claude", "claude-settings-malformed.json", ".claude/settings.json", "not valid JSON"),
        ("gemini", "gemini-settings-comments.json", ".gemini/settings.json", "has comments"),
    ],
)
def test_an_unparseable_file_is_refused_and_nothing_is_written(
    home: Path, helixctl: Run, tmp_path: Path, agent: str, name: str, dest: str, message: str
) -> None:
    shutil.copy(HOOKS / name, home / dest)
    before = files(home)
    result = helixctl("hooks", "install")  # every agent: the others are not written either
    assert result.exit_code == 2
    assert message in result.output and "nothing was written" in result.output
    assert files(home) == before
    assert backups(tmp_path) == []
    if agent == "gemini":  # the snippet to paste by hand
        assert '"name": "helix-session-start"' in result.output
    assert helixctl("hooks", "uninstall", agent).exit_code == 2
    assert files(home) == before
    assert "unreadable" in helixctl("hooks", "status", agent).output


def test_malformed_toml_is_refused(home: Path, helixctl: Run) -> None:
    config = home / ".codex/config.toml"
    config.write_text('model = "o3"\nnotify = ["a", \n[tui\n')
    before = config.read_bytes()
    result = helixctl("hooks", "install", "codex")
    assert result.exit_code == 2 and "not valid TOML" in result.output
    assert config.read_bytes() == before


@pytest.mark.parametrize("text", ["[1, 2]\n", '{"hooks": []}\n', '{"a": 1, "a": 2}\n'])
def test_json_of_the_wrong_shape_is_refused(home: Path, helixctl: Run, text: str) -> None:
    (home / ".claude/settings.json").write_text(text)
    assert helixctl("hooks", "install", "claude").exit_code == 2
    assert (home / ".claude/settings.json").read_text() == text


def test_dry_run_prints_a_diff_and_writes_nothing(
    home: Path, helixctl: Run, tmp_path: Path
) -> None:
    before = files(home)
    result = helixctl("hooks", "install", "--dry-run")
    assert result.exit_code == 0
    assert files(home) == before and backups(tmp_path) == []
    assert f"--- a{home}/.claude/settings.json" in result.output
    assert f'+            "command": "{ours("claude")}",' in result.output
    assert (
        "--- /dev/null" in result.output and f"+++ b{home}/.grok/hooks/helix.json" in result.output
    )
    assert '+notify = ["/opt/helix/bin/helixctl", "hook", "codex-notify", "--then"' in result.output
    assert helixctl("hooks", "install").exit_code == 0
    installed = files(home)
    undo = helixctl("hooks", "uninstall", "--dry-run")
    assert files(home) == installed
    assert f'-            "command": "{ours("claude")}",' in undo.output


def test_new_settings_file_mode_and_symlinks(home: Path, helixctl: Run, tmp_path: Path) -> None:
    settings = home / ".claude/settings.json"
    settings.chmod(0o640)
    real = tmp_path / "dotfiles" / "gemini.json"
    real.parent.mkdir()
    shutil.move(home / ".gemini/settings.json", real)
    (home / ".gemini/settings.json").symlink_to(real)
    assert helixctl("hooks", "install", "claude", "gemini").exit_code == 0
    assert settings.stat().st_mode & 0o777 == 0o640
    assert (home / ".gemini/settings.json").is_symlink()
    assert "helix-session-end" in real.read_text()
    assert sorted(os.listdir(home / ".claude")) == ["settings.json"]  # no temp file left


def test_only_installed_agents_unless_named_and_config_dirs_honoured(
    tmp_path: Path, helixctl: Run
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    conf = tmp_path / "claude-a"
    env = {"HOME": str(bare), "CLAUDE_CONFIG_DIR": f"{conf},{tmp_path / 'claude-b'}"}
    result = helixctl("hooks", "install", extra=env)
    assert result.exit_code == 0
    assert "codex: skipped" in result.output and "grok: skipped" in result.output
    assert not (conf / "settings.json").exists()
    assert helixctl("hooks", "install", "claude", extra=env).exit_code == 0
    assert ours("claude") in (conf / "settings.json").read_text()
    assert not (tmp_path / "claude-b").exists()
    unknown = helixctl("hooks", "install", "cursor", extra=env)
    assert unknown.exit_code == 2 and "unknown agent 'cursor'" in unknown.output


def test_status_reports_each_file(home: Path, helixctl: Run) -> None:
    result = helixctl("hooks", "status", "--json")
    rows = {(r["agent"], Path(r["path"]).name): r["state"] for r in json.loads(result.output)}
    assert rows == {
        ("claude", "settings.json"): "absent",
        ("codex", "config.toml"): "absent",
        ("codex", "hooks.json"): "absent",
        ("grok", "helix.json"): "absent",
        ("gemini", "settings.json"): "absent",
    }
    helixctl("hooks", "install")
    assert {r["state"] for r in json.loads(helixctl("hooks", "status", "--json").output)} == {
        "installed"
    }


def test_a_four_space_file_keeps_its_indent_and_a_spaced_path_is_quoted(
    home: Path, tmp_path: Path
) -> None:
    settings = home / ".claude/settings.json"
    original = json.dumps(json.loads((HOOKS / "claude-settings.json").read_text()), indent=4)
    settings.write_text(original)  # no final newline either
    exe = "/Users/Jane Doe/.local/bin/helixctl"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": None, "HELIX_STATE_DIR": str(tmp_path / "s")}

    def run(action: str) -> Result:
        return CliRunner().invoke(main, ["hooks", action, "claude", "--helixctl", exe], env=env)

    assert run("install").exit_code == 0
    text = settings.read_text()
    assert '\n    "hooks": {\n        "PreToolUse"' in text and not text.endswith("\n")
    handler = json.loads(text)["hooks"]["SessionEnd"][0]["hooks"][0]
    assert handler["command"] == "'/Users/Jane Doe/.local/bin/helixctl' hook claude"
    assert "already installed" in run("install").output
    assert run("uninstall").exit_code == 0
    assert settings.read_text() == original


def test_uninstall_removes_what_install_created_and_nothing_else(
    tmp_path: Path, helixctl: Run
) -> None:
    """Issue 14: uninstall left ``{}`` in a settings file install had created, and the
    directories install had made (Grok's ``hooks/``, a new config dir)."""
    bare = tmp_path / "bare"
    (bare / ".grok").mkdir(parents=True)
    (bare / ".gemini").mkdir()
    (bare / ".gemini" / "settings.json").write_text("{}\n")  # the user's own, kept
    conf = tmp_path / "nested" / "claude-config"
    env = {"HOME": str(bare), "CLAUDE_CONFIG_DIR": str(conf)}
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert helixctl("hooks", "install", "claude", "grok", "gemini", extra=env).exit_code == 0
    assert (conf / "settings.json").is_file() and (bare / ".grok/hooks/helix.json").is_file()
    dry = helixctl("hooks", "uninstall", "claude", "--dry-run", extra=env)
    assert "+++ /dev/null" in dry.output
    done = helixctl("hooks", "uninstall", "claude", "grok", "gemini", extra=env)
    assert done.exit_code == 0, done.output
    after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    state = [p for p in after if p.split("/")[0] == "state"]  # backups live there
    assert [p for p in after if p not in state] == [p for p in before if p not in state]
    assert (bare / ".gemini" / "settings.json").read_text() == "{}\n"
    assert not (tmp_path / "state" / "hooks-created.json").exists()


def test_a_directory_the_user_filled_meanwhile_stays(tmp_path: Path, helixctl: Run) -> None:
    bare = tmp_path / "bare"
    (bare / ".grok").mkdir(parents=True)
    env = {"HOME": str(bare)}
    assert helixctl("hooks", "install", "grok", extra=env).exit_code == 0
    (bare / ".grok/hooks/mine.json").write_text("{}")
    assert helixctl("hooks", "uninstall", "grok", extra=env).exit_code == 0
    assert sorted(os.listdir(bare / ".grok/hooks")) == ["mine.json"]


@pytest.mark.parametrize(
    "text",
    [
        '{"model":"opus","env":{"A":"1"},'
        '"hooks":{"Stop":[{"hooks":[{"type":"command","command":"say hi"}]}]}}',
        '{"model": "opus", "permissions": {"allow": ["Bash(ls:*)"]}}\n',
    ],
)
def test_a_one_line_file_stays_on_one_line_and_comes_back_byte_for_byte(
    home: Path, helixctl: Run, text: str
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.write_text(text)
    assert helixctl("hooks", "install", "claude").exit_code == 0
    installed = settings.read_text()
    assert len(installed.strip().splitlines()) == 1 and ours("claude") in installed
    assert json.loads(installed)["model"] == "opus"
    assert helixctl("hooks", "uninstall", "claude").exit_code == 0
    assert settings.read_text() == text

"""Issue 14: ``helixctl statusline`` — the line Claude Code's ``statusLine`` shows, through the
real executable on a real store, with the JSON Claude Code pipes in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, cli_env

NOW_MS = int(time.time() * 1000)
SID = "eeeeeeee-0000-4000-8000-000000000001"
OTHER = "ffffffff-0000-4000-8000-000000000002"
HELIXCTL = str(Path(sys.executable).parent / "helixctl")
STATUSLINE = str(Path(sys.executable).parent / "helix-statusline")


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _assistant(sid: str, n: int, ms: int, tokens: int, **extra: object) -> str:
    return (
        json.dumps(
            {
                "type": "assistant",
                "sessionId": sid,
                "cwd": "/work/app",
                "timestamp": _iso(ms),
                "uuid": f"{sid}-{n}-{extra.get('agentId', '')}",
                "requestId": f"req-{sid}-{n}-{extra.get('agentId', '')}",
                "message": {
                    "id": f"msg-{sid}-{n}-{extra.get('agentId', '')}",
                    "model": "claude-sonnet-4-5-20250929",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": {"input_tokens": tokens, "output_tokens": 1000},
                },
                **extra,
            }
        )
        + "\n"
    )


KEEP = "HELIX_RETENTION__RAW_MAX_AGE_DAYS"  # set by cli_env; not a setting of the line


@pytest.fixture
def store(home: Path, helixctl: RunCli) -> RunCli:
    global NOW_MS  # the test's now, not the collection's: the last hour is relative to it
    NOW_MS = int(time.time() * 1000)
    project = home / ".claude" / "projects" / "-work-app"
    (project / SID / "subagents").mkdir(parents=True)
    # this session: 2 responses in the last minutes, one two hours ago (today or not)
    (project / f"{SID}.jsonl").write_text(
        _assistant(SID, 0, NOW_MS - 2 * 3600_000, 100_000)
        + _assistant(SID, 1, NOW_MS - 120_000, 200_000)
        + _assistant(SID, 2, NOW_MS - 60_000, 300_000)
    )
    # its subagent: counted in the session's spend
    (project / SID / "subagents" / "agent-abc.jsonl").write_text(
        _assistant(SID, 0, NOW_MS - 90_000, 50_000, isSidechain=True, agentId="abc")
    )
    # another session, three days ago: in no figure of today
    (project / f"{OTHER}.jsonl").write_text(_assistant(OTHER, 0, NOW_MS - 3 * 86400_000, 10**6))
    helixctl("ingest", "--json")
    return helixctl


def usd(input_tokens: int, responses: int) -> float:
    return (input_tokens * 3.0 + responses * 1000 * 15.0) / 1e6


def statusline(run: RunCli, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STATUSLINE],
        input=stdin,
        env={**run.env, **env},  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


def test_the_line_shows_this_sessions_spend_todays_and_the_burn_rate(store: RunCli) -> None:
    done = statusline(store, json.dumps({"session_id": SID, "model": {"id": "x"}}))
    assert done.returncode == 0 and done.stderr == ""
    line = done.stdout
    assert line.count("\n") == 1
    session = usd(650_000, 4)  # 3 responses of its own, 1 of its subagent
    assert f"session ${session:,.2f} · 654k tok" in line
    from datetime import datetime

    midnight = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    early_today = midnight * 1000 <= NOW_MS - 2 * 3600_000
    today = usd(650_000, 4) if early_today else usd(550_000, 3)
    assert f"today ${today:,.2f}" in line
    assert f"${usd(550_000, 3):,.2f}/h" in line  # the last hour: the three recent responses


def test_a_session_not_in_the_store_and_bad_input_still_give_a_line(store: RunCli) -> None:
    unknown = statusline(store, json.dumps({"session_id": "not-yet"}))
    assert unknown.returncode == 0 and "session not ingested yet" in unknown.stdout
    for stdin in ("", "{not json", "[1, 2]", '{"session_id": 5}', "\x00{}"):
        done = statusline(store, stdin)
        assert done.returncode == 0 and "today $" in done.stdout and "session" not in done.stdout


def test_no_store_says_so_and_exits_0(tmp_path: Path) -> None:
    env = cli_env(tmp_path, tmp_path / "none" / "helix.db")
    done = subprocess.run(
        [HELIXCTL, "statusline"], input="{}", env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("helix: no store at")


def test_the_click_command_prints_the_same_line(store: RunCli) -> None:
    """``helixctl --config FILE statusline`` goes through the CLI: the same line."""
    direct = statusline(store, json.dumps({"session_id": SID})).stdout
    via = subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "statusline"],
        input=json.dumps({"session_id": SID}),
        env=store.env,  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert via.stdout.split("◆")[:2] == direct.split("◆")[:2]


# What ``helix-statusline`` may load beyond the interpreter's start-up: sqlite3 (with the
# datetime adapters its dbapi2 registers) and three small modules of Helix.  A new import of
# pathlib, typing, re, enum, json, dataclasses (or anything heavier) fails this test.
ALLOWED = {
    "helixd",
    "helixd.statusline",
    "helixd.store",
    "helixd.store.now_queries",
    "helixd.store.readonly",
    "sqlite3",
    "sqlite3.dbapi2",
    "_sqlite3",
    "datetime",
    "_datetime",
    "math",
    "collections.abc",
    "__future__",
}


def test_the_status_line_loads_only_what_it_uses(store: RunCli) -> None:
    """Claude Code runs it after every message: with the price memo warm (the first line of
    the day builds it), the line loads sqlite3 and three small modules, nothing else."""
    env = {k: v for k, v in store.env.items() if k != KEEP}  # type: ignore[attr-defined]
    subprocess.run([STATUSLINE], input=b"{}", env=env, check=True, capture_output=True)
    code = (
        "import sys; sys.argv = ['helix-statusline']; before = set(sys.modules)\n"
        "from helixd.statusline import run\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(set(sys.modules) - before), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps({"session_id": SID}),
        env=env,  # only the store is set: the retention setting cli_env adds is not the line's
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "session $" in done.stdout
    loaded = set(
        json.loads(done.stderr.split("LOADED ", 1)[1].replace("'", '"'))  # a list of names
    )
    assert loaded - ALLOWED == set(), done.stderr[-2000:]
    assert not loaded & {"pathlib", "typing", "re", "enum", "json", "dataclasses"}


def imported(cmd: list[str], env: dict[str, str], stdin: str) -> set[str]:
    """The modules a process imports (``-X importtime``), start-up included."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [r.split("|") for r in done.stderr.splitlines() if r.startswith("import time:")]
    return {r[2].strip() for r in rows[1:]}  # the first row is the header


def test_the_installed_script_imports_no_more_than_the_line(store: RunCli) -> None:
    """The executable ``hooks install --statusline`` sets up, whole process: beyond what
    the interpreter loads for ``-c pass``, only the line's modules (a console-script
    wrapper would import ``re`` first)."""
    env = {k: v for k, v in store.env.items() if k != KEEP}  # type: ignore[attr-defined]
    stdin = json.dumps({"session_id": SID})
    imported([STATUSLINE], env, stdin)  # the memo warm
    extra = imported([STATUSLINE], env, stdin) - imported(["-c", "pass"], env, "")
    assert extra and extra - ALLOWED == set(), extra


def memo(home: Path) -> Path:
    return home / ".cache" / "helix" / "statusline-prices.tsv"


def own_cache(home: Path) -> dict[str, str]:
    """The environment of a line whose cache directory is this test's own (the session's
    flattened genai-prices data copied in: flattening it again takes a second)."""
    shared = Path(os.environ["XDG_CACHE_HOME"], "helix", "genai-prices")
    if shared.is_dir():
        shutil.copytree(shared, home / ".cache" / "helix" / "genai-prices")
    return {"XDG_CACHE_HOME": str(home / ".cache")}


def test_the_memo_prices_the_line_and_a_changed_key_rebuilds_it(home: Path, store: RunCli) -> None:
    """The price memo is what prices the line (a price written into it shows), and only
    under its key: another key (another day, other price data) is ignored and rewritten."""
    stdin, env = json.dumps({"session_id": OTHER}), own_cache(home)
    first = statusline(store, stdin, **env).stdout
    assert f"session ${usd(10**6, 1):,.2f}" in first
    key, *rows = memo(home).read_text().splitlines()
    assert memo(home).stat().st_mode & 0o077 == 0
    model = "claude-sonnet-4-5-20250929"
    assert [r.split("\t")[0] for r in rows] == [model]
    memo(home).write_text(f"{key}\n{model}\t10.0\t15.0\t0.3\t3.75\t6.0\n")
    assert (
        "session $10.02 " in statusline(store, stdin, **env).stdout
    )  # (10**6 * 10 + 1000 * 15) / 1e6
    stale = key.replace(time.strftime("%Y-%m-%d", time.gmtime()), "1999-01-01")
    assert stale != key
    memo(home).write_text(f"{stale}\n{model}\t10.0\t15.0\t0.3\t3.75\t6.0\n")
    assert statusline(store, stdin, **env).stdout == first
    assert memo(home).read_text().splitlines()[0] == key


def lookup_usd(run: RunCli, sid: str) -> float:
    """The session's cost with its subagents, as ``helixctl lookup`` shows it."""
    digest = json.loads(run("lookup", f"claude:{sid}", "--json").stdout)
    return float(digest["cost_with_subagents"]["usd"])


def test_the_line_costs_what_lookup_costs(store: RunCli) -> None:
    line = statusline(store, json.dumps({"session_id": SID})).stdout
    assert f"session ${lookup_usd(store, SID):,.2f} " in line


@pytest.fixture
def price_config(home: Path) -> Path:
    """A config file with a price override (written before the store is ingested)."""
    config = home / ".config" / "helix" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[prices.models."claude-sonnet-4-5-20250929"]\ninput = 7.3\noutput = 11.0\n')
    return config


def test_with_a_config_file_the_line_costs_what_lookup_costs(
    price_config: Path, store: RunCli
) -> None:
    """A config file (read by the settings reader) with a price override: the memo is keyed
    by it, and the line shows the session's cost as ``helixctl lookup`` does."""
    with_override = statusline(store, json.dumps({"session_id": SID})).stdout
    assert f"session ${lookup_usd(store, SID):,.2f} " in with_override
    assert "session $4.79 " in with_override  # (650_000 * 7.3 + 4 * 1000 * 11.0) / 1e6
    price_config.unlink()
    without = statusline(store, json.dumps({"session_id": SID})).stdout
    assert f"session ${usd(650_000, 4):,.2f} " in without


ENVS = [
    {},
    {"HELIX_STORE_DB": "/srv/h/helix.db"},
    {"HELIX_STORE_DB": "~/h.db"},
    {"XDG_DATA_HOME": "/data"},
    {"XDG_DATA_HOME": "  "},
    {"HELIX_STORE_DB": "/srv/h/helix.db", "XDG_DATA_HOME": "/data", "XDG_CACHE_HOME": "/c"},
    {"HELIX_STORE__DB": "/from/section.db"},
    {"HELIX_STORE__DB": "/from/section.db", "HELIX_STORE_DB": "/wins.db"},
    {"HELIX_CACHE_DIR": "/cache/here", "XDG_CONFIG_HOME": "{tmp}/etc"},
]


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("config", ["", '[store]\ndb = "/from/config.db"\n'])
def test_the_line_finds_the_store_and_cache_where_the_settings_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], config: str
) -> None:
    """The status line's own paths (no pathlib, no settings reader when nothing is
    configured) are those of ``helixd.paths`` and ``helixd.readconfig``."""
    from helixd import paths
    from helixd import statusline as sl
    from helixd.readconfig import read_config

    for k in [k for k in os.environ if k.upper().startswith(("HELIX_", "XDG_"))]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    for k, v in env.items():
        monkeypatch.setenv(k, v.replace("{tmp}", str(tmp_path)))
    if config:
        file = Path(os.environ.get("XDG_CONFIG_HOME", tmp_path / ".config"), "helix", "config.toml")
        file.parent.mkdir(parents=True)
        file.write_text(config)
    assert Path(sl.settings(None)[0]) == read_config().store_db
    plain = sl.plain_store()
    assert (plain is None) == bool(config or "HELIX_STORE__DB" in env)
    assert sl.default_store_path() == str(paths.default_store_path())
    assert sl.default_config_path() == str(paths.default_config_path())
    assert sl.cache_dir() == str(paths.cache_dir())


def test_the_lines_helpers_agree_with_the_code_they_stand_for() -> None:
    """The small functions the status line has of its own give what the code they stand
    for gives: the cost of a row, the local midnight, the genai-prices key, the columns."""
    from helixd import prices as full
    from helixd import statusline as sl
    from helixd.core.pricing import FIELDS, cost
    from helixd.query.now import local_midnight_ms
    from helixd.store.now_queries import SUMS
    from helixd.store.queries import BUCKET_SUMS

    assert sl.FIELDS == FIELDS and SUMS == BUCKET_SUMS
    assert sl.genai_data_key() == full._installed_key() is not None
    _, book = full.effective(None, {})
    counters = [(123_457, 98_765, 4_567_891, 33_333, 7_777), (1, 2, 3, 4, 5), (10**9, 0, 0, 0, 1)]
    models = ["claude-sonnet-4-5-20250929", "claude-opus-4-1", "gpt-5", "gemini-2.5-pro", "nope"]
    for model in models:
        price = sl.prices_for({model}, None, {}).get(model)
        for c in counters:
            assert sl.cost(price, c) == cost(book, model, c), (model, c)
    for ms in (0, 1_700_000_000_000, NOW_MS, 1_711_846_800_000, 1_730_591_999_999):
        assert sl.local_midnight_ms(ms) == local_midnight_ms(ms)


def _pi_response(n: int, ms: int, tokens: int, dollars: float | None) -> str:
    usage: dict[str, object] = {"input": tokens, "output": 1000, "totalTokens": tokens + 1000}
    if dollars is not None:
        usage["cost"] = {"total": dollars}
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "model": "claude-sonnet-4-5",
        "provider": "anthropic",
        "usage": usage,
        "timestamp": ms,
    }
    entry = {"type": "message", "id": f"e{n}", "parentId": None, "timestamp": _iso(ms)}
    return json.dumps({**entry, "message": message}) + "\n"


def test_the_line_prices_the_dollars_an_agent_recorded_as_the_reports_do(
    home: Path, helixctl: RunCli
) -> None:
    """Pi records the dollars of a response: the line's today and burn rate count them as
    ``report daily`` (``--cost auto``) does — recorded where present, the table for a
    response without — not the table's price of their tokens."""
    now = int(time.time() * 1000)
    project = home / ".pi" / "agent" / "sessions" / "--work-pi--"
    project.mkdir(parents=True)
    session = json.dumps({"type": "session", "version": 3, "id": "pi-1", "timestamp": _iso(now)})
    (project / "2026-01-01T00-00-00-000Z_pi-1.jsonl").write_text(
        session + "\n" + _pi_response(1, now - 60_000, 100_000, 12.5)
        + _pi_response(2, now - 30_000, 200_000, None)
    )  # fmt: skip
    helixctl("ingest", "--json")
    line = statusline(helixctl, "").stdout
    auto = json.loads(helixctl("report", "daily", "--json").stdout)["totals"]["totalCost"]
    table = json.loads(helixctl("report", "daily", "--json", "--cost", "calculate").stdout)
    calculated = table["totals"]["totalCost"]
    # the recorded $12.50 counted, the response without a cost priced from the table (the
    # share of its bucket's tokens, when both fall in one 15-minute bucket)
    assert 12.5 < auto < 12.5 + calculated and calculated < 1.0
    assert f"today ${auto:,.2f}" in line and f"${auto:,.2f}/h" in line

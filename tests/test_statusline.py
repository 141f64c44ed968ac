"""Issue 14: ``helixctl statusline`` — the line Claude Code's ``statusLine`` shows, through the
real executable on a real store, with the JSON Claude Code pipes in."""

from __future__ import annotations

import json
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
    for stdin in ("", "{not json", "[1, 2]"):
        done = statusline(store, stdin)
        assert done.returncode == 0 and "today $" in done.stdout and "session" not in done.stdout


def test_no_store_says_so_and_exits_0(tmp_path: Path) -> None:
    env = cli_env(tmp_path, tmp_path / "none" / "helix.db")
    done = subprocess.run(
        [HELIXCTL, "statusline"], input="{}", env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("helix: no store at")


def test_the_click_command_prints_the_same_line(store: RunCli) -> None:
    """``helixctl --config FILE statusline`` goes through click: the same line."""
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


def test_the_status_line_loads_only_what_it_uses(store: RunCli) -> None:
    """Claude Code runs it after every message: no click, no pydantic, no orjson (it imports
    dataclasses), no platformdirs, no genai-prices (its flattened data is read)."""
    code = (
        "import sys; sys.argv = ['helix-statusline']\n"
        "from helixd.cli.statusline import run\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(x for x in sys.modules if x.split('.')[0] in ('click', 'pydantic',"
        " 'orjson', 'dataclasses', 'platformdirs', 'genai_prices', 'rich', 'structlog',"
        " 'aiosqlite', 'zstandard', 'tomllib'))\n"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps({"session_id": SID}),
        # only the store is set: the retention setting cli_env adds is not the line's
        env={k: v for k, v in store.env.items() if k != KEEP},  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "session $" in done.stdout
    assert "HEAVY []" in done.stderr, done.stderr[-2000:]

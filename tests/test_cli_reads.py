"""The read commands as a person types them (issues 12 and 14): search what is typed, the
sessions table, relative dates, plain words for errors — through the real ``helixctl`` on a
real store built from transcripts written here."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import RunCli

NOW_MS = int(time.time() * 1000)
TYPED = [
    "how do I deploy next.js on vercel",
    "rename foo-bar to baz in the config",
    "the bug is in src/app/page.tsx line 12",
    "it's broken again: C++ templates",
    "error: no such column bar",
]


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _session(sid: str, ts: int, prompts: list[str], cwd: str, model: str) -> bytes:
    out = b""
    for n, text in enumerate(prompts):
        base = {"sessionId": sid, "cwd": cwd, "timestamp": _iso(ts + n * 2000)}
        out += orjson.dumps(
            {
                **base,
                "type": "user",
                "uuid": f"{sid}-u{n}",
                "parentUuid": f"{sid}-a{n - 1}" if n else None,
                "message": {"role": "user", "content": text},
            }
        )
        out += b"\n"
        out += orjson.dumps(
            {
                **base,
                "type": "assistant",
                "uuid": f"{sid}-a{n}",
                "parentUuid": f"{sid}-u{n}",
                "requestId": f"req-{sid}-{n}",
                "message": {
                    "id": f"msg-{sid}-{n}",
                    "model": model,
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"answer {n} about {text}"}],
                    "usage": {"input_tokens": 1000, "output_tokens": 200},
                },
            }
        )
        out += b"\n"
    return out


SID_NEW = "aaaaaaaa-0000-4000-8000-000000000001"
SID_OLD = "bbbbbbbb-0000-4000-8000-000000000002"
SID_NO_TIME = "cccccccc-0000-4000-8000-000000000003"


@pytest.fixture
def store(home: Path, helixctl: RunCli) -> RunCli:
    project = home / ".claude" / "projects" / "-work-webapp"
    project.mkdir(parents=True)
    (project / f"{SID_NEW}.jsonl").write_bytes(
        _session(SID_NEW, NOW_MS - 3600_000, TYPED, "/work/webapp", "claude-sonnet-4-5")
    )
    (project / f"{SID_OLD}.jsonl").write_bytes(
        _session(SID_OLD, NOW_MS - 20 * 86400_000, ["old work"], "/work/other", "claude-opus-4-1")
    )
    no_time = _session(SID_NO_TIME, 0, ["a prompt with no time"], "/work/webapp", "x")
    lines = [json.loads(x) for x in no_time.splitlines()]
    for x in lines:
        x.pop("timestamp")
    (project / f"{SID_NO_TIME}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    helixctl("ingest", "--json")
    return helixctl


def _json(run: RunCli, *args: str) -> Any:
    return json.loads(run(*args, "--json").stdout)


@pytest.mark.parametrize(
    "typed", ["next.js", "foo-bar", "src/app/page.tsx", "it's", "C++", "page.tsx line", "bar:"]
)
def test_search_finds_what_was_typed(store: RunCli, typed: str) -> None:
    hits = _json(store, "search", typed)
    assert hits, typed
    assert {h["session_uid"] for h in hits} == {f"claude:{SID_NEW}"}
    assert all(h["seq"] is not None for h in hits)


def test_search_words_are_all_required_in_any_order(store: RunCli) -> None:
    assert _json(store, "search", "vercel", "deploy")
    assert _json(store, "search", "vercel deploy")
    assert _json(store, "search", "vercel", "zebra") == []


def test_fts_syntax_only_with_the_flag(store: RunCli) -> None:
    assert _json(store, "search", "--fts", "vercel OR zebra")
    assert _json(store, "search", "vercel OR zebra") == []  # OR is a word to find here
    bad = store("search", "--fts", "next.js", check=False)
    assert bad.returncode == 2
    assert "not valid FTS5 syntax" in bad.stderr and "Traceback" not in bad.stderr


def test_an_unknown_kind_is_named(store: RunCli) -> None:
    proc = store("search", "vercel", "--kind", "bogus", check=False)
    assert proc.returncode == 2
    assert "unknown kind bogus" in proc.stderr and "user_msg" in proc.stderr


def test_nothing_to_search_for_says_so(store: RunCli) -> None:
    proc = store("search", "++", check=False)
    assert proc.returncode == 2 and "nothing to search for" in proc.stderr


def test_search_highlight_follows_no_color(store: RunCli) -> None:
    # Not a terminal here: brackets; the ANSI codes only ever go to a terminal without NO_COLOR.
    out = store("search", "vercel").stdout
    assert "[vercel]" in out and "\x1b[" not in out


@pytest.mark.parametrize("since", ["7d", "1w", "48h", "yesterday"])
def test_relative_dates(store: RunCli, since: str) -> None:
    uids = {h["session_uid"] for h in _json(store, "search", "answer", "--since", since)}
    assert uids == {f"claude:{SID_NEW}"}
    listed = {s["uid"] for s in _json(store, "sessions", "--since", since)}
    assert listed == {f"claude:{SID_NEW}"}


def test_a_bad_date_names_the_forms(store: RunCli) -> None:
    proc = store("sessions", "--since", "last tuesday-ish", check=False)
    assert proc.returncode == 2 and "7d" in proc.stderr and "YYYY-MM-DD" in proc.stderr


def test_sessions_table_has_a_header_titles_costs_and_unknown_times_last(store: RunCli) -> None:
    proc = store("sessions", COLUMNS="200")
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:6] == ["STARTED", "SESSION", "REPO", "MSGS", "COST", "TITLE"]
    assert SID_NEW in lines[1] and SID_OLD in lines[2] and SID_NO_TIME in lines[3]
    assert "how do I deploy next.js" in lines[1]  # no title: the first prompt
    assert "$0.0" in lines[1] or "$0.1" in lines[1]
    assert lines[3].startswith("-")


def test_sessions_says_how_many_were_not_shown(store: RunCli) -> None:
    proc = store("sessions", "--limit", "2")
    assert len(proc.stdout.splitlines()) == 3
    assert "2 of 3 shown" in proc.stderr
    assert len(_json(store, "sessions", "--all")) == 3
    assert len(_json(store, "sessions", "--limit", "0")) == 3
    assert [s["uid"] for s in _json(store, "sessions", "--limit", "1", "--offset", "1")] == [
        f"claude:{SID_OLD}"
    ]


def test_sessions_filters_and_cost(store: RunCli) -> None:
    rows = _json(store, "sessions", "--repo", "/work/webapp")
    assert {r["uid"] for r in rows} == {f"claude:{SID_NEW}", f"claude:{SID_NO_TIME}"}
    new = next(r for r in rows if r["uid"] == f"claude:{SID_NEW}")
    # 5 responses of 1000 in + 200 out at Sonnet 4.5's $3 / $15 per million
    assert new["tokens"] == 6000
    assert new["cost_usd"] == pytest.approx(5 * (1000 * 3 + 200 * 15) / 1e6)
    assert _json(store, "sessions", "--model", "claude-opus-4-1")[0]["uid"] == f"claude:{SID_OLD}"
    assert _json(store, "sessions", "--agent", "codex") == []


def test_tokens_since_is_optional(store: RunCli) -> None:
    doc = _json(store, "tokens", "--repo", "/work/webapp")
    assert doc["total"]["inputTokens"] == 5000


def test_lookup_and_env_resolve_prefixes(store: RunCli) -> None:
    digest = _json(store, "lookup", SID_NEW[:8])
    assert digest["session_uid"] == f"claude:{SID_NEW}"
    env = store("env", SID_NEW[:8]).stdout
    assert f"HELIX_SESSION_UID=claude:{SID_NEW}" in env
    missing = store("lookup", "zzzz", check=False)
    assert missing.returncode == 1 and "no session matches" in missing.stderr


def test_daemon_commands_speak_plain_words_and_json_on_request(store: RunCli) -> None:
    proc = store("ping", check=False)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert store("rescan", check=False).returncode == 3


def test_hook_help_prints_help(store: RunCli) -> None:
    proc = store("hook", "--help")
    assert "hook" in proc.stdout and "exits 0" in proc.stdout.replace("\n", " ")


def test_read_commands_load_only_what_they_use(store: RunCli) -> None:
    """A read command imports neither pydantic, nor the event loop's store, nor rich."""
    code = (
        "import sys, runpy; sys.argv = ['helixctl', *sys.argv[1:]];"
        "import helixd.cli.main as m\n"
        "try:\n    m.main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(x for x in sys.modules if x.split('.')[0] in"
        " ('pydantic', 'pydantic_settings', 'aiosqlite', 'rich', 'structlog', 'watchdog'))\n"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    import sys

    for args in (
        ["search", "vercel"],
        ["report", "daily"],
        ["sessions"],
        ["lookup", SID_NEW[:8]],
        ["stats"],
        ["tokens", "--repo", "/work/webapp"],
        ["env", SID_NEW[:8]],
    ):
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            env=store.env,  # type: ignore[attr-defined]
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "HEAVY []" in proc.stderr, (args, proc.stderr[-2000:])


@pytest.mark.parametrize("until", ["99991231", "0001-01-01", "9999-12-31T23:59:59"])
def test_a_day_no_report_can_hold_is_a_usage_error_not_a_traceback(
    store: RunCli, until: str
) -> None:
    for args in (["report", "daily", "--until", until], ["sessions", "--until", until]):
        proc = store(*args, check=False)
        assert proc.returncode == 2 and "outside the years" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr

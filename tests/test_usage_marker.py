"""Issue 16: where an agent records no token usage, ``lookup`` says so instead of showing
zero tokens.  The real CLI in a subprocess over a real store: a grok-build session (its
chat history carries no usage) and a Copilot session (output tokens recorded)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from helixd.adapters import adapter_named
from helixd.adapters.registry import REGISTRY
from tests.conftest import cli_env, run_helixctl

FIX = Path(__file__).parent / "fixtures"
GROK_BUILD = "019f6000-0000-7000-8000-000000000001"
COPILOT = "aaaabbbb-1111-2222-3333-ccccddddeeee"


def test_every_adapter_declares_whether_it_records_usage() -> None:
    assert all(isinstance(a.records_usage, bool) for a in REGISTRY)
    assert "updates.jsonl" in adapter_named("grok").usage_note


def test_lookup_says_not_recorded_instead_of_zero(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIX / "grok" / "kenn-io__agentsview", home / ".grok" / "sessions")
    state = home / ".copilot" / "session-state" / COPILOT
    shutil.copytree(FIX / "copilot" / COPILOT, state)
    env = cli_env(home, tmp_path / "store" / "helix.db")

    def run(*args: str) -> str:
        return run_helixctl(args, env).stdout

    run("ingest", "--json")
    digest = orjson.loads(run("lookup", f"grok:{GROK_BUILD}", "--json"))
    assert digest["usage_recorded"] is False
    assert "updates.jsonl" in digest["usage_note"]
    text = run("lookup", f"grok:{GROK_BUILD}")
    assert "tokens: not recorded (grok writes token usage only to updates.jsonl" in text
    assert "tokens in 0" not in text
    recorded = orjson.loads(run("lookup", f"copilot:{COPILOT}", "--json"))
    assert recorded["usage_recorded"] is True and recorded["usage_note"] is None
    assert recorded["cost"]["output_tokens"] == 26  # msg-0001 + msg-0002 outputTokens
    assert "tokens in 0 out 26" in run("lookup", f"copilot:{COPILOT}")

"""The two ccusage differences docs/token-accounting.md explains that no other test pins.

Each is worked out from the fixture bytes with the standard ``json`` module (no helixd code)
and compared with ccusage's recorded reports in ``tests/fixtures/ccusage/``:

* ``ccusage claude daily`` exceeds ``ccusage claude session`` by exactly the usage embedded
  in the parents' ``agent_progress`` records, whose subagent transcripts the corpus lacks;
* the JS ``@ccusage/codex`` sums ``last_token_usage`` over *every* ``token_count`` (a
  re-emit whose cumulative total did not advance counts again) and reports cached input
  inside ``inputTokens``; Helix counts advancing totals only, cached input apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helixd.adapters import codex
from helixd.adapters.base import Chunk, FileContext

FIX = Path(__file__).parent / "fixtures"
CCUSAGE = FIX / "ccusage"


def _objects(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def test_claude_daily_exceeds_session_by_the_agent_progress_copies() -> None:
    embedded: dict[tuple[str, str], tuple[int, int, int, int]] = {}
    agents: set[str] = set()
    for path in (FIX / "claude").rglob("*.jsonl"):
        for obj in _objects(path):
            data = obj.get("data")
            if obj.get("type") != "progress" or not isinstance(data, dict):
                continue
            if data.get("type") != "agent_progress" or not isinstance(data.get("message"), dict):
                continue
            msg = data["message"].get("message")
            if isinstance(msg, dict) and isinstance(msg.get("usage"), dict):
                u = msg["usage"]
                embedded[(msg["id"], data["message"]["requestId"])] = (
                    u["input_tokens"],
                    u["output_tokens"],
                    u["cache_read_input_tokens"],
                    u["cache_creation_input_tokens"],
                )
                agents.add(data["agentId"])
    assert len(embedded) == 11
    # No transcript of those subagents is in the corpus (the sources captured parent files only)
    names = {p.name for p in (FIX / "claude").rglob("agent-*.jsonl")}
    assert not any(f"agent-{a}.jsonl" in names for a in agents)
    extra = tuple(sum(c) for c in zip(*embedded.values(), strict=True))
    assert extra == (41, 33, 98910, 48851)

    def totals(name: str) -> tuple[int, int, int, int]:
        t = json.loads((CCUSAGE / name).read_text())["totals"]
        return (t["inputTokens"], t["outputTokens"], t["cacheReadTokens"], t["cacheCreationTokens"])

    daily, session = totals("claude-daily.json"), totals("claude-session.json")
    assert tuple(d - s for d, s in zip(daily, session, strict=True)) == extra


def _token_counts(path: Path) -> list[tuple[Any, list[int]]]:
    """``(total_token_usage, last_token_usage counters)`` of every token_count with info."""
    keys = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
    out = []
    for obj in _objects(path):
        payload = obj.get("payload")
        if not isinstance(payload, dict) or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        if isinstance(info, dict):
            last = info.get("last_token_usage") or {}
            out.append((info.get("total_token_usage"), [int(last.get(k, 0)) for k in keys]))
    return out


def test_js_ccusage_codex_counts_re_emitted_token_counts_and_cached_input_twice() -> None:
    report = json.loads((CCUSAGE / "codex-js-session.json").read_text())
    assert len(report["sessions"]) == 9
    doubled = 0
    for row in report["sessions"]:
        sid = row["sessionFile"][-36:]
        path = next((FIX / "codex/sessions").rglob(f"rollout-*{sid}.jsonl"))
        counts = _token_counts(path)
        every = [sum(c) for c in zip(*(v for _, v in counts), strict=True)]
        theirs = [
            row["inputTokens"],
            row["cachedInputTokens"],
            row["outputTokens"],
            row["reasoningOutputTokens"],
        ]
        assert theirs == every, sid  # every token_count, re-emits included
        advanced, prev = [0, 0, 0, 0], None
        for total, values in counts:
            if total != prev:
                advanced = [a + b for a, b in zip(advanced, values, strict=True)]
            prev = total
        doubled += advanced != every
        data = path.read_bytes()
        parsed = codex.parse(Chunk(data, 0, True, FileContext(str(path), path.name)), {})
        ours = (
            sum(u.input_tokens for u in parsed.usage),
            sum(u.cache_read_tokens for u in parsed.usage),
            sum(u.output_tokens for u in parsed.usage),
        )
        # Helix: advancing totals only, cached input reported apart from input.
        assert ours == (advanced[0] - advanced[1], advanced[1], advanced[2]), sid
    assert doubled == 5  # five of the six madshn sessions re-emit every token_count

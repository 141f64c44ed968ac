"""Issue 14: ``helixctl mcp`` — the MCP server, driven over stdio by the official SDK's own
client, calling every tool against a real store built from the fixtures."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import FIXTURES, REPO, RunCli, cli_env

TOOLS = {
    "search",
    "lookup",
    "list_sessions",
    "read_transcript",
    "usage_report",
    "repo_tokens",
    "stats",
}
SESSION = "claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a"


@pytest.fixture
def store(home: Path, helixctl: RunCli) -> RunCli:
    helixctl("ingest", "--agent", "claude", "--root", str(FIXTURES / "claude"), "--json")
    helixctl("ingest", "--agent", "codex", "--root", str(FIXTURES / "codex" / "sessions"))
    return helixctl


def _server(home: Path, db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "helixd.cli.main", "mcp"],
        env=cli_env(home, db),
        cwd=str(REPO),
    )


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def test_every_tool_over_stdio_with_the_sdk_client(home: Path, store: RunCli) -> None:
    db: Path = store.db  # type: ignore[attr-defined]
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    async with Client(_server(home, db), read_timeout_seconds=60) as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        for t in tools:
            assert t.annotations is not None and t.annotations.read_only_hint is True, t.name
            assert t.description

        hits = _data(await client.call_tool("search", {"query": "hello", "limit": 5}))["hits"]
        assert hits and all(h["session_uid"] and h["snippet"] for h in hits)
        assert len(hits) <= 5
        codex_only = _data(await client.call_tool("search", {"query": "the", "agent": "codex"}))
        assert {h["agent"] for h in codex_only["hits"]} == {"codex"}

        page = _data(await client.call_tool("list_sessions", {"limit": 3}))
        assert len(page["sessions"]) == 3 and page["total"] > 20
        assert {"uid", "cost_usd", "display_title"} <= set(page["sessions"][0])

        found = _data(await client.call_tool("lookup", {"session": SESSION[7:15]}))
        assert found["session"]["uid"] == SESSION
        assert found["digest"]["session_uid"] == SESSION

        excerpt = _data(await client.call_tool("read_transcript", {"session": SESSION, "tail": 4}))
        assert len(excerpt["events"]) == 4 and excerpt["events"][-1]["seq"] == excerpt["last_seq"]
        nxt = _data(
            await client.call_tool(
                "read_transcript", {"session": SESSION, "after_seq": 0, "limit": 2}
            )
        )
        assert [e["seq"] for e in nxt["events"]] == [1, 2]

        daily = _data(await client.call_tool("usage_report", {"timezone": "UTC"}))
        assert daily["daily"] and daily["prices"]["source"]
        monthly = _data(
            await client.call_tool("usage_report", {"period": "monthly", "agent": "codex"})
        )
        assert monthly["monthly"] and all(m["agents"] == ["codex"] for m in monthly["monthly"])

        repo = found["session"]["cwd"] or found["session"]["repo"]
        tokens = _data(await client.call_tool("repo_tokens", {"repo": repo}))
        assert SESSION in {s["uid"] for s in tokens["sessions"]}
        assert tokens["total"]["totalTokens"] > 0

        stats = _data(await client.call_tool("stats", {"top": 3}))
        assert stats["by_agent"]["claude"]["sessions"] > 0

        # Errors are tool errors in plain words, and the server keeps serving.
        missing = await client.call_tool("lookup", {"session": "nosuchsession"})
        assert missing.is_error and "no session matches" in missing.content[0].text
        ambiguous = await client.call_tool("read_transcript", {"session": "claude:"})
        assert ambiguous.is_error and "several sessions" in ambiguous.content[0].text
        bad = await client.call_tool("search", {"query": "x", "since": "last tuesday-ish"})
        assert bad.is_error and "since" in bad.content[0].text
        zone = await client.call_tool("usage_report", {"timezone": "Mars/Olympus"})
        assert zone.is_error and "unknown time zone" in zone.content[0].text
        assert _data(await client.call_tool("stats", {}))["by_agent"]
    # read-only: the store is byte for byte what it was
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


async def test_no_store_is_a_tool_error_not_a_crash(home: Path, tmp_path: Path) -> None:
    async with Client(_server(home, tmp_path / "none" / "helix.db"), read_timeout_seconds=60) as c:
        result = await c.call_tool("list_sessions", {})
        assert result.is_error and "helixctl ingest" in result.content[0].text
        assert not (tmp_path / "none").exists()

"""The HTTP API of code-o11y §API, served by a real ``helixd`` over a store built from the
real corpus fixtures (Claude Code and Codex transcripts), asked over a real socket."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

from helixd.web import openapi
from helixd.web.app import build_app
from helixd.web.options import WebOptions
from tests.web_helpers import CLAUDE, PARENT, Served

u = quote


def test_helixctl_web_prints_the_address_and_the_server_answers(served: Served) -> None:
    assert served.url.startswith("http://127.0.0.1:")
    doc = served.get("/api/health")
    assert doc["ok"] is True and doc["version"]
    status = served.get("/api/status")
    assert status["daemon"]["web"]["url"] == served.url
    assert status["store"]["sessions"] if "sessions" in status["store"] else status["store"]


def test_sessions_are_filtered_paged_and_counted(served: Served) -> None:
    everything = served.get("/api/sessions?limit=500")
    total = everything["total"]
    assert total == len(everything["sessions"]) > 20
    codex = served.get("/api/sessions?agent=codex&limit=500")
    assert codex["total"] == sum(s["agent"] == "codex" for s in everything["sessions"]) > 0
    assert {s["agent"] for s in codex["sessions"]} == {"codex"}
    first, second = (served.get(f"/api/sessions?limit=5&offset={o}") for o in (0, 5))
    assert [s["uid"] for s in first["sessions"] + second["sessions"]] == [
        s["uid"] for s in everything["sessions"][:10]
    ]
    demo = served.get("/api/sessions?repo=Demo&limit=500")
    assert demo["total"] >= 3 and all(s["repo"] == "Demo" for s in demo["sessions"])
    recent = served.get("/api/sessions?since=2026-02-01&limit=500")
    assert 0 < recent["total"] < total
    status, _, body = served.request("/api/sessions?agent=cursorr")
    assert status == 400 and b"agent" in body and b"cursorr" in body
    status, _, body = served.request("/api/sessions?limit=0")
    assert status == 400 and b"limit" in body


def test_sessions_export_as_csv(served: Served) -> None:
    status, headers, body = served.request("/api/sessions?format=csv&agent=claude&limit=500")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    lines = body.decode().splitlines()
    assert lines[0].startswith("uid,agent,repo") and len(lines) > 10
    assert all(",claude," in line for line in lines[1:])


def test_session_detail_links_subagents_and_parent_both_ways(served: Served) -> None:
    doc = served.get(f"/api/sessions/{u(PARENT)}")
    assert doc["session"]["uid"] == PARENT
    child = doc["children"][0]
    assert child["agent_type"] == "general-purpose"
    back = served.get(f"/api/sessions/{u(child['uid'])}")
    assert back["parent"]["uid"] == PARENT
    assert doc["timeline"]["events"] == doc["session"]["events"]
    status, _, body = served.request("/api/sessions/claude:nope-nope")
    assert status == 404 and b"no session" in body
    status, _, body = served.request("/api/sessions/claude:")
    assert status == 409 and b"candidates" in body


def test_messages_carry_tool_inputs_outputs_and_turn_costs_and_page(served: Served) -> None:
    page = served.get(f"/api/sessions/{u(CLAUDE)}/messages?limit=2000")
    assert page["raw"] == "kept" and page["total"] == len(page["events"])
    call = next(
        e for e in page["events"] if e["kind"] == "tool_call" and '"ls -la"' in (e["payload"] or "")
    )
    result = next(
        e for e in page["events"] if e["kind"] == "tool_result" and e["call_id"] == call["call_id"]
    )
    assert "total" in result["payload"] and result["status"] == "success"
    turns = page["turns"]
    assert turns and sum(t["cost_usd"] for t in turns.values()) > 0
    assert {int(k) for k in turns} <= {e["seq"] for e in page["events"] if e["kind"] == "user_msg"}
    at = served.get(f"/api/sessions/{u(CLAUDE)}/messages?at=300&limit=50")
    assert 300 in [e["seq"] for e in at["events"]] and at["has_before"] and at["has_after"]
    after = served.get(f"/api/sessions/{u(CLAUDE)}/messages?after=10&limit=5")
    assert [e["seq"] for e in after["events"]] == [11, 12, 13, 14, 15]


def test_tool_calls_and_raw_lines(served: Served) -> None:
    calls = served.get(f"/api/sessions/{u(CLAUDE)}/tool-calls")
    detail = served.get(f"/api/sessions/{u(CLAUDE)}")
    assert len(calls["tool_calls"]) == detail["digest"]["tool_calls"]["total"] > 10
    assert {c["status"] for c in calls["tool_calls"]} >= {"success"}
    assert calls["file_operations"] and all(
        o["accepted"] in (True, False, None) for o in calls["file_operations"]
    )
    raw = served.get(f"/api/sessions/{u(CLAUDE)}/raw?limit=20")
    assert raw["raw"] == "kept" and raw["lines"]
    assert all(isinstance(json.loads(line), dict) for line in raw["lines"])
    assert any(json.loads(line).get("sessionId") for line in raw["lines"])
    status, headers, body = served.request(f"/api/sessions/{u(CLAUDE)}/raw?limit=5&format=jsonl")
    assert status == 200 and headers["content-type"] == "application/x-ndjson"
    assert len(body.splitlines()) >= 1


def test_search_finds_a_corpus_word_and_points_at_its_event(served: Served) -> None:
    doc = served.get("/api/search?q=orchestrator&limit=5")
    hit = next(h for h in doc["hits"] if h["session_uid"] == CLAUDE)
    assert "\x02" in hit["snippet"] and isinstance(hit["seq"], int)
    page = served.get(f"/api/sessions/{u(CLAUDE)}/messages?at={hit['seq']}&limit=50")
    event = next(e for e in page["events"] if e["seq"] == hit["seq"])
    assert "orchestrator" in (event["body"] or event["summary"] or "").lower()
    typed = served.get("/api/search?q=orchestr&prefix=1&limit=5")
    assert typed["hits"]
    status, _, body = served.request("/api/search?q=%22unterminated&fts=1")
    assert status == 400 and b"FTS5" in body
    only_codex = served.get("/api/search?q=the&agent=codex&limit=20")
    assert {h["agent"] for h in only_codex["hits"]} == {"codex"}


def test_metrics_answer_and_agree_with_each_other(served: Served) -> None:
    q = "range=all"
    summary = served.get(f"/api/metrics/summary?{q}")
    costs = served.get(f"/api/metrics/costs?{q}")
    assert summary["cost_usd"] > 0
    assert abs(summary["cost_usd"] - costs["cost_usd"]) < 1e-4
    assert abs(sum(v["cost_usd"] for v in costs["by_model"].values()) - costs["cost_usd"]) < 1e-4
    by_day = sum(s["by"][k]["cost_usd"] for s in costs["over_time"]["slots"] for k in s["by"])
    assert by_day <= costs["cost_usd"] + 1e-6
    assert (
        costs["top_sessions"][0]["cost_in_range_usd"]
        >= costs["top_sessions"][-1]["cost_in_range_usd"]
    )
    tokens = served.get(f"/api/metrics/tokens?{q}&group=model&step=week")
    assert tokens["keys"] and tokens["step"] == "week"
    tools = served.get(f"/api/metrics/tools?{q}")
    assert tools["total"]["calls"] == sum(t["calls"] for t in tools["tools"]) > 100
    bash = next(t for t in tools["tools"] if t["tool"] == "Bash")
    assert bash["p50_ms"] is not None and bash["p50_ms"] <= bash["p95_ms"] <= bash["max_ms"] * 1.1
    files = served.get(f"/api/metrics/files?{q}&limit=10")
    assert len(files["files"]) == 10 and files["heatmap"]["slots"]
    acc = served.get(f"/api/metrics/acceptance?{q}")
    assert acc["total"]["operations"] == sum(r["operations"] for r in acc["by_language"])
    assert summary["edits"] == acc["total"]
    tests = served.get(f"/api/metrics/tests?{q}")
    assert tests["total"]["runs"] == summary["tests"]["runs"] > 0
    assert any(r["framework"] == "pytest" for r in tests["runs"])
    activity = served.get(f"/api/metrics/activity?{q}")
    assert len(activity["weekday_hour"]) == 7 and activity["days"]
    narrow = served.get("/api/metrics/summary?range=24h")
    assert narrow["sessions"] <= summary["sessions"]
    status, _, _ = served.request("/api/metrics/nope")
    assert status == 404
    status, _, body = served.request("/api/metrics/summary?range=2d")
    assert status == 400 and b"range" in body


def test_every_page_renders(served: Served) -> None:
    for path in ("/", "/sessions", "/search?q=todo", "/files", "/tools", "/costs", "/tests",
                 f"/sessions/{u(CLAUDE)}", f"/sessions/{u(CLAUDE)}?at=200"):  # fmt: skip
        status, headers, body = served.request(path)
        assert status == 200, path
        assert headers["content-type"].startswith("text/html")
        assert b'<meta name="helix-token"' in body and b"/static/app.js" in body
    status, _, body = served.request("/sessions/claude:nope-nope")
    assert status == 404 and b"No session" in body


def test_openapi_lists_exactly_the_api_routes(tmp_path: object) -> None:
    from pathlib import Path

    app, _, reads = build_app(
        WebOptions(store_db=Path("/nonexistent/helix.db"), token_path=Path(str(tmp_path)) / "t")
    )
    reads.close()
    routes = {getattr(r, "path", "") for r in app.routes}
    api = {p for p in routes if p.startswith("/api/")}
    documented = set(openapi.document()["paths"])
    metric = {p for p in documented if p.startswith("/api/metrics/")}
    assert api - {"/api/metrics/{name}"} == documented - metric
    from helixd.web.api import METRICS

    assert metric == {f"/api/metrics/{m}" for m in METRICS}


def test_a_page_of_a_big_session_answers_fast(served: Served) -> None:
    start = time.perf_counter()
    status, _, _ = served.request(f"/sessions/{u(CLAUDE)}")
    assert status == 200 and time.perf_counter() - start < 1.5


def test_helixctl_web_says_when_no_daemon_serves_the_page(helixctl: Any) -> None:
    proc = helixctl("web", check=False)
    assert proc.returncode == 3 and "helixd is not running" in proc.stderr


def test_a_long_session_comes_a_page_at_a_time(served: Served) -> None:
    """The biggest session's events: 100 by the API and 50 on its page up front (each event
    shown re-reads its raw line), the rest a page later."""
    from helixd.web import api, pages

    everything = served.get("/api/sessions?limit=500")["sessions"]
    big = max(everything, key=lambda s: s["events"])
    assert big["events"] > api.PAGE_EVENTS == 100
    first = served.get(f"/api/sessions/{u(big['uid'])}/messages")
    assert len(first["events"]) == api.PAGE_EVENTS and first["has_after"]
    after = first["events"][-1]["seq"]
    more = served.get(f"/api/sessions/{u(big['uid'])}/messages?after={after}")
    assert more["events"][0]["seq"] > after
    status, _, html = served.request(f"/sessions/{u(big['uid'])}")
    shown = html.count(b'<section class="ev ')
    assert status == 200 and 30 < shown <= pages.PAGE_EVENTS == 50, shown  # results fold in


def test_a_page_without_a_store_says_so_with_503(tmp_path: object) -> None:
    """No store yet (or removed under a running daemon): a page answers 503 with its error
    page, as the API does, not a 500 from the error page reading the store again."""
    import asyncio
    import http.client
    import threading
    from pathlib import Path

    import uvicorn

    app, _, reads = build_app(
        WebOptions(store_db=Path(str(tmp_path)) / "none.db", token_path=Path(str(tmp_path)) / "t")
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        for path, kind in (("/", "text/html"), ("/sessions", "text/html"), ("/api/sessions", "")):
            con = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            con.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
            answer = con.getresponse()
            body = answer.read()
            con.close()
            assert answer.status == 503, (path, answer.status, body[:200])
            assert answer.getheader("content-type", "").startswith(kind or "application/")
    finally:
        server.should_exit = True
        thread.join(10)
        reads.close()

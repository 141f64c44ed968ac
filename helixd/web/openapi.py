"""The OpenAPI 3.1 document of the JSON API (served at ``/api/openapi.json``).  Written by
hand, next to the routes; ``tests/test_web_api.py`` checks that every route is in it and
every path in it is a route, and ``docs/web.md`` describes the fields."""

from __future__ import annotations

from typing import Any, Final

from helixd import __version__


def _q(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description,
            "schema": schema or {"type": "string"}}  # fmt: skip


FILTERS: Final = [
    _q("range", "Time range ending now", {"enum": ["24h", "7d", "30d", "90d", "1y", "all"]}),
    _q("since", "Start, as helixctl reads it (7d, yesterday, ISO-8601); replaces range"),
    _q("until", "End (exclusive), same forms"),
    _q("agent", "Agent name; repeat for several", {"type": "array", "items": {"type": "string"}}),
    _q("repo", "Repository name, or a directory at or under a path"),
    _q("model", "Model (a dated variant of it matches too)"),
    _q("tz", "The reader's UTC offset in minutes (what a day is)", {"type": "integer"}),
]
PAGE: Final = [
    _q("limit", "Rows in this page (1-500)", {"type": "integer"}),
    _q("offset", "Rows skipped", {"type": "integer"}),
]
UID: Final = {"name": "uid", "in": "path", "required": True, "schema": {"type": "string"},
              "description": "agent:native-id, the bare id, or a unique prefix"}  # fmt: skip
EVENTS: Final = [
    _q("after", "Events with seq greater than this", {"type": "integer"}),
    _q("before", "Events with seq smaller than this", {"type": "integer"}),
    _q("at", "A page that starts a little before this seq (jump to an event)", {"type": "integer"}),
    _q("tail", "The last events", {"type": "boolean"}),
    _q("limit", "Events in this page (1-2000)", {"type": "integer"}),
]


def _get(summary: str, parameters: list[dict[str, Any]], fields: str) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": parameters,
            "responses": {
                "200": {
                    "description": fields,
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "400": {"description": "A bad parameter: {error}"},
            },
        }
    }


def _post(summary: str) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "parameters": [
                {
                    "name": "X-Helix-Token",
                    "in": "header",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "The per-user token (the pages carry it in a meta tag)",
                }
            ],  # fmt: skip
            "responses": {
                "202": {"description": "{ok, <name>: what the daemon queued}"},
                "403": {"description": "Missing or wrong token, or a cross-origin request"},
            },
        }
    }


METRIC: Final = {
    "summary": "Headline numbers: sessions, messages, tokens, cost, agents, repos, tool success,"
    " test pass rate, edit acceptance",
    "tokens": "Token usage per time slot (step) by group",
    "costs": "Cost over time by group; totals by agent, repo, model; top sessions",
    "tools": "Per tool: calls, results by status, success rate, duration p50/p95/mean/max",
    "files": "Most modified files with their acceptance, and a files x weeks heatmap",
    "acceptance": "Edit acceptance by language",
    "tests": "Test runs (newest first), pass/fail trend, totals by runner",
    "activity": "Responses and sessions per day; responses per weekday x hour",
}


def document() -> dict[str, Any]:
    step = _q("step", "Time slot", {"enum": ["hour", "day", "week"]})
    group = _q("group", "Split by", {"enum": ["", "agent", "repo", "model"]})
    series = _q(
        "series",
        "over_time: the keys that cost most, the rest summed as '(other)' (default 10; 0: all)",
        {"type": "integer"},
    )
    paths: dict[str, Any] = {
        "/api/sessions": _get(
            "Sessions, newest first",
            [
                *FILTERS,
                _q("outcome", "Digest outcome"),
                *PAGE,
                _q("format", "json or csv", {"enum": ["json", "csv"]}),
            ],
            "{sessions: [session], total, offset, limit}",
        ),  # fmt: skip
        "/api/sessions/{uid}": _get(
            "One session", [UID], "{session, digest, parent, children, problems, timeline}"
        ),
        "/api/sessions/{uid}/messages": _get(
            "A page of the session's events with their bodies",
            [UID, *EVENTS],
            "{session_uid, events, total, first_seq, last_seq, has_before, has_after, raw, turns}",
        ),
        "/api/sessions/{uid}/tool-calls": _get(
            "The session's tool calls and file operations",
            [UID],
            "{session_uid, tool_calls, file_operations}",
        ),
        "/api/sessions/{uid}/raw": _get(
            "The stored (redacted) source lines of a page of events",
            [
                UID,
                _q("after", "seq", {"type": "integer"}),
                _q("limit", "events"),
                _q("format", "json or jsonl"),
            ],
            "{session_uid, raw, first_seq, last_seq, has_after, lines}",
        ),  # fmt: skip
        "/api/search": _get(
            "Full-text search",
            [
                _q("q", "Text as typed (fts=1: FTS5 syntax)"),
                _q("fts", "FTS5 syntax"),
                _q("prefix", "The last word is a prefix"),
                _q("kind", "Event kind; repeatable"),
                *FILTERS,
                *PAGE,
            ],
            "{query, hits: [{event_id, seq, kind, timestamp, session_uid, agent, repo, title,"
            " snippet, score}], offset, limit}; \\u0002/\\u0003 mark the hits in a snippet",
        ),  # fmt: skip
        "/api/health": _get("Alive and the store readable", [], "{ok, version}"),
        "/api/status": _get(
            "The daemon's state and what the store holds",
            [],
            "{version, daemon, store, price_table_date, time}",
        ),  # fmt: skip
        "/api/import": _post("Scan every root now (the daemon's reconcile)"),
        "/api/renormalize": _post("Rebuild what older adapter versions produced"),
        "/api/live": {
            "get": {
                "summary": "Server-Sent Events: hello, session:new, session:updated,"
                " metrics:updated, resync; data is {type, session|metrics}",
                "responses": {"200": {"description": "text/event-stream"}},
            }
        },
        "/api/openapi.json": _get("This document", [], "OpenAPI 3.1"),
    }
    for name, summary in METRIC.items():
        extra = (
            [step, group]
            if name in ("tokens", "costs")
            else [step]
            if name in ("tools", "tests", "files")
            else []
        )
        if name in ("files", "tests"):
            extra += PAGE
        if name == "costs":
            extra.append(series)
        paths[f"/api/metrics/{name}"] = _get(summary, [*FILTERS, *extra], "see docs/web.md")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Helix",
            "version": __version__,
            "description": "The local memory of AI coding-agent sessions. Field names: "
            "docs/web.md. Served on loopback only; POST endpoints need X-Helix-Token.",
        },
        "paths": paths,
    }

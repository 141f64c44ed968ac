"""A page of a session's events (``query.transcript``) shaped for the viewer's template:
each tool call with the result that answers it, its input as a diff (edits), a command or
pretty JSON, thinking folded, bodies the retention pass dropped marked ``evicted``, a turn's
tokens and cost on its user message, subagent calls linked to the sessions they started.
Also the Jinja2 environment and its filters (numbers, money, durations, times)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import orjson
from jinja2 import Environment, FileSystemLoader, select_autoescape

from helixd.core.diffs import edit_diff

OUTPUT_CHARS: Final = 20_000  # a tool output longer than this is cut in the page
SUBAGENT_TOOLS: Final = frozenset({"Task", "Agent", "spawn_agent", "task"})
QUIET: Final = frozenset({"lifecycle", "completion", "unknown"})


def money(v: Any) -> str:
    v = float(v or 0)
    if v == 0:
        return "$0"
    return f"${v:,.2f}" if v >= 0.995 or v <= -0.995 else f"${v:.3f}".rstrip("0")


def compact(v: Any) -> str:
    v = float(v or 0)
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= size:
            return f"{v / size:.1f}".rstrip("0").rstrip(".") + unit
    return f"{v:,.0f}"


def pct(v: Any) -> str:
    return "—" if v is None else f"{float(v) * 100:.1f}%".replace(".0%", "%")


def duration(ms: Any) -> str:
    if ms is None:
        return "—"
    s = float(ms) / 1000
    if s < 1:
        return f"{ms:.0f} ms"
    if s < 90:
        return f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def when(iso: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An ISO time in the page as UTC text; the page's JS shows it in the reader's zone."""
    if not iso:
        return "—"
    return datetime.fromisoformat(str(iso).replace("Z", "+00:00")).astimezone(UTC).strftime(fmt)


def session_url(uid: str, seq: int | None = None) -> str:
    base = "/sessions/" + quote(uid, safe=":")
    return base if seq is None else f"{base}?at={seq}#e-{seq}"


def environment(templates: Path) -> Environment:
    env = Environment(
        loader=FileSystemLoader(templates),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        money=money, compact=compact, pct=pct, duration=duration, when=when, urlq=quote
    )
    env.globals.update(session_url=session_url)
    return env


def _parsed(payload: str | None) -> Any:
    if not payload:
        return None
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return payload


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """``(css class, line)`` of a unified diff or an agent's patch."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "*** ")):
            cls = "dh"
        elif line.startswith("@@"):
            cls = "dk"
        elif line.startswith("+"):
            cls = "da"
        elif line.startswith("-"):
            cls = "dr"
        else:
            cls = ""
        out.append((cls, line))
    return out


def _cut(text: str) -> tuple[str, int]:
    return (
        (text, 0) if len(text) <= OUTPUT_CHARS else (text[:OUTPUT_CHARS], len(text) - OUTPUT_CHARS)
    )


def _tool_view(ev: dict[str, Any]) -> dict[str, Any]:
    args = _parsed(ev.get("payload"))
    diff = edit_diff(args) if args is not None else None
    view: dict[str, Any] = {
        "diff": diff_lines(diff) if diff else None,
        "command": None,
        "input": None,
    }
    if not diff:
        if ev.get("body"):
            view["command"] = ev["body"]
        elif args is not None:
            view["input"] = _cut(_pretty(args))[0]
    return view


def _result_view(res: dict[str, Any] | None) -> dict[str, Any] | None:
    if res is None:
        return None
    text = res.get("payload") or ""
    if isinstance(_parsed(text), dict | list):
        text = _pretty(_parsed(text))
    out, cut = _cut(text)
    return {
        "seq": res["seq"],
        "status": res.get("status") or ("error" if res.get("is_error") else "success"),
        "state": res["payload_state"],
        "output": out or res.get("summary") or "",
        "cut": cut + (res.get("payload_cut") or 0),
        "lines": out.count("\n") + 1 if out else 0,
    }


def shape(
    events: Sequence[dict[str, Any]],
    turns: Mapping[int, Mapping[str, Any]],
    children: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The page's events as the template draws them (a tool result appears under its call
    when both are in the page)."""
    calls = {e["call_id"] for e in events if e["kind"] == "tool_call" and e.get("call_id")}
    results = {
        e["call_id"]: e for e in events if e["kind"] == "tool_result" and e.get("call_id") in calls
    }
    spawned = sorted((c for c in children if c.get("started_at")), key=lambda c: c["started_at"])
    used: set[str] = set()
    out: list[dict[str, Any]] = []
    for ev in events:
        kind = ev["kind"]
        if kind == "tool_result" and ev.get("call_id") in calls:
            continue
        item: dict[str, Any] = {
            "ev": ev,
            "kind": kind,
            "quiet": kind in QUIET,
            "text": ev.get("payload") or ev.get("body") or ev.get("summary") or "",
        }
        if kind == "tool_call":
            item.update(_tool_view(ev))
            item["result"] = _result_view(results.get(ev.get("call_id") or ""))
            if ev.get("tool") in SUBAGENT_TOOLS and ev.get("ts"):
                child = next(
                    (
                        c
                        for c in spawned
                        if c["uid"] not in used and c["started_at"] >= ev["ts"] - 5000
                    ),
                    None,
                )
                if child is not None:
                    used.add(child["uid"])
                    item["subagent"] = child
        elif kind == "tool_result":
            item["result"] = _result_view(ev)
        elif kind == "user_msg":
            item["turn"] = turns.get(ev["seq"])
        out.append(item)
    return out

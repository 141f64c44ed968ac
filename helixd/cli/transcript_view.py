"""A transcript (``query.transcript``) as text for a terminal or as Markdown: user and
assistant text in full, thinking folded (unless asked), each tool call with its input and,
right under it, its result; edits as diffs; bodies the retention pass dropped marked
``evicted``; subagents and the parent named so they can be opened."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import tzinfo
from typing import Any, Final

import orjson

from helixd.core.diffs import edit_diff
from helixd.core.timeparse import local

OUTPUT_LINES: Final = 40  # a tool result's lines shown in text (markdown shows them all)
_SKIP: Final = frozenset({"lifecycle", "completion"})


def _when(ev: dict[str, Any], tz: tzinfo | None) -> str:
    at = local(ev.get("ts"), tz)
    return at.strftime("%H:%M:%S") if at else "--:--:--"


def _input(ev: dict[str, Any]) -> Any:
    if not ev.get("payload"):
        return None
    try:
        return orjson.loads(ev["payload"])
    except orjson.JSONDecodeError:
        return ev["payload"]


def _body(ev: dict[str, Any]) -> str:
    return ev.get("payload") or ev.get("body") or ev.get("summary") or ""


def _cut_lines(text: str, n: int) -> str:
    lines = text.splitlines()
    return text if len(lines) <= n else "\n".join([*lines[:n], f"… {len(lines) - n} more lines"])


def _tail_note(ev: dict[str, Any]) -> str:
    return f"\n… {ev['payload_cut']:,} more characters" if ev.get("payload_cut") else ""


def header(t: Any, tz: tzinfo | None) -> list[str]:
    s = t.session
    started = local(s["started_at"], tz)
    when = f"started {started:%Y-%m-%d %H:%M} · " if started else ""
    lines = [
        f"{s['uid']}  ({s['agent']}, {s['repo'] or '?'}, {s['model'] or '?'})",
        f"{when}{t.total:,} events",
    ]
    if s.get("parent_uid"):
        lines.append(f"parent: {s['parent_uid']}")
    lines.extend(
        f"subagent: {c['uid']}" + (f" ({c['agent_type']})" if c.get("agent_type") else "")
        for c in t.children
    )
    if t.raw == "evicted":
        lines.append("tool outputs and thinking were evicted (retention); the text remains")
    elif t.raw == "gone":
        lines.append("the events were evicted; `helixctl lookup` shows the session's digest")
    return lines


def _pairs(events: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each shown event, with the result that answers it when it is a tool call."""
    results = {e["call_id"]: e for e in events if e["kind"] == "tool_result" and e.get("call_id")}
    used: set[int] = set()
    for ev in events:
        if ev["kind"] in _SKIP or ev["seq"] in used:
            continue
        if (
            ev["kind"] == "tool_result"
            and ev.get("call_id")
            and any(e["kind"] == "tool_call" and e.get("call_id") == ev["call_id"] for e in events)
        ):
            continue  # shown under its call
        res = (
            results.get(ev["call_id"]) if ev["kind"] == "tool_call" and ev.get("call_id") else None
        )
        if res is not None:
            used.add(res["seq"])
        yield ev, res


def _status(res: dict[str, Any] | None) -> str:
    if res is None:
        return "no result in this page"
    status = res.get("status") or ("error" if res.get("is_error") else "ok")
    return "evicted" if res["payload_state"] == "evicted" else status


def _dump(args: Any) -> str:
    return (
        args if isinstance(args, str) else orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()
    )


def _tool_text(ev: dict[str, Any], res: dict[str, Any] | None) -> list[str]:
    out = [f"$ {ev['body']}" if ev.get("body") else ev["summary"]]
    args = _input(ev)
    diff = edit_diff(args) if args is not None else None
    if diff:
        out.append(_cut_lines(diff, OUTPUT_LINES * 2))
    elif args is not None and not ev.get("body"):
        out.append(_cut_lines(_dump(args), 12))
    elif ev["payload_state"] == "evicted":
        out.append("[input evicted]")
    out.append(f"→ {_status(res)}")
    if res is not None and res["payload_state"] != "evicted" and (text := _body(res)):
        out.append(_cut_lines(text, OUTPUT_LINES) + _tail_note(res))
    return out


def _event_text(ev: dict[str, Any], res: dict[str, Any] | None, thinking: bool) -> list[str]:
    if ev["kind"] == "thinking":
        text = _body(ev)
        if ev["payload_state"] == "evicted":
            return ["[thinking evicted]"]
        if thinking:
            return [text + _tail_note(ev)]
        return [f"[thinking folded: {len(text):,} characters; --thinking shows it]"]
    if ev["kind"] == "tool_call":
        return _tool_text(ev, res)
    if ev["kind"] == "edit":
        what = ev.get("body") or ev["summary"]
        return [f"edited {what} (+{ev['lines_added']} -{ev['lines_removed']})"]
    out = [_body(ev) + _tail_note(ev)]
    if ev["kind"] == "assistant_msg" and ev.get("tokens"):
        out.append(f"({ev['tokens']:,} output tokens)")
    return out


def render_text(t: Any, tz: tzinfo | None = None, thinking: bool = False) -> str:
    out = header(t, tz)
    if t.has_before:
        out.append(f"… {t.events[0]['seq'] - (t.first_seq or 0)} earlier events (--from to page)")
    for ev, res in _pairs(t.events):
        side = "  ↳ " if ev["is_sidechain"] else ""
        who = ev["kind"].replace("_msg", "").replace("_", " ")
        tool = f" · {ev['tool']}" if ev.get("tool") else ""
        out += ["", f"{side}── #{ev['seq']} {_when(ev, tz)} {who}{tool}"]
        out += _event_text(ev, res, thinking)
    if t.has_after:
        out.append(f"\n… {(t.last_seq or 0) - t.events[-1]['seq']} later events (--after to page)")
    return "\n".join(out) + "\n"


def render_markdown(t: Any, tz: tzinfo | None = None, thinking: bool = False) -> str:
    s = t.session
    out = [f"# {s.get('display_title') or s['uid']}", "", *(f"- {line}" for line in header(t, tz))]
    for ev, res in _pairs(t.events):
        when = _when(ev, tz)
        if ev["kind"] == "user_msg":
            out += ["", f"## User · {when} · #{ev['seq']}", "", _body(ev)]
        elif ev["kind"] == "assistant_msg":
            out += ["", f"## Assistant · {when} · #{ev['seq']}", "", _body(ev)]
        elif ev["kind"] == "thinking":
            text = "(evicted)" if ev["payload_state"] == "evicted" else _body(ev)
            out += ["", "<details><summary>Thinking</summary>", "", text, "", "</details>"]
        elif ev["kind"] == "tool_call":
            out += ["", f"### Tool · {ev.get('tool') or '?'} · {when} · #{ev['seq']}", ""]
            args = _input(ev)
            diff = edit_diff(args) if args is not None else None
            if diff:
                out += ["```diff", diff, "```"]
            elif ev.get("body"):
                out += ["```sh", ev["body"], "```"]
            elif args is not None:
                text = (
                    args
                    if isinstance(args, str)
                    else orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()
                )
                out += ["```json", text, "```"]
            out += ["", f"Result: {_status(res)}"]
            if res is not None and res["payload_state"] != "evicted" and _body(res):
                out += ["", "```", _body(res), "```"]
        elif ev["kind"] in ("error", "human_intervention", "test_run", "edit"):
            out += ["", f"> **{ev['kind'].replace('_', ' ')}** · #{ev['seq']}: {ev['summary']}"]
    return "\n".join(out) + "\n"

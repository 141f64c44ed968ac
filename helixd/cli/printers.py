"""How ``helixctl`` prints its documents for a person (``--json`` prints them as they are):
the ingest summary, a session's digest with its signals, the status document."""

from __future__ import annotations

from typing import Any

from helixd.cli.output import echo


def print_summary(s: dict[str, Any]) -> None:
    echo(
        f"files {s['files']} (read {s['files_read']}, gone {s['files_gone']}), "
        f"bytes {s['bytes']:,}, sessions {s['sessions']}, events {s['events']:,}, "
        f"malformed lines {s['malformed_lines']}, unknown records {s['unknown_records']}, "
        f"secrets redacted {s['redactions']}, digests {s['digests_built']}, "
        f"{s['seconds']:.2f} s, {s['mb_per_s']:.1f} MB/s"
    )
    if s.get("eviction"):
        echo(describe_eviction(s["eviction"]))
        for loss in s["eviction"].get("data_loss", []):
            echo(f"warning: data loss: {loss['uid']} ({loss['bytes']:,} bytes)", err=True)
    if not s["roots"]:
        echo("no agent log directories found (see `helixctl ingest --help`)", err=True)
    skipped = s.get("skipped") or {}
    if skipped:
        echo(
            f"skipped {sum(skipped.values())} files Helix cannot read ({by_reason(skipped)})",
            err=True,
        )
    for err in s["errors"]:
        echo(f"warning: {err}", err=True)
    if s.get("stale_files"):
        echo(
            f"{s['stale_files']} files were read by an older adapter version:"
            " `helixctl renormalize` rebuilds them from the stored raw lines"
            " (the daemon does it by itself when idle)",
            err=True,
        )


def describe_eviction(summary: dict[str, Any]) -> str:
    """One line for a person: what the pass dropped, and the Tier 1 usage after it."""
    applied = summary.get("applied", 0)
    sessions = len({e["session_id"] for e in summary.get("evictions", [])})
    head = (
        f"retention: {sessions} sessions evicted, {summary.get('bytes_freed', 0) / 1e6:,.1f} MB"
        " freed"
        if applied
        else "retention: nothing to evict"
    )
    return (
        f"{head}; Tier 1 {summary['usage_after'] / 1e6:,.1f} MB"
        f" (soft cap {summary['soft_cap'] / 1e6:,.0f} MB)"
    )


def by_reason(counts: dict[str, int]) -> str:
    """``{"permission_denied": 2}`` as ``permission denied 2``."""
    from helixd.sources.gate import REASONS

    return ", ".join(f"{REASONS.get(k, k)} {n}" for k, n in sorted(counts.items()))


def print_unreadable(doc: dict[str, Any]) -> None:
    """The files under the roots Helix cannot read (``helixctl status``)."""
    sources = doc.get("sources")
    if sources is None:
        return
    u = sources["unreadable"]
    line = f"sources: {sources['files']} files under the roots"
    if u["files"]:
        line += f"; {u['files']} cannot be read ({by_reason(u['by_reason'])})"
    echo(line)
    for example in u["examples"][:5]:
        echo(f"  {example}")
    if u["files"] > 5:
        echo(f"  … and {u['files'] - 5} more (`helixctl status --json`)")


def _token_lines(d: dict[str, Any]) -> list[str]:
    """Tokens and cost, or that the session has no usage recorded (never a row of zeros)."""
    cost = d["cost"]
    if d.get("usage_recorded", True) is False:
        return [f"  tokens: not recorded ({d.get('usage_note') or 'no usage in the files'})"]
    approximate = d.get("usage_approximate")
    return [
        f"  tokens in {cost['input_tokens']:,} out {cost['output_tokens']:,}"
        f" cache read {cost['cache_read_tokens']:,} write {cost['cache_write_tokens']:,}"
        + (f" (approximate: {approximate})" if approximate else ""),
        f"  cost ${cost.get('usd', 0):,.4f} ({cost_source_text(cost, d)})",
    ]


def cost_source_text(cost: dict[str, Any], d: dict[str, Any]) -> str:
    """What priced a digest's ``usd``: the agent's recorded cost, the table (its source and
    date), or both."""
    table = f"prices of {d.get('price_table_date', '?')}"
    source = cost.get("usd_source", "table")  # digests built before issue 16: the table
    if source == "recorded":
        return "recorded by the agent"
    if source == "recorded+table":
        return f"recorded by the agent, the rest priced from the table: {table}"
    if source == "none":
        return "no cost recorded by the agent"
    return table


def print_digest(d: dict[str, Any]) -> None:
    cost = d["cost"]
    lines = [
        f"{d['session_uid']}  ({d['flavor']}, {d['repo'] or '?'}, {d['model'] or '?'})",
        f"  {d['started_at']} -> {d['ended_at']}  outcome {d['outcome']}"
        + (" (provisional)" if d.get("provisional") else ""),
        *_token_lines(d),
        f"  turns {cost['turns']}, retries {cost['retries']}, events {d['event_count']},"
        f" wall {cost['wall_clock_s']:.0f} s",
    ]
    if d.get("subagents"):
        total = d["cost_with_subagents"]
        lines.append(
            f"  subagents {len(d['subagents'])}; with subagents: in"
            f" {total['input_tokens']:,} out {total['output_tokens']:,}"
        )
    if d.get("parent_uid"):
        lines.append(f"  parent {d['parent_uid']}")
    lines.extend(project_lines(d))
    tools = ", ".join(
        f"{k} {v}" for k, v in sorted(d["tool_histogram"].items(), key=lambda kv: -kv[1])[:8]
    )
    if tools:
        lines.append(f"  tools: {tools}")
    lines.extend(signal_lines(d))
    markers = d["markers"]
    if markers["malformed_lines"] or markers["unknown_records"]:
        lines.append(
            f"  malformed lines {markers['malformed_lines']},"
            f" unknown records {markers['unknown_records']}"
        )
    for bad in (d.get("bad_lines") or [])[:5]:
        raw = " ".join((bad.get("raw") or "(raw evicted)").split())[:80]
        lines.append(f"    bad line @{bad['offset']} ({bad['reason'][:100]}): {raw}")
    if d["first_prompt"]:
        lines.append(f"  first prompt: {d['first_prompt'][:160]}")
    echo("\n".join(lines))


def project_lines(d: dict[str, Any]) -> list[str]:
    """Where the session worked (spec §4.1) and the commits it is tied to (code-o11y)."""
    out = []
    where = [f"domain {d['domain']}"] if d.get("domain") else []
    if d.get("repo_root"):
        where.append(f"repo at {d['repo_root']}")
    if d.get("git_branch"):
        where.append(f"branch {d['git_branch']}")
    if d.get("task_ref"):
        where.append(f"task {d['task_ref']}")
    if where:
        out.append("  " + ", ".join(where))
    if d.get("git_commit"):
        out.append(f"  started at commit {d['git_commit']}")
    for c in (d.get("commits") or [])[:10]:
        message = " ".join((c.get("message") or "(no message inline)").split())[:100]
        out.append(f"  commit {c['ts'] or '?'} [{c['status']}]: {message}")
    return out


def signal_lines(d: dict[str, Any]) -> list[str]:
    """The digest's signals, one line each (digests of schema 1 have none)."""
    out = []
    calls = d.get("tool_calls") or {}
    if calls.get("total"):
        by = ", ".join(f"{k} {v}" for k, v in calls["by_status"].items())
        p50 = calls.get("duration_ms_p50")
        out.append(
            f"  tool calls {calls['total']}: {by}"
            + (f"; median {p50 / 1000:.1f} s" if p50 is not None else "")
        )
    tests = d.get("test_runs") or {}
    if tests.get("total"):
        last = tests["last"]
        counts = (
            f" ({last['passed']} passed, {last['failed']} failed, {last['skipped']} skipped)"
            if last["passed"] is not None
            else ""
        )
        out.append(
            f"  test runs {tests['total']}; last {last['framework'] or ''} {last['status']}"
            f"{counts}: {last['command'][:80]}"
        )
    files = d.get("files") or {}
    if files.get("operations"):
        langs = ", ".join(f"{k} {v}" for k, v in files["by_language"].items())
        out.append(
            f"  files {files['paths']} (+{files['lines_added']} -{files['lines_removed']})"
            + (f": {langs}" if langs else "")
        )
    if d.get("outcome_rule"):
        out.append(f"  outcome rule: {d['outcome_rule']} (confidence {d['outcome_confidence']})")
    return out


def print_status(doc: dict[str, Any]) -> None:
    d, st = doc["daemon"], doc["store"]
    if d["running"]:
        q = d.get("queue") or {}
        echo(
            f"helixd: running (pid {d['pid']}, version {d.get('version')}, "
            f"up {d.get('uptime_s', 0):.0f} s), queue {q.get('pending', 0)}"
        )
        roots = d.get("roots") or {}
        for root in roots.get("watched", []):
            echo(f"  watching {root}")
        for root in roots.get("waiting_for", []):
            echo(f"  waiting for {root}")
        for name, job in (d.get("jobs") or {}).items():
            result = "ok" if job.get("ok") else (job.get("error") or "not run yet")
            echo(f"  job {name}: {job.get('runs', 0)} runs, last: {result}")
        missed = (d.get("ingest") or {}).get("unreadable") or {}
        if missed.get("files"):
            echo(
                f"  could not read {missed['files']} files"
                f" ({by_reason(missed['by_reason'])}) at its last look"
            )
        _print_failing(d)
    else:
        echo("helixd: not running (what follows is what the store alone can tell)")
    print_unreadable(doc)
    echo(f"store: {st['path']} ({st['bytes'] / 1e6:,.1f} MB)")
    fault = st.get("fault")
    if fault:
        retries = f", {fault['retries']} retries so far" if fault.get("retries") else ""
        echo(f"  FAULT: the store {fault['condition']} ({fault['detail']}){retries}")
        echo(f"  fix: {fault['fix']}")
    if "files" not in st:
        echo("  no store yet: run `helixctl ingest` or start helixd")
        return
    echo(
        f"  files tracked {st['files']} (gone {st['files_gone']}), lines {st['lines']:,},"
        f" malformed {st['malformed_lines']}, unknown records {st['unknown_records']}"
    )
    if st.get("malformed_by_agent"):
        by = ", ".join(f"{a} {n}" for a, n in sorted(st["malformed_by_agent"].items()))
        echo(f"  malformed lines kept raw: {by}; latest:")
        for bad in st.get("malformed_latest") or []:
            echo(f"    {bad['path']} @{bad['offset']}: {bad['reason'][:120]}")
    for agent, a in sorted(st["agents"].items()):
        echo(f"  {agent}: {a['with_messages']} sessions, {a['events']:,} events")
    lag = doc["ingest_lag"]
    echo(f"  ingest lag: {lag['bytes']:,} bytes in {lag['files']} files")
    r = doc["retention"]
    index = st.get("tier1", {}).get("index_bytes", 0)
    echo(
        f"  raw tier {r['raw_bytes'] / 1e6:,.1f} MB (raw lines + events + full-text index"
        f" {index / 1e6:,.1f} MB, as `evict` counts)"
        f" of soft cap "
        f"{r['raw_soft_cap_bytes'] / 1e9:.1f} GB (hard {r['raw_hard_cap_bytes'] / 1e9:.1f})"
    )
    if "fleet" in doc:
        echo(f"  {fleet_line(doc['fleet'])}")
    loss = st.get("data_loss") or {}
    if loss.get("sessions"):
        echo(
            f"  DATA LOSS: {loss['sessions']} un-analyzed sessions ({loss['bytes'] / 1e6:,.1f} MB)"
            " dropped over the hard cap (see `helixctl evict --help`)"
        )


def print_sessions(page: Any, tz: Any = None) -> None:
    """A table of sessions: when, uid, repo, messages, cost, title (the agent's, else the
    first prompt), fitted to the terminal's width."""
    from helixd.cli.textable import render
    from helixd.core.timeparse import local

    rows = []
    for r in page.sessions:
        started = local(r["started_at"], tz)
        when = started.strftime("%Y-%m-%d %H:%M") if started else "-"
        rows.append(
            [
                when,
                r["uid"],
                r["repo"] or "-",
                f"{r['messages']:,}",
                f"${r['cost_usd']:,.2f}",
                r["display_title"] or "",
            ]
        )
    head = ["STARTED", "SESSION", "REPO", "MSGS", "COST", "TITLE"]
    right = [False, False, False, True, True, False]
    echo(render(head, rows, right=right, flex=5))


def _print_failing(d: dict[str, Any]) -> None:
    """Files in backoff and a status file that cannot be written."""
    import time

    failing = d.get("failing_files") or {}
    if failing.get("count"):
        echo(f"  files failing: {failing['count']} (each retried on its own backoff)")
        for f in failing["files"][:10]:
            wait = max(float(f["next_retry_at"]) - time.time(), 0.0)
            echo(f"    {f['path']}: {f['error']}")
            echo(f"      {f['failures']} failures, next try in {wait:.0f} s")
    hooks = d.get("hook_activity") or {}
    if hooks.get("held") or hooks.get("dropped"):
        echo(
            f"  hook activity held until the store takes writes: {hooks.get('held', 0)}"
            + (f" ({hooks['dropped']} dropped past the limit)" if hooks.get("dropped") else "")
        )
    error = d.get("status_file_error")
    if error:
        echo(f"  status file {error['path']} cannot be written: {error['error']}")


def fleet_line(loc: dict[str, Any]) -> str:
    """One line: the mirror's state on this machine (also in `helixctl status`)."""
    if not loc.get("recording"):
        return "fleet: configured, nothing pushed yet" if loc["configured"] else "fleet: off"
    line = (
        f"fleet: {loc['pending']:,} changes waiting"
        + (f" (oldest {loc['lag_s']:,.0f} s)" if loc["pending"] else "")
        + f", last push {loc['last_push_at'] or 'never'}"
    )
    if loc.get("last_error"):
        line += f"; FAILED ({loc['failures']} in a row): {loc['last_error']}"
    if loc.get("over_warn_rows"):
        line += f"; more than {loc['warn_rows']:,} waiting: is the server reachable?"
    return line

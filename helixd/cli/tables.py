"""The tables ``helixctl report`` and ``helixctl stats`` print for a person, from the same
documents ``--json`` prints (plain aligned text: ``cli/textable.py``)."""

from __future__ import annotations

from typing import Any

from helixd.cli.output import echo
from helixd.cli.textable import render

_KEYS = {"daily": "date", "weekly": "week", "monthly": "month", "session": "sessionId"}


def _usage_cells(e: dict[str, Any]) -> list[str]:
    return [
        f"{e['inputTokens']:,}",
        f"{e['outputTokens']:,}",
        f"{e['cacheCreationTokens']:,}",
        f"{e['cacheReadTokens']:,}",
        f"{e['totalTokens']:,}",
        f"${e.get('totalCost', e.get('cost', 0.0)):,.2f}",
    ]


def print_report(doc: dict[str, Any], period: str, breakdown: bool) -> None:
    key = _KEYS[period]
    entries = doc["sessions" if period == "session" else period]
    rows = []
    for e in entries:
        name = f"{e['machine']} {e[key]}" if "machine" in e else str(e[key])
        rows.append([name, ", ".join(e["modelsUsed"]), *_usage_cells(e)])
        if breakdown:
            rows.extend(["  └", b["modelName"], *_usage_cells(b)] for b in e["modelBreakdowns"])
            rows.extend(
                ["  └", f"{b['machine']} ({b['user']})", *_usage_cells(b)]
                for b in e.get("machineBreakdowns", ())
            )
    head = ["", "Models", "Input", "Output", "Cache write", "Cache read", "Total", "Cost"]
    echo(
        render(
            head,
            rows,
            right=[False, False, *[True] * 6],
            flex=1,
            title=f"Token usage ({period})",
            total=["Total", "", *_usage_cells(doc["totals"])],
        )
    )
    note = price_note(doc.get("prices"))
    if note:
        echo(note)
    if entries:
        echo(cost_note(doc.get("costMode", "auto"), entries))
    undated = doc.get("undated")
    if undated:
        echo(
            f"Not in any {_KEYS[period]}: {undated['inputTokens']:,} input tokens,"
            f" {undated['outputTokens']:,} output, ${undated['totalCost']:,.2f}, with no usable"
            " time (missing or impossible timestamps); `helixctl report session` counts them."
        )
    if "machines" in doc:  # a fleet report: the range by machine and by user
        for title, first, key in (("machine", "Machine", "machine"), ("user", "User", "user")):
            rows = [
                [str(m[key]), ", ".join(m["modelsUsed"]), *_usage_cells(m)] for m in doc[f"{key}s"]
            ]
            echo()
            echo(
                render(
                    [
                        first,
                        "Models",
                        "Input",
                        "Output",
                        "Cache write",
                        "Cache read",
                        "Total",
                        "Cost",
                    ],
                    rows,
                    right=[False, False, *[True] * 6],
                    flex=1,
                    title=f"By {title}",
                )
            )


def print_stats(doc: dict[str, Any]) -> None:
    out = []
    for dim in ("agent", "repo", "model", "machine", "user"):
        if f"by_{dim}" not in doc:  # machine and user: fleet stats only
            continue
        rows = [
            [key, f"{s['sessions']:,}", f"{s['tokens']:,}", f"${s['cost']:,.2f}"]
            for key, s in doc[f"by_{dim}"].items()
        ]
        out.append(
            render(
                [dim, "Sessions", "Tokens", "Cost"],
                rows,
                right=[False, True, True, True],
                flex=0,
                title=f"By {dim}",
            )
        )
    rows = [
        [
            t["tool"] or "?",
            f"{t['calls']:,}",
            f"{t['errors']:,}",
            f"{t['rejected']:,}",
            f"{t['interrupted']:,}",
            f"{t['no_result']:,}",
            "-" if t["success_rate"] is None else f"{t['success_rate']:.1%}",
        ]
        for t in doc["tools"]
    ]
    head = ["Tool", "Calls", "Errors", "Rejected", "Interrupted", "No result", "Success"]
    out.append(render(head, rows, right=[False, *[True] * 6], flex=0, title="Tool calls"))
    rows = [
        [
            f["path"],
            str(f["edits"]),
            str(f["sessions"]),
            str(f["lines_added"]),
            str(f["lines_removed"]),
        ]
        for f in doc["files"]
    ]
    head = ["File", "Edits", "Sessions", "+lines", "-lines"]
    out.append(render(head, rows, right=[False, *[True] * 4], flex=0, title="Most edited files"))
    rows = [
        [
            name,
            str(v["runs"]),
            str(v["passed"]),
            str(v["failed"]),
            "-" if v["pass_rate"] is None else f"{v['pass_rate']:.1%}",
            f"{v['tests_passed']:,}/{v['tests_failed']:,}/{v['tests_skipped']:,}",
        ]
        for name, v in doc["tests"].items()
    ]
    head = ["Framework", "Runs", "Passed", "Failed", "Pass rate", "Tests ok/failed/skipped"]
    out.append(
        render(
            head,
            rows,
            right=[False, *[True] * 5],
            flex=0,
            title="Test runs (a run passes when its summary reports no failure)",
        )
    )
    ie = doc["interventions_and_errors"]
    lines = [
        f"Interventions {ie['interventions']:,}, errors {ie['errors']:,}"
        f" in {ie['sessions_with_any']:,} sessions"
    ]
    lines.extend(
        f"  {r['session_uid']}: {r['interventions']} interventions, {r['errors']} errors"
        for r in ie["top"]
    )
    out.append("\n".join(lines))
    echo("\n\n".join(out))


def cost_note(mode: str, entries: list[dict[str, Any]]) -> str:
    """``Cost (--cost auto): 3 rows recorded by the agent, 2 priced from the table``."""
    from collections import Counter

    from helixd.core.usage_report import COST_SOURCES

    sources = Counter(str(e.get("costSource", "table")) for e in entries)
    parts = [f"{n} {'row' if n == 1 else 'rows'} {COST_SOURCES[s]}" for s, n in sources.items()]
    return f"Cost (--cost {mode}): " + ", ".join(parts)


def price_note(prices: dict[str, Any] | None) -> str:
    """``Prices: <source, date>`` and the models priced otherwise (a fallback, the config)
    or not at all."""
    if not prices:
        return ""
    first = prices["source"].split(";")[0].split(",")[0]
    others: dict[str, list[str]] = {}
    for model, source in prices["models"].items():
        if source != first:
            others.setdefault(source or "no price (counted as $0)", []).append(model)
    extra = "; ".join(f"{src}: {', '.join(models)}" for src, models in sorted(others.items()))
    return f"Prices: {prices['source']}" + (f" ({extra})" if extra else "")

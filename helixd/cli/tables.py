"""The tables ``helixctl report`` and ``helixctl stats`` print for a person (rich), from the
same documents ``--json`` prints."""

from __future__ import annotations

import sys
from typing import Any


def new_console() -> Any:
    """Rich on stdout; a pipe gets a wide table rather than rich's 80 columns."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


# -- search --------------------------------------------------------------------------------


def print_report(doc: dict[str, Any], period: str, breakdown: bool) -> None:
    from rich.table import Table

    key = {"daily": "date", "weekly": "week", "monthly": "month", "session": "sessionId"}[period]
    entries = doc["sessions" if period == "session" else period]
    table = Table(title=f"Token usage ({period})")
    for col in ("", "Models", "Input", "Output", "Cache write", "Cache read", "Total", "Cost"):
        table.add_column(col, justify="left" if col in ("", "Models") else "right")

    def row(name: str, e: dict[str, Any], models: str, style: str | None = None) -> None:
        table.add_row(
            name,
            models,
            f"{e['inputTokens']:,}",
            f"{e['outputTokens']:,}",
            f"{e['cacheCreationTokens']:,}",
            f"{e['cacheReadTokens']:,}",
            f"{e['totalTokens']:,}",
            f"${e.get('totalCost', e.get('cost', 0.0)):,.2f}",
            style=style,
        )

    for e in entries:
        row(str(e[key]), e, ", ".join(e["modelsUsed"]))
        if breakdown:
            for b in e["modelBreakdowns"]:
                row("  └", b, b["modelName"], style="dim")
    table.add_section()
    row("Total", doc["totals"], "", style="bold")
    new_console().print(table)


# -- tokens --------------------------------------------------------------------------------


def print_stats(doc: dict[str, Any]) -> None:
    from rich.table import Table

    console = new_console()
    for dim in ("agent", "repo", "model"):
        table = Table(title=f"By {dim}")
        for col in (dim, "Sessions", "Tokens", "Cost"):
            table.add_column(col, justify="left" if col == dim else "right")
        for key, s in doc[f"by_{dim}"].items():
            sessions = "" if dim == "model" else f"{s['sessions']:,}"
            table.add_row(key, sessions, f"{s['tokens']:,}", f"${s['cost']:,.2f}")
        console.print(table)
    table = Table(title="Tool calls")
    for col in ("Tool", "Calls", "Errors", "Rejected", "Interrupted", "No result", "Success"):
        table.add_column(col, justify="left" if col == "Tool" else "right")
    for t in doc["tools"]:
        rate = "-" if t["success_rate"] is None else f"{t['success_rate']:.1%}"
        table.add_row(
            t["tool"] or "?",
            f"{t['calls']:,}",
            f"{t['errors']:,}",
            f"{t['rejected']:,}",
            f"{t['interrupted']:,}",
            f"{t['no_result']:,}",
            rate,
        )
    console.print(table)
    table = Table(title="Most edited files")
    for col in ("File", "Edits", "Sessions", "+lines", "-lines"):
        table.add_column(col, justify="left" if col == "File" else "right")
    for f in doc["files"]:
        table.add_row(
            f["path"],
            str(f["edits"]),
            str(f["sessions"]),
            str(f["lines_added"]),
            str(f["lines_removed"]),
        )
    console.print(table)
    table = Table(title="Test runs (a run passes when its summary reports no failure)")
    for col in ("Framework", "Runs", "Passed", "Failed", "Pass rate", "Tests ok/failed/skipped"):
        table.add_column(col, justify="left" if col == "Framework" else "right")
    for name, v in doc["tests"].items():
        rate = "-" if v["pass_rate"] is None else f"{v['pass_rate']:.1%}"
        counts = f"{v['tests_passed']:,}/{v['tests_failed']:,}/{v['tests_skipped']:,}"
        table.add_row(name, str(v["runs"]), str(v["passed"]), str(v["failed"]), rate, counts)
    console.print(table)
    ie = doc["interventions_and_errors"]
    console.print(
        f"Interventions {ie['interventions']:,}, errors {ie['errors']:,}"
        f" in {ie['sessions_with_any']:,} sessions"
    )
    for r in ie["top"]:
        console.print(
            f"  {r['session_uid']}: {r['interventions']} interventions, {r['errors']} errors"
        )

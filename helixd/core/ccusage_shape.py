"""ccusage 20's unified JSON (``ccusage daily|weekly|monthly|session --json``) of a report
document built by ``helixd.core.usage_report`` (``helixctl report --format ccusage``).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from helixd.core.usage_report import PERIOD_KEY

# -- ccusage 20's unified shape ----------------------------------------------------------------
_CCUSAGE_TOKENS: Final = (
    "inputTokens",
    "outputTokens",
    "cacheCreationTokens",
    "cacheReadTokens",
    "totalTokens",
    "totalCost",
)


def _cc_tokens(e: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: e[k] for k in _CCUSAGE_TOKENS}
    out["modelsUsed"] = e["modelsUsed"]
    out["modelBreakdowns"] = [
        {k: b[k] for k in ("modelName", *_CCUSAGE_TOKENS[:4], "cost")} for b in e["modelBreakdowns"]
    ]
    return out


def ccusage_shape(doc: Mapping[str, Any], period: str, agent: str = "all") -> dict[str, Any]:
    """A report document (``period_report`` / ``session_report``) in ccusage 20's unified
    JSON (``ccusage daily|weekly|monthly|session --json``): one list under the period's name
    (``session`` for sessions) of ``{agent, period, metadata, <tokens>, totalCost,
    modelsUsed, modelBreakdowns}`` and ``totals`` — ``agent`` is ``all`` with the agents in
    ``metadata.agents`` for periods, the session's agent for sessions (whose ``period`` is
    the session id, ``metadata`` its ``lastActivity`` and ``reasoningOutputTokens`` when
    any), sessions by cost, highest first."""
    totals = {k: doc["totals"][k] for k in _CCUSAGE_TOKENS}
    if period == "session":
        rows = []
        for e in doc["sessions"]:
            meta: dict[str, Any] = {"lastActivity": e["lastActivity"]}
            if e.get("reasoningOutputTokens"):
                meta["reasoningOutputTokens"] = e["reasoningOutputTokens"]
            sid = str(e["sessionId"]).split(":", 1)[-1]
            rows.append({"agent": e["agent"], "period": sid, "metadata": meta, **_cc_tokens(e)})
        rows.sort(key=lambda r: (-r["totalCost"], r["period"]))
        return {"session": rows, "totals": totals}
    key = PERIOD_KEY[period]
    entries = [
        {"agent": agent, "period": e[key], "metadata": {"agents": e["agents"]}, **_cc_tokens(e)}
        for e in doc[period]
    ]
    return {period: entries, "totals": totals}

"""Golden tests: Helix against the real Claude Code transcripts in ``tests/fixtures/claude``.

The expected numbers in ``GOLDEN`` were worked out from the raw files, not from Helix:

* by a small independent reader (``_read_corpus`` below: stdlib ``json``, no helixd import),
  and, for the small files, by hand (the comments say how);
* with the counting rules of ``shared/notes/formats.md`` §3, §9.1, §10, §11.1: one usage per
  API response keyed (``message.id``, ``requestId``) - ``message.id`` alone without a
  requestId - keeping the largest output snapshot; a response replayed into another file
  counts once, credited to the earliest file (main files before subagent files, then the
  earliest record); model ``<synthetic>`` counts nothing; ``agent_progress`` copies are never
  counted; subagent files are their own sessions ``claude:agent-<id>`` linked to the parent
  (``claude:<dir name>`` nested, ``claude:<records' sessionId>`` flat); a main session is
  ``claude:<file stem>``.

The literals are what the tests compare Helix with; a test checks that the reader still
derives the same literals from the fixture bytes, so neither can drift silently.  Then Helix
runs end to end twice: in-process (``Store.open``, ``Ingestor.backfill``, ``digest.analyze``,
as ``helixctl ingest`` does) and as the real ``helixctl`` in a subprocess with ``HOME`` and
``HELIX_STORE_DB`` set.  Last, small inputs cut from the real files pin single rules, and
``test_parity_with_ccusage`` compares with ccusage's report on the same corpus
(``tests/fixtures/ccusage/claude-session.json``), explaining every difference.

Definitions used for the activity numbers:

* ``tools``: names of ``tool_use`` content blocks of assistant records, and of the
  subagent messages Claude Code copies into the parent's ``agent_progress`` records (a
  delegated call: Helix keeps it as a side-chain event of the parent);
* ``tool_results``: ``tool_result`` content blocks of user records (and of those copies);
* ``thinking``: ``thinking``/``redacted_thinking`` blocks of assistant records;
* ``prompts``: user records that carry a prompt - typed text (a string or text blocks), a
  slash command (``<command-name>``) or a pasted image - one per record; not ``isMeta``
  expansions, compaction summaries, tool results, ``<local-command-…>`` output or
  ``[Request interrupted…]`` markers.  ``sidechain_prompts`` are the task prompts of
  subagents that old Claude Code versions (1.0.x) wrote inline (``isSidechain``) into the
  main file; Helix keeps those records in the main session, so its ``user_msg`` count is
  ``prompts + sidechain_prompts``;
* a record is a line: a later line that is not a byte-identical copy of an earlier one is a
  different record even when it repeats the uuid (``small.jsonl`` uses the placeholder uuid
  ``[trimmed for fixture]`` for 45 records; ``edge_cases.jsonl`` reuses two uuids; real Claude
  Code does it too, anthropics/claude-code#22178);
* ``malformed``: complete lines that are not a JSON object.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from helixd.adapters.declared import claude
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store, now_ms

FIXTURES = Path(__file__).parent / "fixtures" / "claude"
CCUSAGE = Path(__file__).parent / "fixtures" / "ccusage" / "claude-session.json"
HELIXCTL = Path(sys.executable).parent / "helixctl"
REPO = Path(__file__).parent.parent


@dataclass(frozen=True)
class Golden:
    """Expected facts of one session (one transcript file)."""

    rel: str  # the file under tests/fixtures/claude
    tokens: tuple[int, int, int, int]  # input, output, cache read, cache write (creation)
    tools: dict[str, int]
    tool_results: int
    thinking: int
    prompts: int
    sidechain_prompts: int = 0
    malformed: int = 0
    parent: str | None = None


M = "M-Thisness__M-Claude/"
K = "d-kimuson__claude-code-viewer/"
D = "dagster-io__erk/"
J = "jazzyalex__agent-sessions/"

# fmt: off
# "n lines -> r responses": usage-bearing assistant lines and distinct (message.id, requestId)
# keys.  "sum-of-lines out" / "first-snapshot out": the output total a reader would report
# that sums every line / keeps the first line of each response - both wrong.
GOLDEN: dict[str, Golden] = {
    # --- M-Thisness/M-Claude (real, owner-redacted) ------------------------------------------
    "claude:18240050-3ee8-41cd-a89a-0a5c4b709607": Golden(
        # 72 lines -> 32 responses; sum-of-lines out 6650, first-snapshot out 111.
        M + "Archives/18240050-3ee8-41cd-a89a-0a5c4b709607.jsonl",
        (374, 6511, 749843, 53592),
        {"Bash": 20, "Glob": 2, "Read": 1, "TodoWrite": 8, "Write": 2},
        tool_results=33, thinking=32, prompts=6,
    ),
    "claude:1c7cbf4e-801e-42e5-afad-7d571647725d": Golden(
        # 10 api_error retries, then one <synthetic> placeholder (all-zero usage, not counted).
        M + "Archives/1c7cbf4e-801e-42e5-afad-7d571647725d.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
    ),
    "claude:9be1d737-c769-4d5e-b69d-3e0f4f13a1ce": Golden(
        # 30 lines -> 10 responses; sum-of-lines out 55.  Lines 92, 106, 113 are invalid JSON
        # (redaction damage); they held 3 tool results, which nobody can read.
        M + "Archives/9be1d737-c769-4d5e-b69d-3e0f4f13a1ce.jsonl",
        (864, 18, 224602, 16228),
        {"Bash": 8, "WebFetch": 2, "WebSearch": 2},
        tool_results=9, thinking=10, prompts=2, malformed=3,
    ),
    "claude:agent-a17266e": Golden(
        # flat warmup agent, one user line; parent = its sessionId (a 0-byte file here).
        M + "Archives/agent-a17266e.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
        parent="claude:e87ac024-21a7-42ed-bff4-e19317199c49",
    ),
    "claude:agent-abadced": Golden(
        # flat subagent; 59 lines -> 15 responses; sum-of-lines out 4241, first-snapshot 37.
        M + "Archives/agent-abadced.jsonl",
        (4590, 3155, 353641, 43769),
        {"Bash": 12, "Glob": 12, "Grep": 4, "Read": 14},
        tool_results=42, thinking=15, prompts=1,
        parent="claude:21e3c711-a412-4fe7-96ba-6f14004e1006",
    ),
    "claude:e0ce82fa-774f-4827-8cef-17b1b18b9f2a": Golden(
        # 72 summary lines, one prompt, api errors, one <synthetic> reply.
        M + "Archives/e0ce82fa-774f-4827-8cef-17b1b18b9f2a.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
    ),
    "claude:e6804af6-fe01-478c-9e10-75e94f3e93cb": Golden(
        # one summary line and nothing else
        M + "Archives/e6804af6-fe01-478c-9e10-75e94f3e93cb.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=0,
    ),
    "claude:f5d8e1ac-47cd-48b4-a150-40dc97d0dad9": Golden(
        M + "Archives/f5d8e1ac-47cd-48b4-a150-40dc97d0dad9.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
    ),
    "claude:02e01366-c7d5-42cd-9c58-3df865c55a25": Golden(
        # by hand: 8 responses, one line each (2 <synthetic> placeholders skipped):
        # in 2+2+2+2+0+2+0+0; out 1+2+121+95+1+101+24+106; read 0+18486+18506+18861+18986
        # +15089+19326+19453; write 18486+20+355+125+163+4237+127+138.  20 lines are invalid
        # JSON (system/api_error records with redacted numbers).
        M + "CHAT_LOGS/02e01366-c7d5-42cd-9c58-3df865c55a25.jsonl",
        (10, 451, 128707, 23651),
        {"Bash": 2, "BashOutput": 1},
        tool_results=3, thinking=0, prompts=7, malformed=20,
    ),
    "claude:ab454957-7a00-4f51-bbef-edab48892c60": Golden(
        # only <synthetic> replies; 40 invalid lines
        M + "CHAT_LOGS/ab454957-7a00-4f51-bbef-edab48892c60.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=4, malformed=40,
    ),
    "claude:ac086a83-e3e7-4ad2-9265-4b3c2f437b4a": Golden(
        # only system/local_command records
        M + "CHAT_LOGS/ac086a83-e3e7-4ad2-9265-4b3c2f437b4a.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=0,
    ),
    "claude:agent-b2da72c2": Golden(
        # by hand: one assistant line, haiku warmup: in 724, out 119.
        M + "CHAT_LOGS/agent-b2da72c2.jsonl",
        (724, 119, 0, 0), {}, tool_results=0, thinking=0, prompts=0,
        parent="claude:ac086a83-e3e7-4ad2-9265-4b3c2f437b4a",
    ),
    "claude:agent-d2de5d2b": Golden(
        # warmup whose only reply is <synthetic>
        M + "CHAT_LOGS/agent-d2de5d2b.jsonl",
        (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
        parent="claude:ab454957-7a00-4f51-bbef-edab48892c60",
    ),
    "claude:a13943fd-13e4-4103-86fd-53376fc7eb58": Golden(
        # by hand: 10 lines -> 5 responses (thinking line + text/tool line each), outputs
        # 5, 4, 2->350, 6->800, 1 => 1160 (first-snapshot would say 18); in 9+9+12+9+12;
        # read 12861+18435+18873+12861+12861; write 5574+438+1807+7997+9201.
        M + "transcripts/a13943fd-13e4-4103-86fd-53376fc7eb58.jsonl",
        (51, 1160, 75891, 25017),
        {"Edit": 1, "Read": 1},
        tool_results=2, thinking=5, prompts=3,
    ),
    "claude:agent-a70627f": Golden(
        # sessionId mangled by the owner's redactor; the link follows the bytes.
        M + "transcripts/agent-a70627f.jsonl",
        (733, 2, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
        parent="claude:0d[REDACTED_PHONE]c2a-45ab-850a-088f[REDACTED_PHONE]b4cc",
    ),
    "claude:agent-ae50abf": Golden(
        M + "transcripts/agent-ae50abf.jsonl",
        (733, 1, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
        parent="claude:187e63fb-1e58-43d2-a2d6-d0aeeb7a81d0",
    ),
    # --- d-kimuson/claude-code-viewer (real, Claude Code 1.0.x: subagents inline) ------------
    "claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a": Golden(
        # 15 lines -> 7 responses; sum-of-lines out 1258, first-snapshot 268.  The prompt is
        # the /init command (its isMeta expansion is not a prompt).
        K + "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        (93, 953, 103219, 12698),
        {"Bash": 2, "Glob": 6, "TodoWrite": 3, "Write": 1},
        tool_results=12, thinking=0, prompts=1,
    ),
    "claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7": Golden(
        # 28 lines -> 20 responses; sum-of-lines out 4031, first-snapshot 2498.  Two Task
        # subagents ran inline (isSidechain) - their usage is in this file and counted here.
        K + "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        (129, 3629, 324259, 47747),
        {"Bash": 5, "Edit": 1, "Glob": 3, "MultiEdit": 1, "Read": 3, "Task": 3, "TodoWrite": 5},
        tool_results=21, thinking=0, prompts=1, sidechain_prompts=2,
    ),
    "claude:agent-test-hash-123": Golden(
        # by hand: flat subagent of 5c0375b4 (its sessionId): in 100, out 10.
        K + "agent-test-hash-123.jsonl",
        (100, 10, 0, 0), {}, tool_results=0, thinking=0, prompts=1,
        parent="claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
    ),
    "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b": Golden(
        # 262 lines -> 170 responses; sum-of-lines out 77612, first-snapshot 49780.
        K + "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        (818, 51933, 3647854, 137976),
        {
            "Bash": 61, "BashOutput": 5, "Edit": 8, "Glob": 2, "KillBash": 3, "MultiEdit": 3,
            "Read": 28, "Task": 5, "TodoWrite": 19, "Write": 33,
        },
        tool_results=167, thinking=0, prompts=2, sidechain_prompts=5,
    ),
    # --- daaain/claude-code-log (hand-written test data) -------------------------------------
    "claude:edge_cases": Golden(
        # by hand: in 35+200+85, out 145+25+180.  Line 16 replays msg_004/req_004 (168/85)
        # from todowrite_examples.jsonl, whose records are earlier (10:00:00 vs 10:02:00):
        # credited there, not here.  Malformed: "massive error", 42, [1] (JSON, not objects).
        # Prompts: lines 0, 2, 5, 6 (/test-command), 11; not 7 (<local-command-stdout>),
        # 9 and 10 (no content), 17 (a bare string is not a content block).  Line 11 shares
        # uuid edge_011 with the content-less line 10.
        "daaain__claude-code-log/edge_cases.jsonl",
        (320, 350, 0, 0),
        {"FailingTool": 1, "MultiEdit": 1, "TodoWrite": 1},
        tool_results=1, thinking=0, prompts=5, malformed=3,
    ),
    "claude:todowrite_examples": Golden(
        # by hand: 6 responses, in 20+25+150+168+250+270, out 25+85+18+85+20+95.
        "daaain__claude-code-log/todowrite_examples.jsonl",
        (883, 328, 0, 0), {"TodoWrite": 3}, tool_results=3, thinking=0, prompts=2,
    ),
    # --- dagster-io/erk (real; 2.x with progress records) ------------------------------------
    "claude:26efdcc5-de34-4028-a984-9a094a9fa95b": Golden(
        # 34 lines -> 18 responses; sum-of-lines out 1079, first-snapshot 438.
        D + "26efdcc5-de34-4028-a984-9a094a9fa95b.jsonl",
        (19, 984, 601898, 17645),
        {"Bash": 12, "Edit": 1, "Read": 2, "TaskCreate": 1, "TaskUpdate": 2},
        tool_results=17, thinking=7, prompts=1,
    ),
    "claude:635d7caf-7e33-4187-9339-e9bb9c83982a": Golden(
        # 5 lines -> 3 responses; sum-of-lines out 9.
        D + "635d7caf-7e33-4187-9339-e9bb9c83982a.jsonl",
        (6, 5, 75474, 14063), {"Skill": 1, "Task": 1}, tool_results=2, thinking=0, prompts=1,
    ),
    "claude:a5c478e1-0d31-46d4-9fd6-3b6b203b3752": Golden(
        # 147 lines -> 75 responses; sum-of-lines out 7637, first-snapshot 641; compacted once
        # (the isCompactSummary user record is not a prompt).
        D + "a5c478e1-0d31-46d4-9fd6-3b6b203b3752.jsonl",
        (2306, 7378, 8319006, 165478),
        {
            "Bash": 10, "Edit": 18, "Grep": 5, "Read": 29, "Skill": 1, "Task": 7,
            "TaskOutput": 7, "TodoWrite": 12, "Write": 5,
        },
        tool_results=94, thinking=0, prompts=1,
    ),
    "claude:ae4a1257-cf8e-47b3-8c80-d7991e4495dd": Golden(
        # 146 lines -> 62 responses; sum-of-lines out 6587, first-snapshot 735.  9 of its 23
        # agent_progress records embed subagent assistant messages with usage: never counted.
        D + "ae4a1257-cf8e-47b3-8c80-d7991e4495dd.jsonl",
        (67, 6129, 7656093, 185629),
        # Bash: 5 of its own + 8 a subagent ran (pytest, ruff) copied into agent_progress.
        {
            "Bash": 13, "Edit": 18, "Grep": 14, "Read": 29, "Task": 7, "TaskCreate": 4,
            "TaskList": 1, "TaskUpdate": 8,
        },
        tool_results=91, thinking=12, prompts=1,
    ),
    "claude:b2c8258b-cfa7-4411-82bd-b2817ab24b4d": Golden(
        # 26 lines -> 19 responses; sum-of-lines out 3116, first-snapshot 1856.
        D + "b2c8258b-cfa7-4411-82bd-b2817ab24b4d.jsonl",
        (20, 3081, 674945, 22854),
        {"Bash": 8, "Edit": 3, "Read": 5, "TaskCreate": 1, "TaskUpdate": 2},
        tool_results=18, thinking=3, prompts=1,
    ),
    "claude:beddc0be-103e-4a78-ae7d-ba6c1bad3ac8": Golden(
        # 78 lines -> 34 responses (+1 <synthetic> API error); sum-of-lines out 8958,
        # first-snapshot 1604.  Prompts: /erk:plan-implement, /exit, "restacked onto it,
        # restart plan", "implement it here" (not the interrupt marker, the local-command
        # caveat/stdout or the isMeta /erk:plan-save expansion).
        D + "beddc0be-103e-4a78-ae7d-ba6c1bad3ac8.jsonl",
        (40, 8509, 1440068, 51072),
        # Bash: 17 of its own + 3 pytest runs a subagent made (copied into agent_progress).
        {
            "AskUserQuestion": 1, "Bash": 20, "Edit": 1, "ExitPlanMode": 1, "Glob": 6,
            "Read": 9, "Skill": 1, "Task": 2, "TaskCreate": 4, "TaskUpdate": 8, "Write": 4,
        },
        tool_results=55, thinking=11, prompts=4,
    ),
    "claude:dc2f576f-81dd-4f52-8708-126e301daf57": Golden(
        # 27 lines -> 10 responses; sum-of-lines out 2297, first-snapshot 105.
        D + "dc2f576f-81dd-4f52-8708-126e301daf57.jsonl",
        (6705, 2131, 374336, 27473),
        {"Bash": 4, "Edit": 2, "Grep": 1, "Read": 3, "TaskCreate": 3, "TaskUpdate": 5},
        tool_results=17, thinking=2, prompts=1,
    ),
    # --- jazzyalex/agent-sessions (curated / hand-written) -----------------------------------
    "claude:large": Golden(
        # no usage objects at all
        J + "large.jsonl", (0, 0, 0, 0), {"bash": 1}, tool_results=1, thinking=1, prompts=4,
    ),
    "claude:schema_drift": Golden(
        # top-level "tool_use"/"tool_result" record types are not content blocks: no tools.
        J + "schema_drift.jsonl", (0, 0, 0, 0), {}, tool_results=0, thinking=0, prompts=2,
    ),
    "claude:small": Golden(
        # by hand: the only non-zero usage is msg_stage0_1 (in 10, out 5); the trimmed
        # responses are all zero and line 46 is <synthetic>.  Thinking blocks on lines 7, 28,
        # 54, 64, 76, 77; prompts on lines 48 (image + text: one prompt), 59, 61, 62, 86, and
        # "Hello" (line 6, isSidechain).  45 records share the uuid "[trimmed for fixture]".
        J + "small.jsonl",
        (10, 5, 0, 0),
        {"Bash": 1, "[trimmed for fixture]": 1, "bash": 1},
        tool_results=3, thinking=6, prompts=5, sidechain_prompts=1,
    ),
    "claude:0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f": Golden(
        J + "subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl",
        (0, 0, 0, 0), {"Task": 1}, tool_results=0, thinking=0, prompts=1,
    ),
    "claude:agent-a0ad4f44468bdf20d": Golden(
        # nested layout: parent from the directory name (its records say sessionId
        # "agent-a0ad4f44468bdf20d", which is not the parent).
        J + "subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
        (0, 0, 0, 0), {"bash": 1}, tool_results=1, thinking=0, prompts=1,
        parent="claude:0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f",
    ),
    # --- kvsankar/agent-history (real, ids redacted by the owner) ----------------------------
    "claude:session-01": Golden(
        # by hand: one response, in 6, out 16, read 3057, write 1045.
        "kvsankar__agent-history/session-01.jsonl",
        (6, 16, 3057, 1045), {}, tool_results=0, thinking=0, prompts=1,
    ),
}
# fmt: on

# Files that are not sessions: a 0-byte file and a workflow journal (no Claude records).
NOT_SESSIONS = {
    M + "Archives/e87ac024-21a7-42ed-bff4-e19317199c49.jsonl",
    "daaain__claude-code-log/22220000-0000-4000-8000-000000000002/subagents/workflows/wf_sp01/"
    "journal.jsonl",
}
# Sessions without a single message (summary-only, local-command-only): `sessions` hides them.
HIDDEN = {
    "claude:e6804af6-fe01-478c-9e10-75e94f3e93cb",
    "claude:ac086a83-e3e7-4ad2-9265-4b3c2f437b4a",
}
LISTED = set(GOLDEN) - HIDDEN

# Subagents spawned by a session according to its agent_progress records (data.agentId),
# whose transcripts are not in the corpus: linked, no usage of their own here.
SPAWNED_ONLY = {
    "claude:ae4a1257-cf8e-47b3-8c80-d7991e4495dd": [
        "claude:agent-a18ece7f4ffa6f5a4",
        "claude:agent-a90b34083278d5647",
        "claude:agent-ab543bc12ec492d7c",
        "claude:agent-ac2e9bd99e915d984",
        "claude:agent-ac8608857ac4a0f7a",
        "claude:agent-ada57c592ef86f517",
        "claude:agent-afefff7c0059363a8",
    ],
    "claude:beddc0be-103e-4a78-ae7d-ba6c1bad3ac8": [
        "claude:agent-a12de436aa43578f9",
        "claude:agent-a40d27261c2f8603a",
    ],
}


def expected_subagents(uid: str) -> list[str]:
    files = [u for u, g in GOLDEN.items() if g.parent == uid]
    return sorted(files + SPAWNED_ONLY.get(uid, []))


PARENTS = sorted({g.parent for g in GOLDEN.values() if g.parent in GOLDEN} | set(SPAWNED_ONLY))


def _sum(*tokens: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return tuple(sum(t[i] for t in tokens) for i in range(4))  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# The independent reader (stdlib only; shares no code with helixd)
# ---------------------------------------------------------------------------------------------

_USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_NOT_A_PROMPT = (
    "[Request interrupted by user",
    "[Request cancelled by user",
    "<local-command-",
    "<system-reminder>",
)


@dataclass
class _File:
    rel: str
    uid: str | None
    parent: str | None
    is_sub: bool
    records: int = 0
    malformed: int = 0
    first_ts: float = float("inf")
    usage: list[tuple[tuple[str, ...], tuple[int, ...]]] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    tool_results: int = 0
    thinking: int = 0
    prompts: int = 0
    sidechain_prompts: int = 0
    messages: int = 0


def _epoch(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _read_file(root: Path, rel: str) -> _File:
    parts = PurePosixPath(rel).parts
    agent = re.fullmatch(r"agent-(.+)\.jsonl", parts[-1])
    if "subagents" in parts:
        parent = "claude:" + parts[parts.index("subagents") - 1]
        f = _File(rel, f"claude:agent-{agent.group(1)}" if agent else None, parent, True)
    elif agent:
        f = _File(rel, f"claude:agent-{agent.group(1)}", None, True)
    else:
        f = _File(rel, "claude:" + parts[-1].removesuffix(".jsonl"), None, False)
    for raw in (root / rel).read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            f.malformed += 1
            continue
        if not isinstance(rec, dict):
            f.malformed += 1
            continue
        f.records += 1
        rtype = rec.get("type")
        if rtype == "progress":
            _delegated(f, rec)
        if rtype not in ("user", "assistant"):
            continue
        ts = _epoch(rec.get("timestamp"))
        if ts is not None:
            f.first_ts = min(f.first_ts, ts)
        if f.parent is None and f.is_sub and isinstance(rec.get("sessionId"), str):
            f.parent = "claude:" + rec["sessionId"]
        message = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if rtype == "assistant":
            _assistant(f, rec, message, content, blocks)
        else:
            _user(f, rec, content, blocks)
    return f


def _assistant(
    f: _File,
    rec: dict[str, Any],
    message: dict[str, Any],
    content: Any,
    blocks: list[dict[str, Any]],
) -> None:
    if message.get("model") == "<synthetic>":  # API-error placeholder: no spend, no reply
        return
    usage = message.get("usage")
    if isinstance(usage, dict) and message.get("id"):
        key = (message["id"], rec["requestId"]) if rec.get("requestId") else (message["id"],)
        f.usage.append((key, tuple(_count(usage.get(k)) for k in _USAGE)))
    if isinstance(content, str) or any(b.get("type") == "text" for b in blocks):
        f.messages += 1
    for b in blocks:
        if b.get("type") == "tool_use":
            f.tools[b.get("name")] += 1
        elif b.get("type") in ("thinking", "redacted_thinking"):
            f.thinking += 1


def _delegated(f: _File, rec: dict[str, Any]) -> None:
    """A subagent's message copied into an ``agent_progress`` record: its tool calls and
    results count (never its usage)."""
    data = rec.get("data") if isinstance(rec.get("data"), dict) else {}
    if data.get("type") != "agent_progress":
        return
    outer = data.get("message") if isinstance(data.get("message"), dict) else {}
    inner = outer.get("message") if isinstance(outer.get("message"), dict) else {}
    content = inner.get("content")
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_use":
            f.tools[b.get("name")] += 1
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            f.tool_results += 1


def _user(f: _File, rec: dict[str, Any], content: Any, blocks: list[dict[str, Any]]) -> None:
    f.tool_results += sum(b.get("type") == "tool_result" for b in blocks)
    if rec.get("isMeta") or rec.get("isCompactSummary"):
        return
    texts = (
        [content]
        if isinstance(content, str)
        else [b.get("text") or "" for b in blocks if b.get("type") == "text"]
    )
    typed = [t for t in texts if t.strip() and not t.lstrip().startswith(_NOT_A_PROMPT)]
    if typed or any(b.get("type") == "image" for b in blocks):
        f.messages += 1
        if rec.get("isSidechain") and not f.is_sub:
            f.sidechain_prompts += 1
        else:
            f.prompts += 1


def _read_corpus(root: Path) -> tuple[dict[str, _File], dict[str, tuple[int, int, int, int]]]:
    """Per-file facts and per-session token totals after the global dedup rules."""
    rels = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jsonl"))
    files = {rel: _read_file(root, rel) for rel in rels}
    best: dict[tuple[str, ...], tuple[int, ...]] = {}
    owner: dict[tuple[str, ...], tuple[tuple[bool, float, str], str]] = {}
    for rel, f in files.items():
        order = (f.is_sub, f.first_ts, rel)  # main files first, then the earliest records
        for key, usage in f.usage:
            if key not in best or usage[1] > best[key][1]:
                best[key] = usage
            if f.uid and (key not in owner or order < owner[key][0]):
                owner[key] = (order, f.uid)
    totals: dict[str, list[int]] = {}
    for key, usage in best.items():
        acc = totals.setdefault(owner[key][1], [0, 0, 0, 0])
        for i in range(4):
            acc[i] += usage[i]
    return files, {uid: (t[0], t[1], t[2], t[3]) for uid, t in totals.items()}


# ---------------------------------------------------------------------------------------------
# Fixtures: one temp HOME with the transcripts, Helix run in-process and as the real CLI
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h = tmp_path_factory.mktemp("golden") / "home"
    shutil.copytree(FIXTURES, h / ".claude" / "projects", ignore=shutil.ignore_patterns("README*"))
    return h


async def _all_digests(store: Store) -> dict[str, dict[str, Any]]:
    out = {}
    for row in await store.sessions(None, None, True):
        d = await store.digest(row["id"])
        if d is not None:
            out[row["uid"]] = d
    return out


async def _ingest_and_analyze(root: Path, db: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """What ``helixctl ingest`` does, in-process: backfill, then rebuild changed digests."""
    store = await Store.open(db)
    try:
        stats = await Ingestor(store).backfill(discover([(claude.ADAPTER, root)]))
        changed = await store.session_ids_changed_since_analysis()
        await digest.analyze(store, changed, now_ms())
        return stats.as_dict(), await _all_digests(store)
    finally:
        await store.close()


@pytest.fixture(scope="module")
def inproc(home: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    return asyncio.run(_ingest_and_analyze(home / ".claude" / "projects", home.parent / "in.db"))


def _env(home: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELIX_", "CLAUDE_"))}
    env.update(
        HOME=str(home),
        HELIX_STORE_DB=str(db),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    return env


@dataclass
class Cli:
    home: Path
    db: Path
    first: dict[str, Any]
    second: dict[str, Any]
    digests: dict[str, dict[str, Any]]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(HELIXCTL), *args],
            env=_env(self.home, self.db),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )


@pytest.fixture(scope="module")
def cli(home: Path) -> Cli:
    """``helixctl ingest --json`` twice (the second must find nothing new), then the digests
    the CLI stored, read back through a read-only store."""
    db = home.parent / "cli-store" / "helix.db"
    c = Cli(home, db, {}, {}, {})
    summaries = []
    for _ in range(2):
        proc = c.run("ingest", "--json")
        assert proc.returncode == 0, proc.stderr
        summaries.append(json.loads(proc.stdout))
    c.first, c.second = summaries

    async def read() -> dict[str, dict[str, Any]]:
        store = await Store.open(db, readonly=True)
        try:
            return await _all_digests(store)
        finally:
            await store.close()

    c.digests = asyncio.run(read())
    return c


def _problems(uid: str, d: dict[str, Any] | None) -> list[str]:
    """Every way the digest ``d`` of ``uid`` differs from the golden expectations."""
    g = GOLDEN[uid]
    if d is None:
        return [] if uid in HIDDEN else ["no digest"]
    cost, kinds = d["cost"], d["kind_counts"]
    got = {
        "tokens": (
            cost["input_tokens"],
            cost["output_tokens"],
            cost["cache_read_tokens"],
            cost["cache_write_tokens"],
        ),
        "tools": d["tool_histogram"],
        "tool_results": kinds.get("tool_result", 0),
        "thinking": kinds.get("thinking", 0),
        "user_msg": kinds.get("user_msg", 0),
        "malformed": d["markers"]["malformed_lines"],
        "parent": d["parent_uid"],
        "subagents": d["subagents"],
    }
    want = {
        "tokens": g.tokens,
        "tools": g.tools,
        "tool_results": g.tool_results,
        "thinking": g.thinking,
        "user_msg": g.prompts + g.sidechain_prompts,
        "malformed": g.malformed,
        "parent": g.parent,
        "subagents": expected_subagents(uid),
    }
    return [f"{k}: helix {got[k]!r}, expected {want[k]!r}" for k in want if got[k] != want[k]]


# ---------------------------------------------------------------------------------------------
# The fixtures and the expectations themselves
# ---------------------------------------------------------------------------------------------


def test_fixture_files_are_the_recorded_corpus() -> None:
    """Every fixture file is listed in the README with its source and SHA-256, and matches."""
    readme = (FIXTURES / "README.md").read_text()
    listed = dict(re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", readme, re.M))
    on_disk = {
        p.relative_to(FIXTURES).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.name != "README.md"
    }
    assert on_disk == listed
    assert len(on_disk) == 39
    transcripts = {rel for rel in on_disk if rel.endswith(".jsonl")}
    assert transcripts == {g.rel for g in GOLDEN.values()} | NOT_SESSIONS


def test_independent_reader_agrees_with_the_literals() -> None:
    """The stdlib reader, run over the fixture bytes, derives exactly ``GOLDEN``."""
    files, totals = _read_corpus(FIXTURES)
    derived = {}
    for f in files.values():
        if f.uid is None or f.records == 0:
            continue
        derived[f.uid] = Golden(
            f.rel,
            totals.get(f.uid, (0, 0, 0, 0)),
            dict(f.tools),
            f.tool_results,
            f.thinking,
            f.prompts,
            f.sidechain_prompts,
            f.malformed,
            f.parent,
        )
    for uid, g in GOLDEN.items():
        assert derived.get(uid) == g, uid
    assert set(derived) == set(GOLDEN)
    # `sessions` lists the files with at least one message.
    assert {f.uid for f in files.values() if f.messages} == LISTED
    # Grand totals: every response exactly once across the corpus.
    # 504 distinct responses (968 usage lines: summing every line would give output 126075).
    assert _sum(*(g.tokens for g in GOLDEN.values())) == (19601, 96858, 24752893, 845937)


# ---------------------------------------------------------------------------------------------
# Helix in-process
# ---------------------------------------------------------------------------------------------


def test_inprocess_ingest_summary(inproc: tuple[dict[str, Any], dict[str, Any]]) -> None:
    stats, digests = inproc
    assert stats["files"] == 37  # every *.jsonl, including the 0-byte file and the journal
    assert stats["malformed_lines"] == sum(g.malformed for g in GOLDEN.values()) == 66
    assert stats["errors"] == []
    assert set(GOLDEN) - HIDDEN <= set(digests)
    # nothing besides the transcripts' sessions and the spawned-only subagents
    spawned = {u for kids in SPAWNED_ONLY.values() for u in kids}
    assert set(digests) <= set(GOLDEN) | spawned


@pytest.mark.parametrize("uid", sorted(GOLDEN))
def test_inprocess_digest(uid: str, inproc: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, digests = inproc
    problems = _problems(uid, digests.get(uid))
    assert not problems, "\n".join(problems)


def test_inprocess_grand_totals(inproc: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Summed over all digests, every response counts exactly once."""
    _, digests = inproc
    total = _sum(
        *(
            (
                d["cost"]["input_tokens"],
                d["cost"]["output_tokens"],
                d["cost"]["cache_read_tokens"],
                d["cost"]["cache_write_tokens"],
            )
            for d in digests.values()
        )
    )
    assert total == (19601, 96858, 24752893, 845937)


@pytest.mark.parametrize("parent", PARENTS)
def test_subagents_roll_into_parent(
    parent: str, inproc: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    _, digests = inproc
    d = digests[parent]
    kids = expected_subagents(parent)
    assert d["subagents"] == kids
    with_kids = d["cost_with_subagents"]
    got = (
        with_kids["input_tokens"],
        with_kids["output_tokens"],
        with_kids["cache_read_tokens"],
        with_kids["cache_write_tokens"],
    )
    assert got == _sum(GOLDEN[parent].tokens, *(GOLDEN[k].tokens for k in kids if k in GOLDEN))
    for kid in kids:
        if kid in digests:
            assert digests[kid]["parent_uid"] == parent


def test_subagent_rollup_literals(inproc: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """By hand: 5c0375b4 (129, 3629, 324259, 47747) + agent-test-hash-123 (100, 10, 0, 0);
    ac086a83 has no usage of its own, its warmup agent-b2da72c2 spent (724, 119, 0, 0)."""
    _, digests = inproc
    for parent, want in (
        ("claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7", (229, 3639, 324259, 47747)),
        ("claude:ac086a83-e3e7-4ad2-9265-4b3c2f437b4a", (724, 119, 0, 0)),
    ):
        c = digests[parent]["cost_with_subagents"]
        got = (
            c["input_tokens"],
            c["output_tokens"],
            c["cache_read_tokens"],
            c["cache_write_tokens"],
        )
        assert got == want, parent
    sub = digests["claude:agent-a0ad4f44468bdf20d"]
    assert sub["agent_type"] == "general-purpose"  # from agent-<id>.meta.json


# ---------------------------------------------------------------------------------------------
# Helix through the real CLI
# ---------------------------------------------------------------------------------------------


def test_cli_ingest_then_nothing_new(cli: Cli) -> None:
    first, second = cli.first, cli.second
    jsonl_bytes = sum(p.stat().st_size for p in FIXTURES.rglob("*.jsonl"))
    assert (first["files"], first["files_read"], first["bytes"]) == (37, 37, jsonl_bytes)
    assert first["malformed_lines"] == 66
    assert first["errors"] == []
    assert first["digests_built"] == len(cli.digests)
    # the second run opens nothing and reads 0 bytes
    assert (second["files"], second["files_read"], second["bytes"]) == (37, 0, 0)
    assert (second["lines"], second["events"], second["digests_built"]) == (0, 0, 0)


@pytest.mark.parametrize("uid", sorted(GOLDEN))
def test_cli_digest(uid: str, cli: Cli) -> None:
    problems = _problems(uid, cli.digests.get(uid))
    assert not problems, "\n".join(problems)


def test_cli_sessions_json(cli: Cli) -> None:
    proc = cli.run("sessions", "--json", "--limit", "500")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["uid"] for r in rows} == LISTED
    assert {r["uid"]: r["parent_uid"] for r in rows} == {u: GOLDEN[u].parent for u in LISTED}


LOOKUPS = {  # query -> the session it must find
    "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b": "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b",
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7": "claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
    "agent-b2da72c2": "claude:agent-b2da72c2",  # bare native id of a flat subagent
    "a13943fd": "claude:a13943fd-13e4-4103-86fd-53376fc7eb58",  # unique prefix of a native id
    "claude:02e0": "claude:02e01366-c7d5-42cd-9c58-3df865c55a25",  # unique prefix of a uid
    "claude:agent-test": "claude:agent-test-hash-123",
    "session-01": "claude:session-01",
}


def test_cli_lookup_finds(cli: Cli) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        procs = dict(
            zip(LOOKUPS, pool.map(lambda q: cli.run("lookup", q, "--json"), LOOKUPS), strict=True)
        )
    for query, uid in LOOKUPS.items():
        proc = procs[query]
        assert proc.returncode == 0, (query, proc.stderr)
        d = json.loads(proc.stdout)
        assert d["session_uid"] == uid, query
        assert d == cli.digests[uid]
        assert _problems(uid, d) == [], query


def test_cli_lookup_ambiguous_prefix(cli: Cli) -> None:
    proc = cli.run("lookup", "agent-a", "--json")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "ambiguous" in proc.stderr
    for uid in (
        "claude:agent-a17266e",
        "claude:agent-abadced",
        "claude:agent-a70627f",
        "claude:agent-ae50abf",
        "claude:agent-a0ad4f44468bdf20d",
    ):
        assert f"  {uid}\n" in proc.stderr, uid


@pytest.mark.parametrize("query", ["claude:ffffffff-0000", "no-such-session"])
def test_cli_lookup_unknown(cli: Cli, query: str) -> None:
    proc = cli.run("lookup", query, "--json")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "no session matches" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Rules checked on small inputs built from the real files
# ---------------------------------------------------------------------------------------------


def _lines(rel: str, *numbers: int) -> bytes:
    """The given 0-based lines of a fixture file, byte for byte, newline-terminated."""
    lines = (FIXTURES / rel).read_bytes().split(b"\n")
    return b"".join(lines[n].rstrip(b"\r") + b"\n" for n in numbers)


def _project(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "projects"
    for name, data in files.items():
        (root / "p" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "p" / name).write_bytes(data)
    return root


def _tokens(d: dict[str, Any]) -> tuple[int, int, int, int]:
    c = d["cost"]
    return c["input_tokens"], c["output_tokens"], c["cache_read_tokens"], c["cache_write_tokens"]


def test_distinct_records_sharing_a_uuid_are_all_counted(tmp_path: Path) -> None:
    """small.jsonl lines 54 (claude-opus-4-8: thinking, text, tool_use) and 64
    (claude-sonnet-5: thinking) are two different API responses that both carry the uuid
    "[trimmed for fixture]" (real Claude Code writes repeated uuids too,
    anthropics/claude-code#22178).  Two thinking blocks, not one."""
    root = _project(tmp_path, {"s.jsonl": _lines(J + "small.jsonl", 54, 64)})
    _, digests = asyncio.run(_ingest_and_analyze(root, tmp_path / "db"))
    kinds = digests["claude:s"]["kind_counts"]
    assert (kinds.get("thinking", 0), kinds.get("tool_call", 0)) == (2, 1)


def test_prompt_with_a_pasted_image_is_one_user_message(tmp_path: Path) -> None:
    """small.jsonl line 48: one user record whose content is [image, text] - one prompt, one
    turn (the digest's ``cost.turns`` is the ``user_msg`` count)."""
    root = _project(tmp_path, {"s.jsonl": _lines(J + "small.jsonl", 48)})
    _, digests = asyncio.run(_ingest_and_analyze(root, tmp_path / "db"))
    d = digests["claude:s"]
    assert (d["kind_counts"].get("user_msg", 0), d["cost"]["turns"]) == (1, 1)


def test_user_records_without_content_are_not_prompts(tmp_path: Path) -> None:
    """edge_cases.jsonl line 9 has no ``content`` (the key is misspelt ``contenst``) and line
    10's ``message`` is the string "error": neither carries a prompt."""
    edge = _lines("daaain__claude-code-log/edge_cases.jsonl", 9, 10)
    root = _project(tmp_path, {"e.jsonl": edge})
    _, digests = asyncio.run(_ingest_and_analyze(root, tmp_path / "db"))
    d = digests["claude:e"]
    assert (d["kind_counts"].get("user_msg", 0), d["cost"]["turns"]) == (0, 0)


def test_replay_credit_follows_the_earlier_file_when_it_arrives_later(tmp_path: Path) -> None:
    """edge_cases.jsonl replays msg_004/req_004 (in 168, out 85) of todowrite_examples.jsonl.
    Ingested alone, edge_cases owns it; once the earlier file arrives, the response moves to
    it, and *both* digests must say so: every response counted once across digests."""
    daaain = FIXTURES / "daaain__claude-code-log"
    root = _project(tmp_path, {"edge_cases.jsonl": (daaain / "edge_cases.jsonl").read_bytes()})
    db = tmp_path / "db"
    _, first = asyncio.run(_ingest_and_analyze(root, db))
    assert _tokens(first["claude:edge_cases"]) == (320 + 168, 350 + 85, 0, 0)
    shutil.copy(daaain / "todowrite_examples.jsonl", root / "p")
    _, second = asyncio.run(_ingest_and_analyze(root, db))
    assert _tokens(second["claude:todowrite_examples"]) == (883, 328, 0, 0)
    assert _tokens(second["claude:edge_cases"]) == (320, 350, 0, 0)


def test_resumed_copy_does_not_take_the_original_sessions_usage(tmp_path: Path) -> None:
    """A resume re-persists the earlier records byte for byte (same uuids, timestamps,
    requestIds, sessionId) into a new file, then appends the new turn (formats.md §3.3).
    The replayed responses belong to the original file; the new file spends only its own
    turn.  The new file's name sorts before the original's, as a random uuid often does."""
    # Named after its records' sessionId, as a real session file is.
    original = (FIXTURES / "daaain__claude-code-log" / "todowrite_examples.jsonl").read_bytes()
    new_sid = "1a2b3c4d-0000-4000-8000-000000000001"
    turn = [
        {
            "type": "user",
            "timestamp": "2025-06-15T09:00:00Z",
            "parentUuid": "assistant_006",
            "isSidechain": False,
            "sessionId": new_sid,
            "uuid": "resume-u1",
            "message": {"role": "user", "content": "continue please"},
        },
        {
            "type": "assistant",
            "timestamp": "2025-06-15T09:00:05Z",
            "parentUuid": "resume-u1",
            "isSidechain": False,
            "sessionId": new_sid,
            "uuid": "resume-a1",
            "requestId": "req_resume",
            "message": {
                "id": "msg_resume",
                "role": "assistant",
                "model": "claude-sonnet-4",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 7, "output_tokens": 3},
            },
        },
    ]
    resumed = original + b"\n" + b"".join(json.dumps(r).encode() + b"\n" for r in turn)
    root = _project(tmp_path, {"todowrite_session.jsonl": original, f"{new_sid}.jsonl": resumed})
    _, digests = asyncio.run(_ingest_and_analyze(root, tmp_path / "db"))
    assert _tokens(digests["claude:todowrite_session"]) == (883, 328, 0, 0)
    assert _tokens(digests[f"claude:{new_sid}"]) == (7, 3, 0, 0)


# ---------------------------------------------------------------------------------------------
# Parity with ccusage (tests/fixtures/ccusage/claude-session.json, recorded on the same corpus)
# ---------------------------------------------------------------------------------------------


def _ccusage_key(rel: str) -> tuple[str, str]:
    """ccusage's session key for a file (its README): the project is the first folder; the
    session is the file stem for ``<project>/<file>.jsonl``, the parent folder for
    ``…/<sid>/subagents/…``, and otherwise the folder holding the file (so every file of
    ``M-Thisness__M-Claude/Archives/`` is one ccusage session ``Archives``)."""
    parts = PurePosixPath(rel).parts
    if len(parts) == 2:
        return parts[0], parts[1].removesuffix(".jsonl")
    if "subagents" in parts:
        return parts[0], parts[parts.index("subagents") - 1]
    return parts[0], parts[-2]


# Where ccusage is wrong, the right number (worked out from the raw files) and why.
CCUSAGE_WRONG: dict[tuple[str, str], tuple[tuple[int, int, int, int], str]] = {
    ("M-Thisness__M-Claude", "transcripts"): (
        # a13943fd (51, 1160, 75891, 25017) + agent-a70627f (733, 2, 0, 0)
        # + agent-ae50abf (733, 1, 0, 0).  ccusage reports (784, 1161, ...): it drops
        # agent-a70627f.jsonl's one response because the owner's redactor turned the
        # record's "version" (and timestamp) into "[REDACTED_PHONE]" - ccusage rejects a
        # non-semver version.  The response itself is intact (message.id
        # msg_01Co3QiP6x8qt71ynHR1DMpr, requestId req_011CWgQFCvTgLgm59Cs23e15, usage 733/2):
        # it was spent, so it counts.
        (1517, 1163, 75891, 25017),
        "agent-a70627f dropped for its redacted version field",
    ),
    ("daaain__claude-code-log", "edge_cases"): (
        # Its own three responses: in 35+200+85, out 145+25+180.  ccusage reports (168, 85):
        # (1) it pre-filters lines on the bytes '"usage":{' and these three lines are written
        # '"usage": {' (valid JSON, so skipped wrongly); (2) the only line it keeps is the
        # replay of msg_004/req_004, which it credits to edge_cases because that path sorts
        # first - but the response belongs to todowrite_examples.jsonl (its records are
        # earlier, 10:00:00 vs 10:02:00, and carry its sessionId "todowrite_session").
        (320, 350, 0, 0),
        "skipped '\"usage\": {' lines; took todowrite's replayed msg_004",
    ),
    ("daaain__claude-code-log", "todowrite_examples"): (
        # All six responses, msg_004 (168/85) included: ccusage's (715, 243) lacks it (see
        # edge_cases above).
        (883, 328, 0, 0),
        "msg_004 credited to the replaying file",
    ),
}


def test_parity_with_ccusage(inproc: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, digests = inproc
    report = json.loads(CCUSAGE.read_text())
    groups: dict[tuple[str, str], list[str]] = {}
    for uid, g in GOLDEN.items():
        groups.setdefault(_ccusage_key(g.rel), []).append(uid)
    seen = set()
    for row in report["sessions"]:
        key = (row["projectPath"], row["sessionId"])
        seen.add(key)
        theirs = (
            row["inputTokens"],
            row["outputTokens"],
            row["cacheReadTokens"],
            row["cacheCreationTokens"],
        )
        right = CCUSAGE_WRONG[key][0] if key in CCUSAGE_WRONG else theirs
        assert right == _sum(*(GOLDEN[u].tokens for u in groups[key])), key
        helix = _sum(*(_tokens(digests[u]) for u in groups[key] if u in digests))
        assert helix == right, key
    # ccusage lists only sessions with usage; Helix agrees on which ones have any.
    with_usage = {k for k, uids in groups.items() if any(any(GOLDEN[u].tokens) for u in uids)}
    assert seen == with_usage
    assert set(CCUSAGE_WRONG) <= seen
    # Totals differ by exactly the two wrongly skipped sets: edge_cases' own three responses
    # (320 in, 350 out) and agent-a70627f's (733 in, 2 out).
    t = report["totals"]
    theirs = (t["inputTokens"], t["outputTokens"], t["cacheReadTokens"], t["cacheCreationTokens"])
    assert _sum(theirs, (320 + 733, 350 + 2, 0, 0)) == (19601, 96858, 24752893, 845937)


def test_digest_cost_in_usd_from_the_bundled_price_table(tmp_path: Path) -> None:
    """1af7fc5e is all claude-sonnet-4 (dated 20250514): 93 input, 953 output, 103 219 cache
    read, 12 698 cache write (5 m) tokens at $3 / $15 / $0.30 / $3.75 per million."""
    root = _project(
        tmp_path,
        {
            "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": (
                FIXTURES
                / "d-kimuson__claude-code-viewer"
                / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
            ).read_bytes()
        },
    )
    _, digests = asyncio.run(_ingest_and_analyze(root, tmp_path / "db"))
    d = digests["claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a"]
    expected = (93 * 3.0 + 953 * 15.0 + 103_219 * 0.30 + 12_698 * 3.75) / 1e6
    assert d["cost"]["usd"] == round(expected, 6)  # kept to the micro-dollar
    assert d["cost_with_subagents"]["usd"] == d["cost"]["usd"]
    assert d["price_table_date"]

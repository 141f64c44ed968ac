"""Session outcomes checked by hand against real sessions (the digest's ``outcome`` field).

Each row of ``LABELS`` is a real, main (non-subagent) session from ``tests/fixtures``
(Claude Code transcripts, Codex rollouts, Gemini CLI recordings; the constructed Grok and
Gemini files and the hand-written or curated files are left out). The label was set by
reading the end of the session by hand - the last prompts, replies and tool results - not
by running Helix, and the reason says what was seen. The meanings:

* ``success``: the agent finished what was asked and the user did not object;
* ``fail``: the request ended in errors, or the agent said it could not do it;
* ``abandoned``: the user left mid-task, interrupted, or the last word is an unanswered
  request;
* ``unknown``: nothing to judge (no task, or the record stops mid-run with no ending).

The Codex rollouts of madshn/localpush have their text redacted by their owner
(``[REDACTED_TEXT len=… sha=…]``); their labels rest on what the redaction kept: the
``phase`` of the last assistant message, ``task_complete``/``task_started`` events, and
which record comes last.

Helix ingests the fixtures end to end (``Ingestor.backfill`` over the adapters' default
roots in a temporary HOME, then ``digest.analyze``, as ``helixctl ingest`` does), and each
digest's ``outcome`` must equal the hand label. A row where the heuristic cannot reach the
honest label is kept, marked ``xfail(strict=True)`` with why.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from helixd.adapters.registry import REGISTRY
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store, now_ms

FIXTURES = Path(__file__).parent / "fixtures"
OUTCOMES = ("success", "fail", "abandoned", "unknown")


def _xfail(why: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=why)


# (session uid, hand label, reason: what the end of the session shows)
LABELS: list[Any] = [
    # -- Claude Code --------------------------------------------------------------------------
    (
        "claude:a5c478e1-0d31-46d4-9fd6-3b6b203b3752",
        "success",
        "/erk:plan-implement 8511: unit tests pass, the commit and `erk pr submit` succeed, "
        "last reply 'All 10 phases are complete. The PR is ready for review.'",
    ),
    (
        "claude:635d7caf-7e33-4187-9339-e9bb9c83982a",
        "success",
        "/erk:pr-address --pr 8404 (CI run): the agent classifies the feedback and ends "
        "'No unresolved review comments ... There's nothing to address.'",
    ),
    (
        "claude:dc2f576f-81dd-4f52-8708-126e301daf57",
        "unknown",
        "erk uploads its own transcript mid-run: the file stops on the result of "
        "`erk exec impl-signal ended` with `upload-impl-session` still pending and CI not run; "
        "how it ended is not recorded",
    ),
    (
        "claude:b2c8258b-cfa7-4411-82bd-b2817ab24b4d",
        "unknown",
        "same self-upload cut: 'Now signal ended, upload session, verify impl directory, and "
        "submit.', then the file stops on the `upload-impl-session` call with no result",
    ),
    (
        "claude:ae4a1257-cf8e-47b3-8c80-d7991e4495dd",
        "unknown",
        "self-upload cut: pytest '383 passed, 3 failed' (the agent calls the 3 pre-existing), "
        "then three erk calls of which only the first has a result; no final reply",
    ),
    (
        "claude:9be1d737-c769-4d5e-b69d-3e0f4f13a1ce",
        "success",
        "install Ralph and Sisyphus: `ralph --version` fails (unknown option) but its help "
        "shows it installed; last reply 'Both are installed successfully! ... Installation "
        "Complete'",
    ),
    (
        "claude:18240050-3ee8-41cd-a89a-0a5c4b709607",
        "success",
        "last request 'go to M-Claude folder and show me the readme': the agent finds "
        "Documents/M-Claude/README.md, reads it and shows it",
    ),
    (
        "claude:a13943fd-13e4-4103-86fd-53376fc7eb58",
        "success",
        "'make the theme match the default vscode dark theme': the edit succeeds and the "
        "reply is 'Done! I've updated your Alacritty theme ...'; no objection follows",
    ),
    (
        "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b",
        "success",
        "'Thanks! Please update CLAUDE.md for current changes': Write succeeds ('File created "
        "successfully') and the reply says CLAUDE.md has been created",
    ),
    (
        "claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
        "success",
        "update CLAUDE.md: the first Edit fails ('File has not been read yet'), the agent "
        "reads it, MultiEdit applies 6 edits, and it reports the update",
    ),
    (
        "claude:02e01366-c7d5-42cd-9c58-3df865c55a25",
        "fail",
        "last request `ssh root@...`: the background ssh fails with exit 255 'Host key "
        "verification failed' and the reply is 'Hmm, the connection failed ... You'll need "
        "to run this directly in your terminal'",
    ),
    (
        "claude:1c7cbf4e-801e-42e5-afad-7d571647725d",
        "fail",
        "the only prompt 'ssh into slate and report on firewall config' gets ten "
        "system api_error retries and then 'Request timed out'; never answered",
    ),
    (
        "claude:e0ce82fa-774f-4827-8cef-17b1b18b9f2a",
        "fail",
        "the only prompt gets seven api_error retries, then 'API Error: 401 ... OAuth token "
        "has expired ... Please run /login'; never answered",
    ),
    (
        "claude:f5d8e1ac-47cd-48b4-a150-40dc97d0dad9",
        "fail",
        "the user says 'hi' and the file ends on seven system api_error records; no reply",
    ),
    (
        "claude:ab454957-7a00-4f51-bbef-edab48892c60",
        "fail",
        "'find logread.tar file' twice, then 'hi' twice: every prompt answered only by "
        "'Request timed out'",
    ),
    (
        "claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        "fail",
        "/init in an empty dir: Write of CLAUDE.md is refused ('Claude requested permissions "
        "to write ... but you haven't granted it yet'), yet the reply claims 'I've created a "
        "basic CLAUDE.md file'; the file was never written",
    ),
    (
        "claude:ac086a83-e3e7-4ad2-9265-4b3c2f437b4a",
        "unknown",
        "only local commands (/agents, /config, /status dialogs dismissed); no prompt, no task",
    ),
    # -- Codex (madshn/localpush, text redacted by the source) ----------------------------------
    (
        "codex:019c8bfe-ec25-79e0-97d7-bda6a9c575ff",
        "success",
        "after several execute_workflow calls the last assistant message is "
        "phase 'final_answer' followed by task_complete; no user message after it",
    ),
    (
        "codex:019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
        "success",
        "118 tool calls, all answered; ends on a 15927-char phase 'final_answer' message and "
        "task_complete; the user does not come back",
    ),
    (
        "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9",
        "success",
        "long session (42 prompts); the last prompt gets a write_stdin call and a "
        "phase 'final_answer' reply, then task_complete",
    ),
    (
        "codex:019c8a53-a0dd-7130-bcd7-95445d84846a",
        "abandoned",
        "the 12:35 turn stops on an exec_command call with no output and no task_complete; "
        "at 12:57 the session is resumed (context re-sent, task_started) and a 15-char user "
        "message closes the file, never answered",
    ),
    (
        "codex:019c8a70-dda7-7f33-98ea-f30553347322",
        "unknown",
        "the first turn's commentary and one exec_command call, then the file stops: no "
        "output, no final answer, no task_complete or turn_aborted",
    ),
    # -- Gemini CLI (mischa-thisness/M-Gemini) ----------------------------------------------------
    (
        "gemini:3d0463e2-5112-49de-9fde-a36e17975bd8",
        "success",
        "'install 1password cli tool for CachyOS cosmic': yay installs it, `op --version` "
        "prints 2.32.0, reply 'The 1Password CLI (`op`) has been installed successfully'",
    ),
    (
        "gemini:3f9ce747-7498-479f-9b91-936cc1549014",
        "success",
        "after cancelling one pacman call the user asks 'how were you installed?  was it npm "
        "or pacman?'; the agent checks and answers 'I was installed via **npm**'",
    ),
    (
        "gemini:1593ed60-014f-4810-ad21-854a87108a6b",
        "success",
        "'fix hung/stalled cosmic-store app': kill, pgrep shows them gone, reply 'The "
        "`cosmic-store` processes have been successfully terminated'",
    ),
    pytest.param(
        "gemini:1deca764-d51e-4418-9a25-6cbc765d1ec5",
        "abandoned",
        "a five-step Secure Boot walk-through stops at step 2: the user asks for "
        "`systemctl reboot --firmware-setup`, the agent runs it (exit 0) and the machine "
        "reboots; steps 3-5 are left for 'a new session'",
        marks=_xfail(
            "the file ends on a successful tool result, like a transcript cut mid-run; "
            "that the plan was left unfinished is only in the text"
        ),
    ),
]


def _uid(row: Any) -> str:
    return str(row.values[0] if hasattr(row, "values") else row[0])


@pytest.fixture(scope="module")
def digests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every fixture session of the three agents, ingested as ``helixctl ingest`` does."""
    home = tmp_path_factory.mktemp("outcomes") / "home"
    skip = shutil.ignore_patterns("README*")
    shutil.copytree(FIXTURES / "claude", home / ".claude" / "projects", ignore=skip)
    shutil.copytree(FIXTURES / "codex" / "sessions", home / ".codex" / "sessions")
    shutil.copytree(FIXTURES / "gemini", home / ".gemini" / "tmp", ignore=skip)

    async def run() -> dict[str, dict[str, Any]]:
        store = await Store.open(home.parent / "store" / "helix.db")
        try:
            roots = [(a, r) for a in REGISTRY for r in a.default_roots({}, home)]
            stats = await Ingestor(store).backfill(discover(roots))
            assert stats.files_read > 0
            await digest.analyze(store, await store.session_ids_changed_since_analysis(), now_ms())
            out = {}
            for row in await store.sessions(None, None, True):
                d = await store.digest(row["id"])
                if d is not None:
                    out[row["uid"]] = d
            return out
        finally:
            await store.close()

    return asyncio.run(run())


def test_the_table_is_real_main_sessions_of_every_label(digests: dict[str, dict[str, Any]]) -> None:
    """At least ten rows agree without xfail, every label occurs, every row is a main
    session read from a real (not constructed or synthetic) fixture file."""
    uids = [_uid(r) for r in LABELS]
    assert len(uids) == len(set(uids))
    plain = [r for r in LABELS if not hasattr(r, "marks")]
    assert len(plain) >= 10
    assert {r[1] for r in plain} == set(OUTCOMES)
    for uid in uids:
        d = digests[uid]
        assert d["parent_uid"] is None, uid
        path = d["source"]["path"]
        assert not any(part in path for part in ("/constructed/", "/synthetic/")), path


@pytest.mark.parametrize(("uid", "expected", "reason"), LABELS, ids=[_uid(r) for r in LABELS])
def test_outcome_matches_the_hand_label(
    digests: dict[str, dict[str, Any]], uid: str, expected: str, reason: str
) -> None:
    d = digests[uid]
    assert expected in OUTCOMES and reason
    assert d["outcome"] == expected, f"rule {d['outcome_rule']!r}; hand label: {reason}"
    assert 0 < d["outcome_confidence"] <= 1


@pytest.mark.parametrize(
    ("kinds", "errors", "expected"),
    [
        (["user_msg", "assistant_msg"], [], ("success", "session ends on an assistant reply")),
        (["assistant_msg", "user_msg"], [], ("abandoned", "session ends on a user turn")),
        (["user_msg", "error", "error"], [], ("fail", "session ends on errors, not a reply")),
        (["user_msg", "gave_up"], [], ("fail", "final reply admits failure")),
        (
            ["user_msg", "tool_call", "edit_result", "tool_call", "tool_result", "assistant_msg"],
            [True, False],
            ("fail", "last file edit failed and was not redone"),
        ),
        (  # the failed edit was redone
            ["user_msg", "tool_call", "edit_result", "tool_call", "edit_result", "assistant_msg"],
            [True, False],
            ("success", "session ends on an assistant reply"),
        ),
        (  # a failed edit of an earlier turn does not count
            ["tool_call", "edit_result", "assistant_msg", "user_msg", "assistant_msg"],
            [True],
            ("success", "session ends on an assistant reply"),
        ),
        (
            ["tool_call", "tool_result", "tool_call", "tool_result", "tool_call", "tool_result"],
            [True, True, True],
            ("fail", "last 3 tool results failed"),
        ),
        (["user_msg", "tool_call"], [], ("unknown", "session ends on tool_call")),
    ],
)
def test_outcome_rules(kinds: list[str], errors: list[bool], expected: tuple[str, str]) -> None:
    label, confidence, rule = digest.outcome(kinds, errors, 2)
    assert (label, rule) == expected and 0 < confidence <= 1

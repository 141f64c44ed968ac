"""Codex CLI rollouts (``$CODEX_HOME/{sessions/YYYY/MM/DD,archived_sessions}/rollout-*.jsonl``).

Pure: bytes in, records out.  Rules from ``shared/notes/formats.md`` §4, §9.2 and §11.2; the
ones that shape numbers (tests in ``tests/test_codex.py`` pin each):

* **Identity.** ``codex:<id>`` with the id of the file's first ``session_meta`` (or the uuid
  in the file name when the file does not start with one), so an archived copy and a paginated
  continuation land on the same session.  Event keys are ``<line timestamp>|<hash of the line>``
  (``#<line number>`` replaces the timestamp in the oldest, timestamp-less generation): the
  same line in two copies is the same event.  ``parent_key`` is the previous event.
* **Messages.** ``response_item`` messages are the ones kept (every generation has them); the
  ``event_msg`` user/agent/reasoning echoes are dropped.  Injected context (``developer`` role,
  ``<environment_context>``, AGENTS.md, …) is ``lifecycle``; a user message after the agent
  already worked in the open turn is a ``human_intervention``.
* **Usage** (one fact per ``token_count`` whose cumulative total advanced): the delta is
  ``last_token_usage`` (else the difference of totals); re-emits, ``info: null`` and all-zero
  deltas count nothing.  Cached input and reasoning are subsets: ``input = input - cached``,
  ``output`` as written, ``reasoning`` only informational.  Key: ``codex:<id>:<cumulative
  total>``, equal in every copy of the file and distinct for every response of a session.
  ``token_usage_record`` lines (0.151+) repeat the same responses and are counted only for a
  compaction request (its ``response_id`` is a ``compacted`` line's ``compaction_response_id``,
  the one usage ``token_count`` never carries), keyed ``codex:resp:<response_id>``.
* **Forks and subagents** (``forked_from_id`` or ``source.subagent.thread_spawn``) begin by
  replaying the parent's rollout.  Those lines are skipped (their totals only set the baseline)
  until the first line of a turn minted after the child was created: a ``task_started`` or
  ``turn_context`` whose UUIDv7 ``turn_id`` is not older than the child's id, or, without a
  turn id, a ``turn_context`` that is not part of the replay burst.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from helixd.adapters import jsonl
from helixd.adapters.base import Adapter, Chunk
from helixd.adapters.codex_items import (
    Emit,
    KNOWN_EVENT_MSGS,
    KNOWN_ITEMS,
    event_msg_kind,
    message_event,
)
from helixd.adapters.fields import as_int, dump, get_dict, get_str
from helixd.adapters.toolkinds import shorten
from helixd.records import BadLine, Event, Parsed, SessionInfo, UsageFact
from helixd.timeparse import parse_ts

NAME: Final = "codex"
VERSION: Final = 1

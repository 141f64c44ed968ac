"""Aider chat histories (``<project>/.aider.chat.history.md``): markdown, appended.

Pure: bytes in, records out; the file is read line by line like any appended file (the
markdown source kind).  Rules from ``../shared/notes/formats.md`` §8/§8.1 and the real
histories in the corpus (Aider 0.84–0.86):

* **One file, many runs**: each run opens with ``# aider chat started at <local time>``;
  a run is a session ``aider:<YYYYmmddTHHMMSS>`` (the file has no id; the time is Aider's
  local wall clock, read as UTC; two projects whose runs began in the same second share a
  session — a known gap, the price of an identity that does not change when a project
  directory moves).  The cwd is the directory
  holding the file.  Text before the first header belongs to no session: counted as an
  unknown record, kept raw.
* **Roles come from line prefixes**: ``#### `` lines are the user's (consecutive ones join
  into one ``user_msg``); ``> `` lines are Aider's status output; any other non-blank text
  is the assistant's reply (joined until the next user or status line).
* **Status lines**: ``> Main model: <model> …`` sets the model, ``> Aider v<x>`` the version,
  ``> Applied edit to <path>`` is an ``edit``, ``> ^C KeyboardInterrupt`` a
  ``human_intervention``, ``> Tokens: 9.7k sent, 85 received. Cost: …`` the usage of one
  request: rounded by Aider (``k``/``M`` suffixes), so **approximate** (``usage_approximate``),
  and the dollars of that message (``Cost: $x message``, rounded too) as its recorded cost;
  other status lines add nothing.
* **Keys** are the byte offset of the block's first line (the file only grows); an open
  block travels in ``state`` until a line of another kind closes it.
* ``.aider.input.history`` repeats the user's lines and ``.aider.llm.history`` the raw
  requests; neither is read (they add no fact the chat history lacks, and the second holds
  whole prompts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

from helixd.adapters.base import Chunk
from helixd.adapters.declared.aider import NAME
from helixd.adapters.guard import guarded
from helixd.adapters.turns import BODY_LIMIT, Turns
from helixd.core.records import Parsed, SessionInfo, UsageFact
from helixd.core.timeparse import parse_ts
from helixd.core.values import tokens, usd

HEADER: Final = re.compile(rb"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
TOKENS: Final = re.compile(r"([\d.,]+)([kKmM]?) (sent|received|cache write|cache hit)")
COST: Final = re.compile(r"Cost: \$([\d.,]+) message")
MODEL: Final = re.compile(r"^(?:Main )?[Mm]odel: (\S+)")
EDITED: Final = re.compile(r"^Applied edit to (.+?)\s*$")


def _amount(number: str, suffix: str) -> int:
    value = float(number.replace(",", ""))
    scale = {"k": 1_000, "m": 1_000_000}.get(suffix.lower(), 1)
    return tokens(round(value * scale), "Tokens")


class _Run(Turns):
    def __init__(self, chunk: Chunk, state: Mapping[str, Any]) -> None:
        super().__init__(state)
        self.cwd = str(PurePosixPath(chunk.ctx.path).parent)
        self.native: str | None = state.get("native")
        self.ts: int | None = state.get("ts")
        self.model: str | None = state.get("model")
        self.open: dict[str, Any] | None = state.get("open")

    @property
    def uid(self) -> str:
        return f"{NAME}:{self.native}"

    def line(self, offset: int, raw: bytes) -> None:
        head = HEADER.match(raw)
        if head:
            self.close()
            stamp = head.group(1).decode()
            self.ts = parse_ts(stamp.replace(" ", "T") + "Z")
            self.native = stamp.replace("-", "").replace(":", "").replace(" ", "T")
            self.model = None
            self.out.sessions.append(
                SessionInfo(
                    uid=self.uid,
                    agent=NAME,
                    native_id=self.native,
                    cwd=self.cwd,
                    first_ts=self.ts,
                    last_ts=self.ts,
                )
            )
            self.emit(
                self.uid,
                f"o{offset}",
                "lifecycle",
                (self.ts, offset),
                "system",
                "aider chat started",
            )
            return
        if self.native is None:
            if raw.strip():
                self.unknown("text before the first run header")
            return
        text = raw.decode("utf-8", "replace")
        if text.startswith("####"):
            self.block("user", text[4:].strip(), offset)
        elif text.startswith(">"):
            self.close()
            self.status(text[1:].strip(), offset)
        elif text.strip():
            self.block("assistant", text.rstrip(), offset)
        elif self.open is not None and self.open["k"] == "assistant":
            self.open["t"] = (self.open["t"] + "\n")[:BODY_LIMIT]  # a paragraph break

    def block(self, kind: str, text: str, offset: int) -> None:
        if self.open is not None and self.open["k"] == kind:
            if len(self.open["t"]) < BODY_LIMIT:
                self.open["t"] = (self.open["t"] + "\n" + text)[:BODY_LIMIT]
            return
        self.close()
        self.open = {"k": kind, "t": text[:BODY_LIMIT], "o": offset}

    def close(self) -> None:
        if self.open is None or self.native is None:
            self.open = None
            return
        o, self.open = self.open, None
        at, text = (self.ts, o["o"]), o["t"].strip()
        if o["k"] == "user":
            self.emit(self.uid, f"o{o['o']}", "user_msg", at, "user", text)
        else:
            self.emit(self.uid, f"o{o['o']}", "assistant_msg", at, "assistant", text)

    def status(self, text: str, offset: int) -> None:
        at = (self.ts, offset)
        if text.startswith("Tokens:"):
            counts: dict[str, int] = {}
            for number, suffix, what in TOKENS.findall(text):
                counts[what] = _amount(number, suffix)
            spent = COST.search(text)
            self.out.usage.append(
                UsageFact(
                    dedup_key=f"{self.uid}:{offset}",
                    session_uid=self.uid,
                    ts=self.ts,
                    model=self.model or "unknown",
                    input_tokens=counts.get("sent", 0),
                    output_tokens=counts.get("received", 0),
                    cache_read_tokens=counts.get("cache hit", 0),
                    cache_write_5m_tokens=counts.get("cache write", 0),
                    offset=offset,
                    recorded_cost_usd=usd(spent.group(1).replace(",", ""), "Cost")
                    if spent
                    else None,
                )
            )
        elif (m := MODEL.match(text)) is not None:
            self.model = m.group(1)
            self.out.sessions.append(
                SessionInfo(uid=self.uid, agent=NAME, native_id=str(self.native), model=self.model)
            )
        elif text.startswith("Aider v"):
            version = text[len("Aider v") :].split()[0] if len(text) > 7 else None
            self.out.sessions.append(
                SessionInfo(uid=self.uid, agent=NAME, native_id=str(self.native), version=version)
            )
        elif (m := EDITED.match(text)) is not None:
            self.emit(self.uid, f"o{offset}", "edit", at, "assistant", m.group(1))
        elif text.endswith("KeyboardInterrupt"):
            self.emit(self.uid, f"o{offset}", "human_intervention", at, "user", "interrupted (^C)")


def parse(chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
    run = _Run(chunk, state)
    data = chunk.data
    consumed = data.rfind(b"\n") + 1  # a line is taken once its newline is written
    lines = 0
    pos = 0
    while pos < consumed:
        end = data.index(b"\n", pos)
        raw = data[pos:end].rstrip(b"\r")
        guarded(run, chunk.base + pos, end - pos, run.line, chunk.base + pos, raw)
        lines += 1
        pos = end + 1
    return run.parsed(consumed, lines, native=run.native, ts=run.ts, model=run.model, open=run.open)


PARSERS: Final = {NAME: parse}

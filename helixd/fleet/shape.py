"""What leaves the machine: a batch read from the outbox, made fit to send (pure).

Tier 2 goes as stored: sessions (agent, repo, working directory, branch, model, counts and
times), usage facts and their 15-minute summaries, digests, and the signals (tool calls with
their command or path, test runs with their command and counts, file operations with their
path and whether the edit was accepted, errors by fingerprint, retries, interventions), the
sessions' attribution (repo root, domain, task reference, commit) and the hook events (the
shell command or edited path an agent's hook reported, redacted and cut as stored: the same
kind of text as a tool call's target, so sent with or without ``include_text``).
Conversation text does not, unless ``fleet.include_text``: the session's title (the
agent's own summary of the conversation) and the digest's copies of the conversation
(``first_prompt``, ``last_assistant``, the error samples, the title) are blanked, and no event is
read at all (``outbox_batch.next_batch``).

Every string is also made storable by PostgreSQL, which refuses NUL in ``text`` and
``jsonb``: NUL and lone surrogates become U+FFFD.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

import orjson

from helixd.store.outbox_batch import SESSION_COLUMNS, Tier2Batch

_TITLE: Final = SESSION_COLUMNS.index("title")
_DIGEST_TEXT: Final = ("first_prompt", "last_assistant")


def clean_str(value: str) -> str:
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    return value


def clean(value: Any) -> Any:
    """``value`` with every string storable by PostgreSQL (lists and dicts walked)."""
    if isinstance(value, str):
        return clean_str(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


def _row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row's strings cleaned (rows hold only strings, numbers and None)."""
    return tuple(clean_str(v) if type(v) is str else v for v in row)


def public_digest(doc: dict[str, Any]) -> dict[str, Any]:
    """A digest without its copies of the conversation."""
    out = dict(doc)
    for key in _DIGEST_TEXT:
        if key in out:
            out[key] = ""
    if "title" in out:
        out["title"] = None
    if isinstance(out.get("error_snippets"), list):
        out["error_snippets"] = [
            {**s, "sample": ""} if isinstance(s, dict) else s for s in out["error_snippets"]
        ]
    return out


def for_server(batch: Tier2Batch, include_text: bool) -> Tier2Batch:
    """The batch as it is sent: text removed unless ``include_text``, strings cleaned, digests
    as JSON text."""
    sessions = [_row(r) for r in batch.sessions]
    if not include_text:
        sessions = [(*r[:_TITLE], None, *r[_TITLE + 1 :]) for r in sessions]
    digests = []
    for uid, version, built, provisional, doc in batch.digests:
        if not include_text:
            parsed = orjson.loads(doc)
            doc = orjson.dumps(public_digest(parsed) if isinstance(parsed, dict) else parsed)
        if b"\\u0000" in doc:  # (orjson never writes a lone surrogate: NUL is all to mend)
            doc = orjson.dumps(clean(orjson.loads(doc)))
        digests.append((clean_str(uid), version, built, provisional, bytes(doc).decode()))
    return replace(
        batch,
        sessions=sessions,
        digests=digests,
        usage=[_row(r) for r in batch.usage],
        buckets=[_row(r) for r in batch.buckets],
        buckets_gone=[_row(k) for k in batch.buckets_gone],
        signal_sessions=[clean(u) for u in batch.signal_sessions],
        signals={t: [_row(r) for r in rows] for t, rows in batch.signals.items()},
        hooks=[_row(r) for r in batch.hooks],
        events=[_row(r) for r in batch.events] if include_text else [],
    )

"""Value types shared by the pure core (adapters) and the edges (store, ingest).

Everything here is an immutable ``typing.NamedTuple`` with no behaviour beyond trivial
helpers: adapters produce these from bytes, the store persists them.  Field names follow the
normalized schema of the design spec (§4): ``Session`` and ``SessionEvent``.

NamedTuples, not dataclasses (issue 12): this module is on the path of every parse and of
``helixctl show``; six frozen dataclasses cost the import ~10-15 ms to create (and the
``dataclasses`` module with ``inspect``), and a frozen dataclass sets each field through
``object.__setattr__`` on construction, where a NamedTuple builds one tuple.  What callers
use instead: ``record._replace(field=…)`` for ``dataclasses.replace``, ``Type._fields``
for ``dataclasses.fields``, ``record._asdict()`` for ``asdict``.  A record is a tuple: it
is iterable and compares equal to a tuple of the same values; orjson serialises it as a
JSON array, not an object (nothing here dumps records).
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

# The spec §4.2 event kinds.  Adapters must emit only these.
EVENT_KINDS: Final = frozenset(
    {
        "user_msg",
        "assistant_msg",
        "thinking",
        "tool_call",
        "tool_result",
        "error",
        "test_run",
        "edit",
        "retry",
        "human_intervention",
        "decision",
        "lifecycle",
        "completion",
        "unknown",
    }
)

Role = Literal["user", "assistant", "system", "tool"]


class SessionInfo(NamedTuple):
    """Facts about a session learned from one record; the store merges them.

    ``None`` means "not known from this record"; the store keeps what it had.
    Timestamps are integer milliseconds since the epoch (UTC).
    """

    uid: str
    agent: str
    native_id: str
    parent_uid: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None  # the commit checked out when the session started (Codex)
    model: str | None = None
    title: str | None = None
    version: str | None = None
    agent_type: str | None = None
    first_ts: int | None = None
    last_ts: int | None = None
    ended: bool = False


class Event(NamedTuple):
    """One normalized session event (spec §4.2).

    ``key`` is the event's natural key inside its session (for Claude: the record uuid, the
    content-block index and a checksum of the line), so that replaying the same bytes never
    duplicates a row while a different record reusing a uuid is still kept.  ``anchor`` is
    the name other events use to point at this one (Claude: uuid and block index; default:
    ``key``), and ``parent_key`` names the parent's anchor (the turn DAG); the store turns
    these into ``seq``/``parent_seq``.  ``body`` is the conversation text kept for search
    and digests; ``payload`` is a bulky body (tool output, thinking, image): only its size
    (``payload_size``, or ``len(payload)``) is stored in the event row; the bytes stay in
    the raw lines, which can be dropped on their own.  ``search_text`` is text that is only
    indexed for full-text search, never stored in the row (a thinking block's text).
    """

    session_uid: str
    key: str
    kind: str
    ts: int | None
    offset: int
    parent_key: str | None = None
    role: Role | None = None
    tool: str | None = None
    call_id: str | None = None
    summary: str = ""
    body: str = ""
    payload: bytes | None = None
    tokens: int = 0
    is_error: bool = False
    is_sidechain: bool = False
    anchor: str | None = None
    payload_size: int = 0
    search_text: str = ""
    lines_added: int = 0  # edits: lines the edit adds / removes (where the tool says)
    lines_removed: int = 0
    # tool results: success / error / rejected (by the user) / interrupted
    status: str | None = None
    # a test command's output: (framework, passed, failed, skipped) read from its summary
    tests: tuple[str, int, int, int] | None = None


class UsageFact(NamedTuple):
    """Token usage of one API response, deduplicated across every file by ``dedup_key``.

    Claude: key (message.id, requestId) or message.id alone.  Among duplicates the store keeps
    the largest snapshot of each counter and credits the session with the smallest ``rank``
    (a sortable string: main files before subagent files, then earliest first record).
    ``replace`` facts overwrite an earlier fact with the same key instead of merging by max
    (a retried Grok turn replaces its usage, it never adds).
    ``cache_write_5m``/``cache_write_1h`` split cache creation by lifetime.  ``offset`` is
    the absolute byte offset of the line the fact was read from (where the store quarantines
    it, should it refuse the fact; None: not tied to a line).  ``recorded_cost_usd``: the
    dollars the agent itself wrote for this response or session (Pi, Cline, Crush, Aider, …),
    None where it wrote none; reports use it in ``--cost auto|recorded``.
    """

    dedup_key: str
    session_uid: str
    ts: int | None
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0
    rank: str = ""
    replace: bool = False
    offset: int | None = None
    recorded_cost_usd: float | None = None


class BadLine(NamedTuple):
    """A complete line the adapter could not use: kept raw, counted, never fatal."""

    offset: int
    length: int
    reason: str


class _ParsedFields(NamedTuple):
    consumed: int
    state: dict[str, Any]
    sessions: list[SessionInfo]
    events: list[Event]
    usage: list[UsageFact]
    bad: list[BadLine]
    unknown_types: dict[str, int]
    lines: int


class Parsed(_ParsedFields):
    """What one ``parse`` call returns.

    ``consumed`` is the number of input bytes fully handled; it never ends inside a line.
    ``state`` is the adapter's small per-file state after these bytes (JSON-serialisable).
    ``unknown_types`` counts records of types the adapter does not know (kept raw).
    The lists and ``unknown_types`` left out are new, empty ones for each instance (a
    NamedTuple default would be one list shared by every instance).
    """

    __slots__ = ()

    def __new__(
        cls,
        consumed: int,
        state: dict[str, Any],
        sessions: list[SessionInfo] | None = None,
        events: list[Event] | None = None,
        usage: list[UsageFact] | None = None,
        bad: list[BadLine] | None = None,
        unknown_types: dict[str, int] | None = None,
        lines: int = 0,
    ) -> Parsed:
        return super().__new__(
            cls,
            consumed,
            state,
            [] if sessions is None else sessions,
            [] if events is None else events,
            [] if usage is None else usage,
            [] if bad is None else bad,
            {} if unknown_types is None else unknown_types,
            lines,
        )


class Cursor(NamedTuple):
    """Where ingest stands in one source file; persisted with the records it produced.

    ``offset`` is the byte after the last complete line read; ``head_hash`` fingerprints
    the file's first ``head_len`` bytes so that a replaced file is recognised even when its
    inode is reused.  ``generation`` rises each time the file is found replaced or
    truncated and read again from 0.  ``state`` is the adapter's per-file state.
    """

    path: str
    agent: str
    root: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    offset: int
    head_hash: bytes
    head_len: int
    generation: int
    adapter_version: int
    state: dict[str, Any]
    file_id: int | None = None

"""The adapter contract: one pure parser per agent, registered as plain data.

An adapter turns bytes of one source file into normalized records.  It does no I/O and
keeps no globals: everything it learned from earlier bytes of the same file travels in
``state`` (small, JSON-serialisable) which the store saves with the file's cursor in the
same transaction as the records.  The contract, checked for every registered adapter by
``tests/test_adapter_contract.py``:

* ``consumed`` never ends inside a line; bytes after it are offered again next time;
* feeding a file in chunks cut anywhere gives exactly the records of one whole read;
* a malformed line, invalid UTF-8 or an unknown record type is reported (``Parsed.bad``,
  ``Parsed.unknown_types``), never raised; every line runs under ``guard.each_line``, so a
  line whose values are rejected (``helixd.core.values``) or whose handler raises is one bad
  line with none of its records, and the next line is read;
* event offsets are absolute byte offsets in the source file (``Chunk.base`` + position).

See ``docs/adapters.md`` for how to add an agent.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:  # the records' module is the parsers' (a declaration loads no parser)
    from helixd.core.records import Parsed


class FileContext(NamedTuple):
    """Where the bytes come from.  ``rel`` is the path relative to its root (POSIX form).
    ``payloads``: the bytes are re-read to show a transcript — every event carries its bulky
    body (tool input and output, thinking, long text) in ``Event.payload``; ingest leaves it
    off, since those bodies are kept in the raw lines, not stored twice."""

    path: str
    rel: str
    sidecar: bytes | None = None
    payloads: bool = False


class Chunk(NamedTuple):
    """Bytes read from ``ctx.path`` starting at byte ``base``; ``at_eof`` when the read
    reached the end of the file (a final line without newline may then be taken)."""

    data: bytes
    base: int
    at_eof: bool
    ctx: FileContext


ParseFn = Callable[[Chunk, Mapping[str, Any]], "Parsed"]
RootsFn = Callable[[Mapping[str, str], Path], list[Path]]


class Table(NamedTuple):
    """One table of an agent's SQLite database, read as rows (``helixd/sources/sqlite.py``).

    ``order`` is the watermark column: rows are read in ``(order, rowid)`` order and only
    those past the cursor's mark are new (``rowid`` for append-only tables, ``updated_at``
    for rows updated in place).  ``order=None``: a small key/value table whose values are
    rewritten in place (Cursor's ``ItemTable``): a row is new when the checksum of its
    line differs from the one kept for its ``key``.  ``where`` narrows the rows read (an
    SQL expression over the table's own columns, written by the adapter, never by input)."""

    name: str
    order: str | None = "rowid"
    key: str = "rowid"
    where: str = ""


def _no_sidecar(path: str) -> str | None:
    return None


NO_BUNDLE: Final = _no_sidecar  # ``Adapter.bundle`` of an agent whose files stand alone
NO_SIDECAR: Final = _no_sidecar  # ``Adapter.sidecar`` of an agent that reads none


def _appended(rel: str) -> bool:
    return False


class LazyParser:
    """An agent's ``parse``, imported on first call: ``PARSERS[agent]`` of the module
    ``helixd.adapters.<module>``.  Walking, planning, surveying and completing never call
    it, so they never load a parser (its regexes, dataclasses and helpers)."""

    __slots__ = ("_loaded", "agent", "module")

    def __init__(self, module: str, agent: str) -> None:
        self.module = module
        self.agent = agent
        self._loaded: ParseFn | None = None

    def load(self) -> ParseFn:
        if self._loaded is None:
            parsers = importlib.import_module(f"helixd.adapters.{self.module}").PARSERS
            self._loaded = parsers[self.agent]
        return self._loaded

    def __call__(self, chunk: Chunk, state: Mapping[str, Any]) -> Parsed:
        return (self._loaded or self.load())(chunk, state)

    def __repr__(self) -> str:
        return f"LazyParser({self.module!r}, {self.agent!r})"

    def __reduce__(self) -> tuple[type[LazyParser], tuple[str, str]]:
        """Pickled by name, loaded or not (a loaded parser may be a closure)."""
        return (LazyParser, (self.module, self.agent))


def _no_owner(rel: str, data: bytes) -> str | None:
    return None


class Adapter:
    """One agent's declaration (``helixd/adapters/declared/<module>.py``).  ``parser`` names
    the module ``helixd.adapters.<parser>`` whose ``PARSERS[name]`` parses its files;
    ``parse`` loads it on first call (a ``LazyParser``; a test may pass a function instead).
    ``matches(rel)`` decides which files under a root belong to it;
    ``default_roots(environ, home)`` lists where it looks when config names no roots;
    ``sidecar(path)`` names a small companion file whose bytes are passed to ``parse``.
    ``version`` rises whenever the records it produces change (re-normalization).
    ``whole_file(rel)`` marks files rewritten whole (Gemini ``.json``): every change is read
    from byte 0 as a new generation, and an event whose key was stored before is replaced
    by its new content rather than ignored.
    ``records_usage``: whether the agent writes token usage into the files read at all;
    ``usage_note`` says where it does (or why not).  A session without usage is shown as
    "not recorded" with that note, never as zero tokens.  ``usage_approximate`` says why the
    counts the agent records are not exact (Aider prints them rounded); empty when they are.

    Sources of other shapes (docs/adapters.md, "Source kinds"): ``tables`` non-empty makes
    the matched files SQLite databases, read as one JSON line per new row
    (``{"table": …, "row": {…}}``) that ``parse`` receives like any line file;
    ``project_files`` non-empty makes the agent's roots project directories in which only
    these relative paths are looked at (a few ``stat`` calls, never a walk).  ``max_depth``
    (None: any) is how many directory levels below a root the agent's files lie at most: a
    walk goes no deeper and a root whose files lie at its top (0) is watched without its
    subdirectories (OpenCode's data directory also holds snapshot repositories and logs that
    are not Helix's to list or watch).  ``bundle(rel)`` names the directory (relative to the
    root) whose files belong with the matched file: the two are read together as one
    document of one line per file (``helixd/sources/bundle.py``; OpenCode's JSON tree, where a
    message's parts lie in ``part/<message id>/``), re-read whole when any of them changes.
    ``agent``: the agent whose sessions the records are, when another adapter reads the same
    agent's sessions from another store (OpenCode's JSON tree and ``opencode.db``: one
    session, one usage row per message); empty: ``name``.
    ``is_member(rel)``: whether ``rel`` (lexically, no I/O) names a member of some bundle (an
    OpenCode part) — not a source, but a change to it is a change of its bundle;
    ``member_owner(rel, data)`` names, from the member's bytes, the source (relative to the
    same root) that bundles it (None: it cannot tell).  The daemon maps a member's event to
    that source (``helixd.sources.gate.Gate.admit``).

    A plain class with ``__slots__``, read-only (``replace`` makes a variant): a
    ``dataclass`` costs every command that loads the catalogue ~12 ms of imports."""

    __slots__ = _FIELDS = (
        "name",
        "version",
        "default_roots",
        "matches",
        "parser",
        "parse",
        "sidecar",
        "whole_file",
        "description",
        "records_usage",
        "usage_note",
        "usage_approximate",
        "tables",
        "project_files",
        "max_depth",
        "bundle",
        "agent",
        "is_member",
        "member_owner",
    )
    name: str
    version: int
    default_roots: RootsFn
    matches: Callable[[str], bool]
    parser: str
    parse: ParseFn
    sidecar: Callable[[str], str | None]
    whole_file: Callable[[str], bool]
    description: str
    records_usage: bool
    usage_note: str
    usage_approximate: str
    tables: tuple[Table, ...]
    project_files: tuple[str, ...]
    max_depth: int | None
    bundle: Callable[[str], str | None]
    agent: str
    is_member: Callable[[str], bool]
    member_owner: Callable[[str, bytes], str | None]

    def __init__(
        self,
        name: str,
        version: int,
        default_roots: RootsFn,
        matches: Callable[[str], bool],
        parser: str = "",
        parse: ParseFn | None = None,
        sidecar: Callable[[str], str | None] = _no_sidecar,
        whole_file: Callable[[str], bool] = _appended,
        description: str = "",
        records_usage: bool = True,
        usage_note: str = "",
        usage_approximate: str = "",
        tables: tuple[Table, ...] = (),
        project_files: tuple[str, ...] = (),
        max_depth: int | None = None,
        bundle: Callable[[str], str | None] = NO_BUNDLE,
        agent: str = "",
        is_member: Callable[[str], bool] = _appended,
        member_owner: Callable[[str, bytes], str | None] = _no_owner,
    ) -> None:
        if parse is None:
            if not parser:
                raise ValueError(f"adapter {name!r} names no parser module")
            parse = LazyParser(parser, name)
        values = (
            name,
            version,
            default_roots,
            matches,
            parser,
            parse,
            sidecar,
            whole_file,
            description,
            records_usage,
            usage_note,
            usage_approximate,
            tables,
            project_files,
            max_depth,
            bundle,
            agent,
            is_member,
            member_owner,
        )
        for field, value in zip(Adapter._FIELDS, values, strict=True):
            object.__setattr__(self, field, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, field) for field in Adapter._FIELDS)

    def replace(self, **changes: Any) -> Adapter:
        """A copy with ``changes`` (as ``dataclasses.replace``; a test's variant)."""
        return Adapter(**{**dict(zip(Adapter._FIELDS, self._values(), strict=True)), **changes})

    def __setattr__(self, field: str, value: object) -> None:
        raise AttributeError(f"Adapter is read-only: cannot set {field!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Adapter) and self._values() == other._values()

    def __hash__(self) -> int:  # equal adapters have equal names and versions
        return hash((self.name, self.version))

    def __repr__(self) -> str:
        return f"Adapter(name={self.name!r}, version={self.version!r})"

    def __reduce__(self) -> tuple[type[Adapter], tuple[Any, ...]]:
        return (Adapter, self._values())

    @property
    def owner(self) -> str:
        """The agent name the records carry (``agent``, else ``name``)."""
        return self.agent or self.name

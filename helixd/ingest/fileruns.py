"""One source file being read (``FileRun``: where it resumed, the adapter state carried so
far, its cursor after a batch) and one planned item of it (``Planned``: a piece and what is
under way for it) (moved from ``pipeline.py``)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Final

from helixd.adapters import FileContext
from helixd.core.records import Cursor
from helixd.ingest.parsepool import PieceDone
from helixd.sources import sqlite as dbsource
from helixd.sources.discover import Source
from helixd.sources.tailer import FileStat, Piece

MARKS: Final = dbsource.MARKS_KEY


@dataclass(slots=True)
class FileRun:
    """One file being read: where it resumed and what the parser has carried so far."""

    src: Source
    st: FileStat
    previous: Cursor | None
    generation: int
    head_hash: bytes
    head_len: int
    ctx: FileContext
    state: dict[str, Any]
    offset: int
    wrote: bool = False
    stalled: bool = False
    moved: bool = False
    marks: dict[str, Any] | None = None  # a database's watermarks (helixd/sources/sqlite.py)
    token: int = 0  # the parse pool's name for this file (0: none yet)

    def cursor(self, offset: int, seen: int) -> Cursor:
        """The cursor after a batch.  ``size`` records how much of the file was examined:
        all of it once a read reached its end, else only up to the batch, so that a run
        killed between two batches is never mistaken for an unchanged file."""
        st, src = self.st, self.src
        return Cursor(
            path=src.path,
            agent=src.adapter.name,
            root=src.root,
            dev=st.dev,
            ino=st.ino,
            size=seen,
            mtime_ns=st.mtime_ns,
            offset=offset,
            head_hash=self.head_hash,
            head_len=self.head_len,
            generation=self.generation,
            adapter_version=src.adapter.version,
            state=self.state if self.marks is None else {**self.state, MARKS: self.marks},
            file_id=self.previous.file_id if self.previous else None,
        )


@dataclass(slots=True)
class Planned:
    run: FileRun
    piece: Piece | None  # None: the file's last item (record a cursor if nothing was written)
    redacted: Awaitable[tuple[bytes, int]] | None = None
    done: Awaitable[PieceDone] | None = None  # parsed by a worker process
    raw_z: bytes | None = None
    raw_z_secrets: int = 0  # secrets masked in raw_z (an over-long line)

"""What a write to the store changed, and the in-process broadcast that hands it to whoever
listens (the live HTTP feed today; the digest scheduler and the fleet outbox may follow).

The writer knows the instant rows are committed: ``Store`` hands a ``Commit`` to its
``on_commit`` callback right after each transaction, on the event loop's thread, and the
daemon points that callback at a ``CommitHub``.  Nothing polls the database for changes.
Pure: no I/O, no event loop (a listener that needs one does its own hand-off).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

INGEST: Final = "ingest"  # new records (events, usage, session facts)
DIGEST: Final = "digest"  # digests and signals rebuilt
REBUILD: Final = "rebuild"  # re-normalization or retention: many rows may have changed


@dataclass(frozen=True, slots=True)
class Commit:
    """One committed transaction: ``what`` it was (``INGEST``, ``DIGEST``, ``REBUILD``),
    the sessions that got their first events (``new``) and the others it changed
    (``updated``), by uid."""

    what: str
    new: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    at: int = 0  # epoch ms


Listener = Callable[[Commit], None]


class CommitHub:
    """Fan-out of commits to listeners.  ``publish`` cannot block (each listener must hand
    the commit off at once); a listener that raises is dropped, never the publisher."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self.published = 0
        self.dropped = 0

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; returns the function that removes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def publish(self, commit: Commit) -> None:
        self.published += 1
        for listener in list(self._listeners):
            try:
                listener(commit)
            except Exception:
                self.dropped += 1
                if listener in self._listeners:
                    self._listeners.remove(listener)

    @property
    def listeners(self) -> int:
        return len(self._listeners)

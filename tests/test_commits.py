"""The writer publishes what each commit changed (``core/commits.py``), from one place: the
store, right after the transaction — what the live feed and any other listener hear."""

from __future__ import annotations

from pathlib import Path

from helixd.adapters.declared import claude
from helixd.core.commits import DIGEST, INGEST, Commit, CommitHub
from helixd.ingest import digest
from helixd.ingest.pipeline import Ingestor, discover
from helixd.store.database import Store, now_ms
from tests.daemon_helpers import SID, line

UID = f"claude:{SID}"


async def test_a_commit_names_new_and_updated_sessions(store: Store, tmp_path: Path) -> None:
    hub = CommitHub()
    heard: list[Commit] = []
    hub.subscribe(heard.append)
    store.on_commit = hub.publish
    root = tmp_path / "projects"
    (root / "-w").mkdir(parents=True)
    path = root / "-w" / f"{SID}.jsonl"
    path.write_bytes(line(0))

    async def ingest() -> None:
        await Ingestor(store).backfill(discover([(claude.ADAPTER, root)]))

    await ingest()
    assert [(c.what, c.new, c.updated) for c in heard] == [(INGEST, (UID,), ())]
    with path.open("ab") as f:
        f.write(line(1, "assistant", "more"))
    await ingest()
    assert (heard[-1].what, heard[-1].new, heard[-1].updated) == (INGEST, (), (UID,))
    await ingest()  # nothing new: nothing committed, nothing heard
    assert len(heard) == 2
    ids = await store.analyzable_session_ids()
    await digest.analyze(store, ids, now_ms(), 60_000, {})
    assert heard[-1].what == DIGEST and heard[-1].updated == (UID,)
    assert await store.mark_ended(UID)
    assert heard[-1].updated == (UID,) and heard[-1].at > 0


def test_a_listener_that_fails_is_dropped_and_the_others_still_hear() -> None:
    hub = CommitHub()
    heard: list[Commit] = []

    def broken(c: Commit) -> None:
        raise RuntimeError("boom")

    hub.subscribe(broken)
    stop = hub.subscribe(heard.append)
    hub.publish(Commit(INGEST, ("a",)))
    hub.publish(Commit(INGEST, ("b",)))
    assert [c.new for c in heard] == [("a",), ("b",)]
    assert hub.dropped == 1 and hub.listeners == 1
    stop()
    hub.publish(Commit(INGEST))
    assert len(heard) == 2 and hub.listeners == 0

"""Cline SDK/CLI store adapter: golden numbers read off the real session (manifest, messages,
the same messages after Cline's compaction; tests/fixtures/cline-cli/README.md) and an
end-to-end ingest in which the messages file is rewritten by a compaction.

How the expectations were read (python's json module over the files, not the adapter):
session.messages.json holds 32 messages: 5 user text blocks (+1 file attachment), 14
assistant text blocks, 11 tool_use (4 ``editor``, the rest read_files/run_commands) and 11
tool_result blocks, none with is_error; 16 assistant messages carry ``metrics`` whose sums
are input 630 254, cache read 534 435 (so 95 819 non-cached), output 4 395, cache write 0.
The compacted file keeps 10 of the messages, the metrics of none; 4 of its 5 user messages gain a
``<SYSTEM_NOTICE>`` text block and the first one ``metadata.kind: compaction``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helixd.adapters.declared import cline_cli
from helixd.store.database import Store
from tests.agent_helpers import FIXTURES, ingest, kinds, kinds_of, one, parse_fixture, usage_of

S = "1784094124598_rruoq"
UID = f"cline-cli:{S}"


def test_messages_golden() -> None:
    p = parse_fixture(cline_cli.ADAPTER, f"{S}/{S}.messages.json")
    assert p.bad == [] and p.unknown_types == {}
    assert kinds(p) == {
        "user_msg": 5,
        "assistant_msg": 14,
        "tool_call": 11,
        "edit": 4,
        "tool_result": 11,
    }
    calls = {e.call_id for e in p.events if e.kind == "tool_call"}
    assert calls == {e.call_id for e in p.events if e.kind == "tool_result"}
    assert len(p.usage) == 16
    sums = [sum(getattr(u, k) for u in p.usage) for k in ("input_tokens", "output_tokens")]
    assert sums == [95819, 4395]
    assert sum(u.cache_read_tokens for u in p.usage) == 534435
    assert p.usage[-1].model == "mistralai/voxtral-small-24b-2507"
    assert all(u.replace for u in p.usage)


def test_manifest_golden() -> None:
    p = parse_fixture(cline_cli.ADAPTER, f"{S}/{S}.json")
    (info,) = p.sessions
    assert info.uid == UID and info.ended
    assert info.cwd == "/Users/example/dev/cline"
    assert info.model == "mistralai/mixtral-8x22b-instruct"
    assert info.parent_uid == "cline-cli:1784094053271_p8pzo"  # metadata.fork
    assert info.title is not None and info.title.endswith("(fork)")


def test_compacted_messages_golden() -> None:
    p = parse_fixture(cline_cli.ADAPTER, f"compacted/{S}/{S}.messages.json")
    assert kinds(p) == {"lifecycle": 5, "user_msg": 5, "assistant_msg": 5}  # 4 notices + 1
    assert p.usage == []  # the kept messages lost their metrics; usageBefore is not counted


def test_only_the_session_documents_are_claimed(tmp_path: Path) -> None:
    assert cline_cli.matches(f"{S}/{S}.json") and cline_cli.matches(f"{S}/{S}.messages.json")
    for rel in (f"{S}/other.json", "settings.json", f"{S}/{S}.json.tmp", f"{S}/hooks/x.json"):
        assert not cline_cli.matches(rel), rel
    root = tmp_path / ".cline" / "data" / "sessions"
    assert cline_cli.default_roots({}, tmp_path) == [root]
    env = {"CLINE_DIR": str(tmp_path / "c")}
    assert cline_cli.default_roots(env, tmp_path) == [tmp_path / "c" / "data" / "sessions"]


async def test_a_compaction_rewrite_loses_nothing(store: Store, tmp_path: Path) -> None:
    root = tmp_path / ".cline" / "data" / "sessions"
    shutil.copytree(FIXTURES / "cline-cli" / S, root / S)
    (root.parent / "secrets.json").write_text('{"apiKey": "sk-x"}')
    first = await ingest(store, cline_cli.ADAPTER, root)
    assert first.files_read == 2
    assert await usage_of(store, UID) == (16, 95819, 4395, 534435, 0)
    before = await kinds_of(store, UID)
    compacted = FIXTURES / "cline-cli" / "compacted" / S / f"{S}.messages.json"
    shutil.copyfile(compacted, root / S / f"{S}.messages.json")
    await ingest(store, cline_cli.ADAPTER, root)
    after = await kinds_of(store, UID)
    assert after == {**before, "lifecycle": 5}  # removed messages stay, notices are new
    assert await usage_of(store, UID) == (16, 95819, 4395, 534435, 0)
    sql = "SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id"
    sql += " WHERE s.uid = ? AND e.body LIKE '%SYSTEM_NOTICE%'"
    assert await one(store, sql, UID) == 4
    assert (await ingest(store, cline_cli.ADAPTER, root)).bytes_read == 0

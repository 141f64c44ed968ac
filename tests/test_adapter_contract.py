"""The contract every registered adapter obeys (helixd/adapters/base.py), run over all of
them: same records whatever the chunking, bad input reported and never raised, unknown
record types counted, and byte offsets that point at the records."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.adapters import Adapter, Chunk, FileContext
from helixd.adapters.registry import REGISTRY
from tests.contract_helpers import feed, sample_bytes, samples

ADAPTERS = {a.name: a for a in REGISTRY}
CASES = [(a.name, rel) for a in REGISTRY for _, rel in samples(a)[:8]]


def _sample(name: str, rel: str) -> tuple[Adapter, bytes, str]:
    adapter = ADAPTERS[name]
    path = next(p for p, r in samples(adapter) if r == rel)
    return adapter, sample_bytes(adapter, path), str(path)


@pytest.mark.parametrize("adapter", REGISTRY, ids=lambda a: a.name)
def test_every_adapter_has_real_or_documented_fixtures(adapter: Adapter) -> None:
    assert samples(adapter), f"tests/fixtures/{adapter.name}/ has no file the adapter claims"
    assert adapter.version >= 1


@pytest.mark.parametrize(("name", "rel"), CASES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_chunking_gives_the_records_of_one_whole_read(
    name: str, rel: str, data: st.DataObject
) -> None:
    adapter, raw, path = _sample(name, rel)
    whole = feed(adapter, raw, path, rel, [])
    cuts = data.draw(st.lists(st.integers(0, max(len(raw) - 1, 0)), max_size=12))
    assert feed(adapter, raw, path, rel, cuts) == whole


@pytest.mark.parametrize(("name", "rel"), CASES)
def test_event_offsets_point_at_the_start_of_a_line(name: str, rel: str) -> None:
    adapter, raw, path = _sample(name, rel)
    if adapter.whole_file(rel):
        pytest.skip("whole-file format: offsets are positions inside one document")
    parsed = adapter.parse(Chunk(raw, 0, True, FileContext(path, rel)), {})
    for ev in parsed.events:
        assert ev.offset == 0 or raw[ev.offset - 1 : ev.offset] == b"\n", ev


GARBAGE = [
    b"\x00\x01\x02garbage\n",
    b"{not json}\n",
    b'{"type": "user", "message": ' + b"[" * 5000 + b"\n",
    b"\xff\xfe\xfd invalid utf-8 \xc3\x28\n",
    b'{"type":"user","message":{"content":"x\\ud800y"},"uuid":"u","timestamp":"2025-01-01"}\n',
    b'{"type": 42, "timestamp": {"nested": true}, "message": "str"}\n',
    b'[1, 2, 3]\nnull\n"string"\n',
    b'{"type":"assistant","message":{"content":null,"usage":"many","model":7}}\n',
    b'{"type":"user"',
]


@pytest.mark.parametrize("adapter", REGISTRY, ids=lambda a: a.name)
@pytest.mark.parametrize("junk", GARBAGE)
def test_garbage_is_reported_never_raised(adapter: Adapter, junk: bytes, tmp_path: Path) -> None:
    rel = next(rel for _, rel in samples(adapter))
    parsed = adapter.parse(Chunk(junk, 0, True, FileContext(str(tmp_path / rel), rel)), {})
    assert parsed.consumed <= len(junk)
    assert all(ev.kind for ev in parsed.events)


@pytest.mark.parametrize("adapter", REGISTRY, ids=lambda a: a.name)
@given(junk=st.binary(max_size=400))
@settings(max_examples=60, deadline=None)
def test_random_bytes_never_raise(adapter: Adapter, junk: bytes) -> None:
    rel = next(rel for _, rel in samples(adapter))
    adapter.parse(Chunk(junk, 0, True, FileContext("/tmp/" + rel, rel)), {})


@pytest.mark.parametrize("adapter", REGISTRY, ids=lambda a: a.name)
def test_an_unknown_record_type_is_counted(adapter: Adapter) -> None:
    path, rel = samples(adapter)[0]
    if adapter.whole_file(rel):
        pytest.skip("whole-file formats have no record lines")
    line = b'{"type":"brand-new-record-type-2027","timestamp":"2026-01-01T00:00:00Z"}\n'
    parsed = adapter.parse(Chunk(line, 0, True, FileContext(str(path), rel)), {})
    assert sum(parsed.unknown_types.values()) == 1
    assert parsed.consumed == len(line)

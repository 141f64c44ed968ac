"""Contract, run over every registered adapter and every fixture file it claims: the records
it produces are well-formed (helixd/records.py, helixd/adapters/base.py).

* events use only the spec's kinds (``EVENT_KINDS``) and roles;
* every session, event and usage fact belongs to the adapter (``<name>:<native id>``);
* usage counters are non-negative and every fact has a dedup key;
* the per-file state survives a JSON round trip (the store saves it with the cursor);
* bad lines and event offsets lie inside the bytes that were read.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import orjson
import pytest

from helixd.adapters import Adapter, Chunk, FileContext
from helixd.adapters.registry import REGISTRY
from helixd.core.records import EVENT_KINDS, Role
from tests.contract_helpers import sample_bytes, samples

CASES = [pytest.param(a, p, rel, id=f"{a.name}:{rel}") for a in REGISTRY for p, rel in samples(a)]
ROLES = set(get_args(Role))


@pytest.mark.parametrize(("adapter", "path", "rel"), CASES)
def test_records_are_well_formed(adapter: Adapter, path: Path, rel: str) -> None:
    data = sample_bytes(adapter, path)
    parsed = adapter.parse(Chunk(data, 0, True, FileContext(str(path), rel)), {})
    prefix = adapter.owner + ":"
    assert 0 <= parsed.consumed <= len(data)
    assert orjson.loads(orjson.dumps(parsed.state)) == parsed.state
    for info in parsed.sessions:
        assert info.agent == adapter.owner and info.uid == prefix + info.native_id, info
        assert info.parent_uid is None or info.parent_uid.startswith(prefix), info
    for ev in parsed.events:
        assert ev.kind in EVENT_KINDS, ev
        assert ev.role is None or ev.role in ROLES, ev
        assert ev.session_uid.startswith(prefix) and ev.key, ev
        assert 0 <= ev.offset < max(parsed.consumed, 1), ev
        assert ev.tokens >= 0 and ev.payload_size >= 0
    owned = {s.uid for s in parsed.sessions}
    assert {ev.session_uid for ev in parsed.events} <= owned
    for u in parsed.usage:
        assert u.session_uid in owned and u.dedup_key and u.model, u
        counters = (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_5m_tokens,
            u.cache_write_1h_tokens,
            u.reasoning_tokens,
        )
        assert min(counters) >= 0, u
    for bad in parsed.bad:
        assert bad.offset >= 0 and bad.offset + bad.length <= len(data) and bad.reason
    assert all(isinstance(k, str) and n > 0 for k, n in parsed.unknown_types.items())
    assert parsed.lines >= len(parsed.bad)

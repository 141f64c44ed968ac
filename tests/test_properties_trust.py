"""Properties over generated input for two trust boundaries (issue 11), beside the example
tests of ``test_path_gate.py`` and ``test_redact.py``:

* the path gate: any path built from dots, doubled slashes, links out of the root and
  ordinary names is either refused or admitted as a file whose real location is inside the
  root (it need not exist: opening it is checked again);
* redaction: a planted secret of every family, inside generated JSON text around it (any
  separators, escapes, other words), never survives ``redact``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helixd.adapters.declared import claude
from helixd.core.redact import redact
from helixd.sources.gate import Gate, Refused
from tests.secret_corpus import FAMILIES, enc

SID = "0a1b2c3d-0000-4000-8000-000000000001"
_SEGMENTS = st.sampled_from(
    ["..", ".", "", "-work-p", "out", "loop", "ghost", f"{SID}.jsonl", "history.jsonl"]
)


def _world(tmp: Path) -> tuple[Path, Path]:
    root = tmp / "home/.claude/projects"
    (root / "-work-p").mkdir(parents=True)
    (root / "-work-p" / f"{SID}.jsonl").write_bytes(b"{}\n")
    outside = tmp / "elsewhere"
    outside.mkdir()
    (outside / f"{SID}.jsonl").write_bytes(b"{}\n")
    (outside / "history.jsonl").write_bytes(b"{}\n")
    os.symlink(outside, root / "out")  # a linked directory leading out of the root
    os.symlink(outside / f"{SID}.jsonl", root / "-work-p" / "ghost")  # a linked file out
    os.symlink(root / "-work-p", root / "loop")  # a link that stays inside
    return root, outside


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_SEGMENTS, min_size=1, max_size=8), lead=st.sampled_from(["", "/", "//"]))
def test_a_generated_path_is_refused_or_lies_inside_the_root(parts: list[str], lead: str) -> None:
    with tempfile.TemporaryDirectory(prefix="helix-prop-") as tmp:
        root, outside = _world(Path(tmp))
        gate = Gate([(claude.ADAPTER, root)])
        path = str(root) + "/" + lead + "/".join(parts)
        try:
            src = gate.admit(path)
        except Refused:
            return
        real = os.path.realpath(src.path)
        assert real.startswith(os.path.realpath(root) + os.sep), (path, real)
        assert not real.startswith(os.path.realpath(outside) + os.sep)


_AROUND = st.lists(
    st.sampled_from(list(" \n\t\"'=:,;()[]{}<>/\\|`") + ["é", "→", "word", "x1"]), max_size=20
).map("".join)
_SEPARATORS = st.sampled_from([" ", "\n", "\t", '"', "'", "=", ":", ",", "(", "[", "{", "\\n"])


@settings(max_examples=40, deadline=None)
@given(family=st.sampled_from(sorted(FAMILIES)), before=_AROUND, after=_AROUND, data=st.data())
def test_a_planted_secret_never_survives_generated_surroundings(
    family: str, before: str, after: str, data: st.DataObject
) -> None:
    text, needles = FAMILIES[family]
    left = data.draw(_SEPARATORS, label="left separator")
    right = data.draw(_SEPARATORS, label="right separator")
    line = orjson.dumps({"text": before + left + text + right + after}) + b"\n"
    out, _ = redact(line)
    leaked = [n for n in (enc(x) for x in needles) if n in out]
    assert not leaked, (family, out)
    assert orjson.loads(out).keys() == {"text"}  # still one JSON object, same shape

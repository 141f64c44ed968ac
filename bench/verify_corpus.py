#!/usr/bin/env python3
"""Re-derive a generated corpus's ground truth from the files on disk and compare it with
``corpus-manifest.json`` (written by ``bench/gen_corpus.py``).

Claude: every assistant line with ``message.usage`` is read; usage is deduplicated by
(message.id, requestId) keeping the largest output snapshot; a key seen in several files is
credited to the one file that is not a resumed copy. Codex: token_count deltas are summed when the
cumulative total advanced. Exits 1 on any mismatch::

    python bench/verify_corpus.py /tmp/helix-bench/c50
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson

CLAUDE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
CODEX_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


def iter_lines(path: Path) -> Any:
    with open(path, "rb") as fh:
        for raw in fh:
            yield orjson.loads(raw)


def claude_truth(root: Path, index: dict[str, Any], path_order: bool = False) -> dict[str, Any]:
    """Dedup Claude usage. A key found in several files goes to the file that is not a resumed
    copy, or with ``path_order`` to the first file in sorted path order (ccusage 20.x's rule)."""
    best: dict[tuple[str, str], tuple[int, list[int], str, str]] = {}
    files_of: dict[tuple[str, str], set[str]] = {}
    for rel in sorted(index):
        for rec in iter_lines(root / rel):
            msg = rec.get("message") if rec.get("type") == "assistant" else None
            if not isinstance(msg, dict) or "usage" not in msg or msg.get("model") == "<synthetic>":
                continue
            u = msg["usage"]
            vals = [int(u.get(k, 0)) for k in CLAUDE_KEYS]
            key = (msg["id"], rec.get("requestId") or "")
            files_of.setdefault(key, set()).add(rel)
            day = rec["timestamp"][:10]
            old = best.get(key)
            if old is None or vals[1] > old[0]:
                best[key] = (vals[1], vals, day, msg["model"])
    per_file: dict[str, list[int]] = {rel: [0, 0, 0, 0, 0] for rel in index}
    by_day_model: dict[tuple[str, str], list[int]] = {}
    for key, (_, vals, day, model) in best.items():
        if path_order:
            owners = sorted(files_of[key])[:1]
        else:
            owners = [f for f in files_of[key] if index[f]["kind"] != "resumed"] or sorted(
                files_of[key]
            )
        if len(owners) != 1:
            raise SystemExit(f"key {key} has {len(owners)} candidate owner files: {owners}")
        acc = per_file[owners[0]]
        agg = by_day_model.setdefault((day, model), [0, 0, 0, 0, 0])
        for i in range(4):
            acc[i] += vals[i]
            agg[i] += vals[i]
        acc[4] += 1
        agg[4] += 1
    return {"per_file": per_file, "by_day_model": by_day_model}


def codex_truth(root: Path, index: dict[str, Any]) -> dict[str, Any]:
    per_file: dict[str, list[int]] = {}
    by_day_model: dict[tuple[str, str], list[int]] = {}
    for rel in sorted(index):
        acc = per_file.setdefault(rel, [0] * 6)
        prev_total = -1
        model = "gpt-5"
        for rec in iter_lines(root / rel):
            payload = rec.get("payload") or {}
            if rec.get("type") == "turn_context":
                model = payload.get("model", model)
                continue
            if rec.get("type") != "event_msg" or payload.get("type") != "token_count":
                continue
            info = payload.get("info")
            if not info:
                continue
            total = info["total_token_usage"]["total_tokens"]
            if total <= prev_total:
                continue
            prev_total = total
            last = [int(info["last_token_usage"][k]) for k in CODEX_KEYS]
            agg = by_day_model.setdefault((rec["timestamp"][:10], model), [0] * 6)
            for i, v in enumerate(last):
                acc[i] += v
                agg[i] += v
            acc[5] += 1
            agg[5] += 1
    return {"per_file": per_file, "by_day_model": by_day_model}


def compare(agent: str, section: dict[str, Any], truth: dict[str, Any]) -> list[str]:
    keys = CLAUDE_KEYS if agent == "claude" else CODEX_KEYS
    count = "responses" if agent == "claude" else "events"
    names = (*keys, count)
    errors: list[str] = []
    for rel, vals in truth["per_file"].items():
        want = section["file_index"][rel]["tokens"]
        got = dict(zip(names, vals, strict=True))
        if {k: want[k] for k in names} != got:
            errors.append(f"{agent} file {rel}: manifest {want} != files {got}")
    for (day, model), vals in truth["by_day_model"].items():
        want = section["by_day_model"].get(day, {}).get(model)
        got = dict(zip(names, vals, strict=True))
        if want != got:
            errors.append(f"{agent} {day} {model}: manifest {want} != files {got}")
    n_cells = sum(len(v) for v in section["by_day_model"].values())
    if n_cells != len(truth["by_day_model"]):
        errors.append(
            f"{agent}: {n_cells} day/model cells in manifest, {len(truth['by_day_model'])} in files"
        )
    return errors


def check_files(root: Path, index: dict[str, Any]) -> list[str]:
    errors = []
    for rel, meta in index.items():
        st = os.stat(root / rel)
        if st.st_size != meta["bytes"] or st.st_mtime_ns != meta["mtime_ns"]:
            errors.append(f"{rel}: size/mtime differ from manifest")
    return errors


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("home", type=Path, help="corpus HOME (holds corpus-manifest.json)")
    args = p.parse_args(argv)
    manifest = orjson.loads((args.home / "corpus-manifest.json").read_bytes())
    errors: list[str] = []
    for agent, sub, fn in (
        ("claude", manifest["claude_root"], claude_truth),
        ("codex", manifest["codex_root"], codex_truth),
    ):
        if agent not in manifest:
            continue
        root = args.home / sub
        index = manifest[agent]["file_index"]
        on_disk = {str(q.relative_to(root)) for q in root.rglob("*.jsonl")}
        if on_disk != set(index):
            errors.append(
                f"{agent}: files on disk differ from manifest ({len(on_disk ^ set(index))})"
            )
        errors += check_files(root, index)
        errors += compare(agent, manifest[agent], fn(root, index))
        print(f"{agent}: checked {len(index)} files, totals {manifest[agent]['totals']}")
    for e in errors[:50]:
        print("MISMATCH", e, file=sys.stderr)
    print("OK" if not errors else f"{len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())

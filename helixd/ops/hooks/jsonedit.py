"""Merging hook handlers into ``{"hooks": {event: [matcher group, ...]}}`` settings files.

Strict: a file that is not a JSON object (or has duplicate keys, NaN, or a ``hooks`` of the
wrong shape) raises :class:`HookFileError` and is never rewritten.  A handler is Helix's when
its ``command`` runs ``helixctl hook`` or its ``name`` starts with ``helix-``; everything else
keeps its place and order.  Output is ``json.dumps`` with the file's own indent, so a file in
the agents' own style (2-space ``JSON.stringify``) round-trips byte for byte.
"""

from __future__ import annotations

import json
import re
from typing import Any

OURS = re.compile(r"helixctl['\"]?\s+hook(\s|$)")


class HookFileError(Exception):
    """A settings file that cannot be edited safely; the message says why."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


def has_comments(text: str) -> bool:
    """True when ``text`` has ``//`` or ``/* */`` comments outside strings."""
    return any(not m.group(0).startswith('"') for m in _COMMENT.finditer(text))


def parse(
    text: str, where: str, comments_allowed: bool = False, hooks_shape: bool = True
) -> dict[str, Any]:
    """The settings object in ``text``; HookFileError when it is not strict JSON (or, with
    ``hooks_shape``, its ``hooks`` is not an object of event lists)."""
    if text.strip() == "":
        return {}
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except ValueError as exc:
        if comments_allowed and has_comments(text):
            raise HookFileError(
                f"{where} has comments; Helix does not rewrite commented settings "
                "(it would lose them). Add the entries below by hand"
            ) from exc
        raise HookFileError(f"{where} is not valid JSON ({exc}); left untouched") from exc
    if not isinstance(doc, dict):
        raise HookFileError(f"{where}: the top level is not a JSON object; left untouched")
    hooks = doc.get("hooks") if hooks_shape else None
    if hooks is not None and not isinstance(hooks, dict):
        raise HookFileError(f'{where}: "hooks" is not an object; left untouched')
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise HookFileError(f"{where}: hooks.{event} is not a list; left untouched")
    return doc


def is_ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    name, command = handler.get("name"), handler.get("command")
    if isinstance(name, str) and name.startswith("helix-"):
        return True
    return isinstance(command, str) and OURS.search(command) is not None


def _strip(groups: list[Any]) -> tuple[list[Any], int | None]:
    """``groups`` without Helix handlers (emptied groups dropped) and where the first was."""
    out: list[Any] = []
    first: int | None = None
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list) or not any(is_ours(h) for h in handlers):
            out.append(group)
            continue
        if first is None:
            first = len(out)
        rest = [h for h in handlers if not is_ours(h)]
        if rest:
            out.append({**group, "hooks": rest})
    return out, first


def install(doc: dict[str, Any], groups: tuple[tuple[str, dict[str, Any]], ...]) -> dict[str, Any]:
    """``doc`` with one Helix group per event: stale Helix handlers are replaced where the
    first one was, a missing group is appended; other keys and hooks keep their order."""
    out = dict(doc)
    hooks = dict(out.get("hooks") or {})
    for event, group in groups:
        kept, first = _strip(list(hooks.get(event, [])))
        kept.insert(len(kept) if first is None else first, group)
        hooks[event] = kept
    out["hooks"] = hooks
    return out


def uninstall(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without Helix handlers; events and ``hooks`` that became empty are removed."""
    if "hooks" not in doc:
        return doc
    out = dict(doc)
    hooks: dict[str, Any] = {}
    for event, groups in out["hooks"].items():
        kept, first = _strip(groups)
        if kept or first is None:
            hooks[event] = kept
    if hooks or not doc["hooks"]:
        out["hooks"] = hooks
    else:
        del out["hooks"]
    return out


def has_ours(doc: dict[str, Any]) -> bool:
    return uninstall(doc) != doc


def _indent(text: str) -> str | int:
    m = re.search(r"^\{\s*?\n([ \t]+)\S", text)
    if m is None:
        return 2
    ws = m.group(1)
    return "\t" if ws.startswith("\t") else len(ws)


_SEPARATORS = re.compile(r'"\s*(:)(\s*)\S|[\]}"\d]\s*(,)(\s*)\S')


def _separators(text: str) -> tuple[str, str]:
    """The item and key separators of a one-line JSON text: ``","``/``":"`` when compact,
    ``", "``/``": "`` as ``json.dumps`` writes them."""
    item, key = ", ", ": "
    for m in _SEPARATORS.finditer(text):
        if m.group(1) and key == ": ":
            key = ":" + m.group(2)
        if m.group(3) and item == ", ":
            item = "," + m.group(4)
    return item, key


def dump(doc: dict[str, Any], like: str | None) -> str:
    """``doc`` as text in the style of ``like`` (the file's current text): its indent, or on
    one line with its separators when it is written on one line (compact JSON stays compact,
    so that uninstall gives the file back byte for byte)."""
    body = (like or "").strip()
    if body and "\n" not in body:
        text = json.dumps(doc, separators=_separators(body), ensure_ascii=False)
    else:
        text = json.dumps(doc, indent=_indent(like or ""), ensure_ascii=False)
    return text + "\n" if like is None or like.endswith("\n") or not like.strip() else text


# -- one entry at a key path (MCP servers, the status line) ---------------------------------
def _is_ours_entry(value: Any, marker: str) -> bool:
    """An entry Helix wrote: its command runs ``helixctl`` with ``marker`` (``mcp``,
    ``statusline``), or the ``helix-<marker>`` script (``helix-statusline``)."""
    if not isinstance(value, dict):
        return False
    command = value.get("command")
    args = value.get("args")
    words = [command] if isinstance(command, str) else []
    words += [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    text = " ".join(words)
    if bool(re.search(r"helixctl['\"]?(\s|$)", text)) and marker in text.split():
        return True
    return any(w.strip("'\"").rsplit("/", 1)[-1] == f"helix-{marker}" for w in text.split())


def entry_parent(doc: dict[str, Any], keys: tuple[str, ...], where: str) -> dict[str, Any] | None:
    """The object holding the entry (None when a key on the way is absent); HookFileError
    when something on the way is not an object."""
    node: Any = doc
    for i, key in enumerate(keys[:-1]):
        node = node.get(key)
        if node is None:
            return None
        if not isinstance(node, dict):
            raise HookFileError(f'{where}: "{".".join(keys[: i + 1])}" is not an object')
    return dict(node)


def set_entry(
    doc: dict[str, Any], keys: tuple[str, ...], value: dict[str, Any], marker: str, where: str
) -> dict[str, Any]:
    """``doc`` with ``value`` at ``keys``: added, or replacing Helix's own entry; a different
    entry of the user's there is refused (HookFileError, nothing written)."""
    parent = entry_parent(doc, keys, where)
    current = (parent or {}).get(keys[-1])
    if current is not None and current != value and not _is_ours_entry(current, marker):
        raise HookFileError(
            f'{where}: "{".".join(keys)}" is already set to something else ({current!r});'
            " left untouched (remove it first to let Helix set it)"
        )
    return _put(doc, keys, value)


def _put(node: dict[str, Any], keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = dict(node)
    if len(keys) == 1:
        out[keys[0]] = value
    else:
        out[keys[0]] = _put(dict(out.get(keys[0]) or {}), keys[1:], value)
    return out


def remove_entry(
    doc: dict[str, Any], keys: tuple[str, ...], marker: str, drop_empty: bool
) -> dict[str, Any]:
    """``doc`` without Helix's entry at ``keys`` (another entry there is kept); the object
    that held it goes too when it is left empty and ``drop_empty`` (install created it)."""
    parent = entry_parent(doc, keys, "")
    if parent is None or not _is_ours_entry(parent.get(keys[-1]), marker):
        return doc
    del parent[keys[-1]]
    if len(keys) == 1:
        return parent
    if not parent and drop_empty:
        return _drop(doc, keys[:-1])
    return _put(doc, keys[:-1], parent)


def _drop(node: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = dict(node)
    if len(keys) == 1:
        out.pop(keys[0], None)
    else:
        out[keys[0]] = _drop(dict(out[keys[0]]), keys[1:])
    return out

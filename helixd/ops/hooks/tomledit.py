"""Setting a top-level argv array in a TOML file with comments kept (tomlkit).

Used for a ``notify``-style key that holds one program: an existing program that is not
Helix's is chained, ``[helix argv…, chain_flag, old argv…]``, and restored on uninstall.
"""

from __future__ import annotations

from typing import Any

from helixd.ops.hooks.jsonedit import HookFileError


def _parse(text: str, where: str) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text)
    except (TOMLKitError, ValueError) as exc:
        raise HookFileError(f"{where} is not valid TOML ({exc}); left untouched") from exc


def _ours(value: list[str], argv: tuple[str, ...]) -> bool:
    return (
        len(value) >= len(argv)
        and value[0].rsplit("/", 1)[-1].startswith("helixctl")
        and tuple(value[1 : len(argv)]) == argv[1:]
    )


def _current(doc: Any, key: str, where: str) -> list[str] | None:
    if key not in doc:
        return None
    value = doc[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HookFileError(f"{where}: {key} is not an array of strings; left untouched")
    return [str(v) for v in value]


def _chained(value: list[str], argv: tuple[str, ...], flag: str) -> list[str]:
    """The user's program after our ``flag``, or [] when none is chained."""
    rest = value[len(argv) :]
    return rest[1:] if rest[:1] == [flag] else []


def install(text: str, where: str, key: str, argv: tuple[str, ...], flag: str) -> str:
    doc = _parse(text, where)
    value = _current(doc, key, where)
    if value is None:
        want = list(argv)
    elif _ours(value, argv):
        chained = _chained(value, argv, flag)
        want = [*argv, flag, *chained] if chained else list(argv)
    else:
        want = [*argv, flag, *value] if value else list(argv)
    if value == want:
        return text
    doc[key] = want
    return str(doc.as_string())


def uninstall(text: str, where: str, key: str, argv: tuple[str, ...], flag: str) -> str:
    doc = _parse(text, where)
    value = _current(doc, key, where)
    if value is None or not _ours(value, argv):
        return text
    chained = _chained(value, argv, flag)
    if chained:
        doc[key] = chained
    else:
        del doc[key]
    return str(doc.as_string())


def has_ours(text: str, where: str, key: str, argv: tuple[str, ...]) -> bool:
    value = _current(_parse(text, where), key, where)
    return value is not None and _ours(value, argv)


# -- one table at a key path (Codex's [mcp_servers.helix]) ------------------------------------
def _ours_table(value: Any, marker: str) -> bool:
    command = value.get("command") if hasattr(value, "get") else None
    args = value.get("args") if hasattr(value, "get") else None
    return (
        isinstance(command, str)
        and command.rsplit("/", 1)[-1].startswith("helixctl")
        and marker in [str(a) for a in (args or [])]
    )


def set_table(
    text: str, where: str, keys: tuple[str, ...], value: dict[str, Any], marker: str
) -> str:
    """``text`` with the table ``keys`` set to ``value`` (comments and layout of the rest
    kept); a table of the user's under that name is refused."""
    import tomlkit

    doc = _parse(text, where)
    node: Any = doc
    for key in keys[:-1]:
        if key not in node:
            node[key] = tomlkit.table(is_super_table=True)
        node = node[key]
        if not hasattr(node, "get"):
            raise HookFileError(f"{where}: {key} is not a table; left untouched")
    current = node.get(keys[-1])
    if current is not None:
        if current.unwrap() == value:
            return text
        if not _ours_table(current, marker):
            raise HookFileError(
                f"{where}: [{'.'.join(keys)}] is already set to something else; left untouched"
                " (remove it first to let Helix set it)"
            )
    table = tomlkit.table()
    for k, v in value.items():
        table[k] = v
    node[keys[-1]] = table
    return str(doc.as_string())


def remove_table(text: str, where: str, keys: tuple[str, ...], marker: str, drop: bool) -> str:
    """``text`` without Helix's table ``keys``; the parent table goes too when left empty
    and ``drop`` (install created it)."""
    doc = _parse(text, where)
    node: Any = doc
    for key in keys[:-1]:
        node = node.get(key) if hasattr(node, "get") else None
        if node is None:
            return text
    if not hasattr(node, "get") or not _ours_table(node.get(keys[-1]), marker):
        return text
    del node[keys[-1]]
    if drop and len(keys) > 1 and len(node) == 0:
        parent: Any = doc
        for key in keys[:-2]:
            parent = parent[key]
        del parent[keys[-2]]
    return str(doc.as_string())


def has_table(text: str, keys: tuple[str, ...]) -> bool:
    """Whether the table (or key) at ``keys`` exists."""
    node: Any = _parse(text, "")
    for key in keys:
        node = node.get(key) if hasattr(node, "get") else None
        if node is None:
            return False
    return True

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

"""Is the value after a keyword a secret?  The judgement behind the key-value rules.

A key-value rule (``password=…``, ``"api_key": "…"``, ``Authorization: Bearer …``) fires on
its keyword; whether the value is masked is decided here, so that ordinary code in a
transcript is left readable:

* a **placeholder** is never masked: ``$VAR``, ``${VAR}``, ``{{ x }}``, ``<token>``,
  ``%(pw)s``, ``None``/``null``/``str``…, a run of one character (``xxxx``, ``****``), or text
  already redacted;
* **code** is never masked when the value is bare (not quoted): a call, subscript or
  argument (``token = make_token()``, ``f(password=password, …)``), a dotted name
  (``self.password``), a snake_case or UPPER_SNAKE name (``password=new_password``,
  ``password=DB_PASSWORD``; no part longer than 16), a variable that names a password
  (``password=passwd``, ``password: hashedPassword``, ``SecretBytes``); a word after
  ``name = `` (an assignment), ``--name `` (an option in prose) or ``name:`` without a space;
* a **password** (keywords ``password``, ``passwd``, ``passphrase``) is masked whenever it
  is a literal: quoted and at least 3 characters, or bare and at least 4 characters
  (``password=supersecret`` is masked, ``password=password`` is not);
* any other secret (``token``, ``secret``, ``api_key``…) is masked only when it *looks*
  generated: at least 8 characters with letters and digits (and 6 distinct characters), or
  at least 20 letters of both cases with a Shannon entropy of at least 3.7 bits a character.
  ``token: 2048``, ``secret: my-app-secret``, ``token = tokenizer`` and ``"token": "Bearer "``
  are kept.
"""

from __future__ import annotations

import math
import re

_PLACEHOLDER_START = frozenset(b"$%<{*[")
_PLACEHOLDER_WORDS = frozenset(
    {
        b"none",
        b"null",
        b"nil",
        b"true",
        b"false",
        b"undefined",
        b"str",
        b"string",
        b"bytes",
        b"int",
        b"bool",
        b"any",
        b"optional",
        b"secretstr",
        b"required",
        b"redacted",
        b"hidden",
        b"masked",
    }
)
_DOTTED_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_SNAKE_NAME = re.compile(
    rb"[a-z][a-z0-9]{0,15}(?:_[a-z0-9]{1,16})+|[A-Z][A-Z0-9]{0,15}(?:_[A-Z0-9]{1,16})+|_\w*"
)
_WORD = re.compile(rb"[A-Za-z]+")
_DIGITS = frozenset(b"0123456789")
_LOWER = frozenset(b"abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_CALL_OR_INDEX = frozenset(b"([,);")
# Variables that hold a password: a bare value that is one of these words (or a camelCase
# name holding one, such as hashedPassword) is a name, not the password.
_NAME_STEMS = (b"pass", b"pwd", b"secret", b"hash", b"cred", b"token", b"key", b"auth")
_NAME_WORDS = frozenset({b"pw", b"pwd", b"passwd", b"password", b"passphrase", b"pass", b"value"})
HIGH_ENTROPY = 3.7  # bits a character: random mixed-case letters of 20+ reach ~4.1


def placeholder(value: bytes) -> bool:
    """A template, a variable, a type name or a null: not a secret itself."""
    if not value or value[0] in _PLACEHOLDER_START:
        return True
    if b"${" in value or b"{{" in value or b"$(" in value:
        return True
    if value.lower() in _PLACEHOLDER_WORDS:
        return True
    return len(set(value)) == 1


def looks_like_code(value: bytes, next_byte: bytes) -> bool:
    """A bare value that is a name or an expression, not a literal."""
    if next_byte and next_byte[0] in _CALL_OR_INDEX and not generated(value):
        return True  # ``f(token=tok, …)``; a machine-made value before a comma stays a secret
    if _DOTTED_NAME.fullmatch(value) or _SNAKE_NAME.fullmatch(value):
        return True
    return bool(_WORD.fullmatch(value)) and entropy(value) < HIGH_ENTROPY


def names_a_password(value: bytes) -> bool:
    """``password=passwd``, ``password: hashedPassword``, ``password: SecretBytes``: a name
    (variable or type), not the password."""
    lower = value.lower()
    if lower in _NAME_WORDS:
        return True
    mixed_case = lower != value != value.upper()  # camelCase or PascalCase
    return (
        mixed_case and _WORD.fullmatch(value) is not None and any(s in lower for s in _NAME_STEMS)
    )


def _path_or_url(value: bytes) -> bool:
    return value[0] in b"/.~" or b"://" in value


def password_literal(value: bytes, quoted: bool, next_byte: bytes) -> bool:
    """The value after ``password``-like keywords: any literal counts."""
    if placeholder(value) or _path_or_url(value):
        return False
    if quoted:
        return len(value) >= 3
    if len(value) < 4 or names_a_password(value):
        return False
    if next_byte and next_byte[0] in _CALL_OR_INDEX and not generated(value):
        return False
    return not (_DOTTED_NAME.fullmatch(value) or _SNAKE_NAME.fullmatch(value))


def generated(value: bytes) -> bool:
    """Looks machine-made: letters and digits mixed, or long and high in entropy."""
    if len(value) < 8 or placeholder(value) or _path_or_url(value):
        return False
    chars = set(value)
    has_digit = not chars.isdisjoint(_DIGITS)
    has_lower = not chars.isdisjoint(_LOWER)
    has_upper = not chars.isdisjoint(_UPPER)
    if has_digit and (has_lower or has_upper):
        return len(chars) >= 6
    return len(value) >= 20 and has_lower and has_upper and entropy(value) >= HIGH_ENTROPY


def secret_value(value: bytes, quoted: bool, next_byte: bytes) -> bool:
    """The value after ``token``/``secret``/``api_key``-like keywords."""
    if not quoted and looks_like_code(value, next_byte):
        return False
    return generated(value)


def entropy(value: bytes) -> float:
    """Shannon entropy in bits per byte."""
    n = len(value)
    counts: dict[int, int] = {}
    for b in value:
        counts[b] = counts.get(b, 0) + 1
    return -sum(c / n * math.log2(c / n) for c in counts.values())

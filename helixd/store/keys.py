"""Natural keys as 64-bit integers, shared by the store's writers (and ``show``, which finds
an event's body by its key).

BLAKE2b from ``_blake2``, the module ``hashlib`` itself takes it from (``hashlib.blake2b`` is
this very type): importing ``hashlib`` also loads OpenSSL's ``_hashlib`` (~3 ms), which
nothing here uses.
"""

from __future__ import annotations

import struct
from typing import Final

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter without the built-in module
    from hashlib import blake2b

IN_CHUNK: Final = 500  # values per ``IN (...)`` list

# Three keys per event are hashed in a parse worker (the event's, its anchor's, its
# parent's): a copy of one empty hasher and one ``struct`` unpack cost ~0.5 µs a key where
# ``blake2b(…, digest_size=8)`` with ``int.from_bytes`` cost ~1 µs (issue 12; the values are
# the same, ``tests/test_parse_fastpaths.py``).
_EMPTY: Final = blake2b(digest_size=8)  # never updated: only copied
_SIGNED_LE: Final = struct.Struct("<q").unpack


def key64(text: str) -> int:
    """A signed 64-bit hash of a natural key (collisions: ~1e-7 at 1e6 keys per session):
    the first 8 bytes of BLAKE2b (digest size 8) of its UTF-8, little-endian."""
    h = _EMPTY.copy()
    h.update(text.encode("utf-8", "surrogatepass"))
    value: int = _SIGNED_LE(h.digest())[0]
    return value

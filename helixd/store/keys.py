"""Natural keys as 64-bit integers, shared by the store's writers (and ``show``, which finds
an event's body by its key).

BLAKE2b from ``_blake2``, the module ``hashlib`` itself takes it from (``hashlib.blake2b`` is
this very type): importing ``hashlib`` also loads OpenSSL's ``_hashlib`` (~3 ms), which
nothing here uses.
"""

from __future__ import annotations

from typing import Final

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter without the built-in module
    from hashlib import blake2b

IN_CHUNK: Final = 500  # values per ``IN (...)`` list


def key64(text: str) -> int:
    """A signed 64-bit hash of a natural key (collisions: ~1e-7 at 1e6 keys per session)."""
    return int.from_bytes(
        blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
        "little",
        signed=True,
    )

"""Natural keys as 64-bit integers, shared by the store's writers."""

from __future__ import annotations

import hashlib
from typing import Final

IN_CHUNK: Final = 500  # values per ``IN (...)`` list


def key64(text: str) -> int:
    """A signed 64-bit hash of a natural key (collisions: ~1e-7 at 1e6 keys per session)."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
        "little",
        signed=True,
    )

"""Memory given back to the system when the daemon comes to rest.

After a burst of writes the store connection's page cache holds up to ``cache_size`` (32
MiB) of pages and the C heap keeps the freed blocks: the daemon at rest with 10 000 files
tracked held ~156 MiB, ~120 MiB once both were given back (``bench/live.py --only idle``).
``Store.release_memory`` empties the page cache (``PRAGMA shrink_memory``); ``trim_heap``
then asks glibc to return the heap's free pages (``malloc_trim``), where there is a glibc.
The next burst reads its pages back from the operating system's file cache.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    """glibc, or None (macOS, musl: no ``malloc_trim``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def trim_heap() -> bool:
    """Return the C heap's free pages to the system; False where that cannot be asked."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True

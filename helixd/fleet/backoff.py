"""How long the daemon waits before pushing again after failed pushes (pure)."""

from __future__ import annotations


def retry_delay(failures: int, base: float, cap: float, jitter: float = 0.0) -> float:
    """Seconds to wait after ``failures`` failed pushes in a row: ``base``, then doubling, at
    most ``cap``; ``jitter`` in [0, 1) stretches it by up to a quarter so that machines that
    lost the same server do not all come back in the same second.  0 after a success."""
    if failures <= 0:
        return 0.0
    delay = min(cap, base * (1 << min(failures - 1, 32)))
    return min(cap, delay * (1 + 0.25 * jitter))

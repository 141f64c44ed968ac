"""helixd: the composition root and the edges only the daemon owns (watcher, queue, socket,
clock)."""

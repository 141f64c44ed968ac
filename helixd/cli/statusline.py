"""``helixctl statusline``: the line of ``helixd.statusline`` (Claude Code's ``statusLine``),
printed through the CLI.  The ``helix-statusline`` console script, which
``hooks install --statusline`` sets up, runs ``helixd.statusline`` directly: that module
loads nothing of the CLI (issue 14: 50 ms p95, whole process)."""

from helixd.statusline import line, main, run, tokens_text

__all__ = ["line", "main", "run", "tokens_text"]

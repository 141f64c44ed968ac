"""What ``helixctl`` writes to the terminal, by click's rules (the CLI ran on click before):
``echo`` writes one text to stdout or stderr, flushed, drops ANSI escapes when the stream is
not a terminal, and replaces what the stream cannot encode rather than failing; ``page``
shows a long text through the user's pager (``$MANPAGER``, ``$PAGER``, else ``less``)."""

from __future__ import annotations

import re
import sys

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # click.termui's strip_ansi


def echo(message: str = "", err: bool = False, nl: bool = True) -> None:
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no console (pythonw, a closed descriptor): nothing to write to
        return
    text = message + "\n" if nl else message
    if "\x1b" in text and not stream.isatty():
        text = _ANSI.sub("", text)
    try:
        stream.write(text)
    except UnicodeEncodeError:  # a path with undecodable bytes, a terminal in ASCII
        stream.flush()
        stream.buffer.write(text.encode(stream.encoding or "utf-8", "replace"))
    stream.flush()


def page(text: str) -> None:
    """``text`` through the pager (the standard library's ``pydoc.pager``)."""
    import pydoc

    pydoc.pager(text)

"""Plain aligned text tables for a terminal or a pipe: a header row, columns padded to their
widest cell (numbers right-aligned), a long column cut with an ellipsis to fit the width.
Cheap to import on purpose (the read commands' whole-process time is the figure)."""

from __future__ import annotations

from collections.abc import Sequence

from helixd.cli.main import terminal_columns  # loaded by every command


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def render(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Sequence[bool] = (),
    flex: int | None = None,
    title: str | None = None,
    total: Sequence[str] | None = None,
) -> str:
    """The table as text.  ``right[i]`` right-aligns column ``i``; column ``flex`` (default:
    the widest) is cut so that the table fits the terminal."""
    cols = len(head)
    align = [*right, *([False] * cols)][:cols]
    body = [list(r) for r in rows] + ([list(total)] if total else [])
    widths = [max([len(head[i])] + [len(r[i]) for r in body]) for i in range(cols)]
    room = terminal_columns(160) - 2 * (cols - 1)
    if sum(widths) > room:
        k = flex if flex is not None else max(range(cols), key=lambda i: widths[i])
        widths[k] = max(room - (sum(widths) - widths[k]), min(widths[k], 12))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, c in enumerate(cells):
            c = cut(c, widths[i])
            out.append(c.rjust(widths[i]) if align[i] else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [title] if title else []
    lines.append(line(head))
    lines.extend(line(r) for r in rows)
    if total:
        lines.append("  ".join("-" * w for w in widths))
        lines.append(line(total))
    return "\n".join(lines)

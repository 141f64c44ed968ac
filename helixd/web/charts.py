"""Charts drawn on the server as SVG (pure: data in, markup out).  Colours come from CSS
classes (``s0``…``s7`` for series, ``h0``…``h4`` for heat), so light and dark mode restyle
them; each mark has a ``<title>`` for its exact value, and marks that point at something are
links."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any, Final

from markupsafe import Markup

SERIES: Final = 8
Fmt = Callable[[float], str]


def _num(v: float) -> str:
    return f"{v:,.0f}"


def _svg(w: int, h: int, body: list[str], label: str, cls: str = "chart") -> Markup:
    return Markup(
        f'<svg class="{cls}" viewBox="0 0 {w} {h}" preserveAspectRatio="none" role="img"'
        f' aria-label="{escape(label)}" width="100%" height="{h}">' + "".join(body) + "</svg>"
    )


def _day(iso: str | None, with_year: bool = False) -> str:
    if not iso:
        return ""
    d = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC)
    return d.strftime("%b %-d %Y" if with_year else "%b %-d")


def stacked_bars(
    slots: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    value: Callable[[Mapping[str, Any]], float],
    *,
    fmt: Fmt = _num,
    height: int = 180,
    label: str = "chart",
    by: str = "by",
) -> Markup:
    """One bar per slot (``slot["start"]``), stacked by ``keys`` (``slot[by][key]`` ->
    ``value(...)``); the first ``SERIES - 1`` keys get their own colour, the rest share one."""
    if not slots:
        return Markup('<p class="empty">No data for this period</p>')
    w, pad_l, pad_b = 900, 48, 20
    n = len(slots)
    totals = [sum(value(s[by][k]) for k in s[by]) for s in slots]
    top = max(totals) or 1.0
    bw = (w - pad_l) / n
    body = [
        f'<line class="axis" x1="{pad_l}" y1="{height - pad_b}" x2="{w}" y2="{height - pad_b}"/>',
        f'<text class="tick" x="{pad_l - 6}" y="12" text-anchor="end">{escape(fmt(top))}</text>',
        f'<text class="tick" x="{pad_l - 6}" y="{height - pad_b}" text-anchor="end">0</text>',
    ]
    color = {k: min(i, SERIES - 1) for i, k in enumerate(keys)}
    every = max(1, n // 8)
    for i, s in enumerate(slots):
        x = pad_l + i * bw
        y = float(height - pad_b)
        for k in keys:
            if k not in s[by]:
                continue
            v = value(s[by][k])
            if v <= 0:
                continue
            bh = v / top * (height - pad_b - 8)
            y -= bh
            body.append(
                f'<rect class="s{color[k]}" x="{x + 0.5:.1f}" y="{y:.1f}"'
                f' width="{max(bw - 1, 0.8):.1f}" height="{bh:.1f}">'
                f"<title>{escape(_day(s.get('start'), True))} · {escape(k or 'all')}: "
                f"{escape(fmt(v))}</title></rect>"
            )
        if i % every == 0:
            body.append(
                f'<text class="tick" x="{x + bw / 2:.1f}" y="{height - 5}"'
                f' text-anchor="middle">{escape(_day(s.get("start")))}</text>'
            )
    return _svg(w, height, body, label)


def legend(keys: Sequence[str], labels: Mapping[str, str] | None = None) -> Markup:
    items = [
        f'<span class="key"><i class="s{min(i, SERIES - 1)}"></i>'
        f"{escape((labels or {}).get(k, k) or 'all')}</span>"
        for i, k in enumerate(keys[: SERIES - 1])
    ]
    if len(keys) >= SERIES:
        items.append(f'<span class="key"><i class="s{SERIES - 1}"></i>others</span>')
    return Markup('<div class="legend">' + "".join(items) + "</div>")


def hbars(
    rows: Sequence[tuple[str, float, str | None]], *, fmt: Fmt = _num, label: str = "chart"
) -> Markup:
    """Horizontal bars: ``(label, value, link)`` rows, longest first as given."""
    if not rows:
        return Markup('<p class="empty">No data for this period</p>')
    top = max(v for _, v, _ in rows) or 1.0
    out = ['<div class="hbars" role="list" aria-label="' + escape(label) + '">']
    for i, (name, v, href) in enumerate(rows):
        name_html = f'<a href="{escape(href)}">{escape(name)}</a>' if href else escape(name or "—")
        out.append(
            f'<div class="hbar" role="listitem"><span class="hl" title="{escape(name)}">'
            f"{name_html}</span>"
            f'<svg class="hb" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">'
            f'<rect class="s{min(i, SERIES - 1)}" width="{max(v / top * 100, 0.5):.1f}"'
            f' height="10" rx="2"/></svg><span class="hv">{escape(fmt(v))}</span></div>'
        )
    out.append("</div>")
    return Markup("".join(out))


def _scale(values: Sequence[float]) -> Callable[[float], int]:
    """Heat level 0-4 of a value: 0 for nothing, then the quartile of the non-zero values it
    falls in (one busy outlier does not wash out the rest)."""
    nz = sorted(v for v in values if v > 0)
    if not nz:
        return lambda v: 0
    cuts = [nz[min(len(nz) - 1, int(len(nz) * q))] for q in (0.25, 0.5, 0.75)]

    def level(v: float) -> int:
        return 0 if v <= 0 else 1 + sum(v > c for c in cuts)

    return level


def calendar(days: Sequence[Mapping[str, Any]], key: str, *, label: str = "activity") -> Markup:
    """A year-style heatmap: one column per week, one row per weekday (Monday on top)."""
    if not days:
        return Markup('<p class="empty">No activity in this period</p>')
    by_slot = {int(d["slot"]): d for d in days}
    first, last = min(by_slot), max(by_slot)
    first -= (first + 3) % 7  # back to a Monday (epoch day 0 was a Thursday)
    level = _scale([float(d[key]) for d in days])
    cell, gap, pad_l, pad_t = 12, 2, 28, 14
    weeks = (last - first) // 7 + 1
    w, h = pad_l + weeks * (cell + gap), pad_t + 7 * (cell + gap)
    body = [
        f'<text class="tick" x="0" y="{pad_t + r * (cell + gap) + 10}">{name}</text>'
        for r, name in ((0, "Mon"), (2, "Wed"), (4, "Fri"))
    ]
    month = None
    for day in range(first, last + 1):
        col, row = (day - first) // 7, (day - first) % 7
        x, y = pad_l + col * (cell + gap), pad_t + row * (cell + gap)
        d = by_slot.get(day)
        v = float(d[key]) if d else 0.0
        when = datetime.fromtimestamp(day * 86400, UTC)
        if row == 0 and when.month != month:
            month = when.month
            body.append(f'<text class="tick" x="{x}" y="10">{when:%b}</text>')
        body.append(
            f'<rect class="h{level(v)}" x="{x}" y="{y}" width="{cell}" height="{cell}"'
            f' rx="2"><title>{when:%a %b %-d %Y}: {v:,.0f} {escape(key)}</title></rect>'
        )
    return Markup(
        f'<svg class="calendar" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img"'
        f' aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


WEEKDAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def weekday_hours(grid: Sequence[Sequence[int]], *, label: str = "by day and hour") -> Markup:
    if not any(any(r) for r in grid):
        return Markup('<p class="empty">No activity in this period</p>')
    level = _scale([float(v) for r in grid for v in r])
    cell, gap, pad_l, pad_t = 22, 3, 34, 16
    w, h = pad_l + 24 * (cell + gap), pad_t + 7 * (cell + gap)
    body = [
        f'<text class="tick" x="{pad_l + hr * (cell + gap) + cell / 2}" y="11"'
        f' text-anchor="middle">{hr}</text>'
        for hr in range(0, 24, 3)
    ]
    for r, row in enumerate(grid):
        y = pad_t + r * (cell + gap)
        body.append(f'<text class="tick" x="0" y="{y + 15}">{WEEKDAYS[r]}</text>')
        for hr, v in enumerate(row):
            x = pad_l + hr * (cell + gap)
            body.append(
                f'<rect class="h{level(v)}" x="{x}" y="{y}" width="{cell}" height="{cell}"'
                f' rx="3"><title>{WEEKDAYS[r]} {hr:02d}:00: {v:,} responses</title></rect>'
            )
    return Markup(
        f'<svg class="grid" viewBox="0 0 {w} {h}" width="100%" role="img"'
        f' aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def matrix(
    rows: Sequence[str],
    slots: Sequence[Mapping[str, Any]],
    cells: Mapping[str, Mapping[str, int]],
    *,
    label: str = "heatmap",
) -> Markup:
    """Rows x time slots (the files heatmap)."""
    if not rows or not slots:
        return Markup('<p class="empty">No file operations in this period</p>')
    level = _scale([float(v) for c in cells.values() for v in c.values()])
    cell, gap = 14, 2
    w = len(slots) * (cell + gap)
    h = len(rows) * (cell + gap)
    body = []
    for r, path in enumerate(rows):
        row = cells.get(path, {})
        for c, s in enumerate(slots):
            v = row.get(str(s["slot"]), 0)
            body.append(
                f'<rect class="h{level(v)}" x="{c * (cell + gap)}" y="{r * (cell + gap)}"'
                f' width="{cell}" height="{cell}" rx="2"><title>{escape(path)} · week of'
                f" {escape(_day(s.get('start'), True))}: {v} operations</title></rect>"
            )
    return Markup(
        f'<svg class="matrix" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img"'
        f' aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def timeline(cells: Sequence[Mapping[str, Any]], href: Callable[[int], str]) -> Markup:
    """The session strip: one column per slice of events, stacked user / assistant / tool /
    error marks, each column a link to its first event."""
    if not cells:
        return Markup("")
    n = len(cells)
    w, h = 900, 56
    cw = w / n
    top = max(c["events"] for c in cells) or 1
    body = []
    for i, c in enumerate(cells):
        x = i * cw
        y = float(h)
        parts = (
            ("user", "s1"),
            ("assistant", "s0"),
            ("tools", "s2"),
            ("edits", "s4"),
            ("errors", "s3"),
        )
        marks = []
        for key, cls in parts:
            v = c[key]
            if not v:
                continue
            bh = v / top * (h - 4)
            y -= bh
            marks.append(
                f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{max(cw - 0.5, 0.6):.1f}"'
                f' height="{bh:.1f}"/>'
            )
        tip = (
            f"#{c['seq']}–{c['last_seq']}: {c['user']} user, {c['assistant']} assistant,"
            f" {c['tools']} tool calls, {c['edits']} edits, {c['errors']} errors"
        )
        body.append(
            f'<a href="{escape(href(c["seq"]))}"><title>{escape(tip)}</title>'
            f'<rect class="hit" x="{x:.1f}" y="0" width="{cw:.1f}" height="{h}"/>'
            + "".join(marks)
            + "</a>"
        )
    return _svg(w, h, body, "session timeline", "timeline")

"""SVG charts drawn on the server: no JavaScript, no external library.

Every label goes through ``escape``; numbers are formatted by us.
"""

from __future__ import annotations

from markupsafe import Markup, escape

PALETTE = ("#2f6fb0", "#d9822b", "#3c9a5f", "#9b59b6", "#c0392b", "#7f8c8d", "#16a085", "#b7950b")


def colour_for(names: list[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _legend(colours: dict[str, str], x: float, y: float) -> list[str]:
    parts = []
    for i, (name, colour) in enumerate(colours.items()):
        lx = x + i * 110
        parts.append(f'<rect x="{lx:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 14:.1f}" y="{y:.1f}" class="legend">{escape(name)}</text>')
    return parts


def stacked_bars(title: str, days: list[str], series: dict[str, list[int]], width: int = 760, height: int = 220) -> Markup:
    """One bar per day, stacked by series (e.g. sessions per day by source)."""
    left, top, bottom = 40, 28, 34
    plot_w, plot_h = width - left - 10, height - top - bottom
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    peak = max(totals, default=0) or 1
    bar_w = plot_w / max(len(days), 1)
    colours = colour_for(list(series))
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<text x="{left}" y="14" class="chart-title">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" class="axis"/>',
        f'<text x="{left - 4}" y="{top + 4}" class="tick" text-anchor="end">{peak}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" class="tick" text-anchor="end">0</text>',
    ]
    for i, day in enumerate(days):
        x = left + i * bar_w
        y = top + plot_h
        for name, values in series.items():
            value = values[i]
            if not value:
                continue
            h = value / peak * plot_h
            y -= h
            parts.append(
                f'<rect x="{x + 0.5:.1f}" y="{y:.1f}" width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}" '
                f'fill="{colours[name]}"><title>{escape(day)} {escape(name)}: {value}</title></rect>'
            )
    positions = _label_positions(len(days))
    for i in positions:
        x = left + i * bar_w + bar_w / 2
        anchor = "start" if i == positions[0] else "end" if i == positions[-1] else "middle"
        x = left if anchor == "start" else left + (i + 1) * bar_w if anchor == "end" else x
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 14}" class="tick" text-anchor="{anchor}">{escape(days[i])}</text>')
    parts += _legend(colours, left, height - 4)
    parts.append("</svg>")
    return Markup("".join(parts))


def horizontal_bars(title: str, items: list[tuple[str, int]], width: int = 760) -> Markup:
    """One labelled bar per item (e.g. tool calls by tool name)."""
    row, label_w, top = 18, 200, 24
    height = top + row * len(items) + 8
    peak = max((value for _, value in items), default=0) or 1
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<text x="0" y="14" class="chart-title">{escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(items):
        y = top + i * row
        w = value / peak * (width - label_w - 60)
        parts.append(f"<g><title>{escape(label)}: {value:,}</title>")  # (the whole name, on hover)
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" class="tick" text-anchor="end">{escape(_clip_to_width(label, label_w - 10))}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{max(w, 1):.1f}" height="{row - 5}" fill="{PALETTE[0]}"/>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" class="tick">{value}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _label_positions(count: int, most: int = 8) -> list[int]:
    if count <= most:
        return list(range(count))
    step = (count - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})


# Rough advance widths (in ems) of a sans-serif face: a label cut to fit by them
# stays inside its column whatever its letters.
NARROW, WIDE = frozenset("iljtfrI.,:;'|!()[] "), frozenset("MWmw@%")


def _clip_to_width(text: str, units: float, size: float = 11) -> str:
    """``text`` cut (with an ellipsis) to what ``units`` of ``size`` px text hold."""
    room, used = units / size, 0.0
    for n, char in enumerate(text):
        used += 0.3 if char in NARROW else 0.95 if char in WIDE else 0.72 if char.isupper() else 0.6
        if used > room:
            return text[: max(n - 1, 1)] + "…"
    return text


def _clip(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"

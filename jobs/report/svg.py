"""Inline SVG charts for the run report: plain strings, no plotting library, no scripts, no network."""
from __future__ import annotations

import math
from html import escape
from typing import List, Optional, Sequence, Tuple, Union

PALETTE = ["#2f6db5", "#d9822b", "#3f9b5a", "#b8423a", "#7d5ba6", "#8c6d46", "#c75c9c", "#6f7a82",
           "#a8a53a", "#2aa3b5", "#1b3f73", "#f2b66d", "#e38b84", "#b9a3d6", "#5b3a1e", "#80cdd8",
           "#d4d27a", "#444444"]
KEPT_COLOUR = "#3f9b5a"
REJECTED_COLOUR = "#b8423a"
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def _number(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{int(value):,}"


def _svg(width: int, height: int, body: List[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" {FONT}>'
            f'<title>{escape(title)}</title>{"".join(body)}</svg>')


def bar_chart(items: Sequence[Tuple[str, float]], title: str, unit: str = "",
              colour: str = PALETTE[0], label_width: int = 220, width: int = 760) -> str:
    """Horizontal bars, one per (label, value), with the value written after the bar."""
    row = 22
    height = row * len(items) + 10
    top = max((v for _, v in items), default=0) or 1
    plot = width - label_width - 90
    body = []
    for i, (label, value) in enumerate(items):
        y = 5 + i * row
        length = max(plot * value / top, 1 if value else 0)
        body.append(f'<text x="{label_width - 6}" y="{y + 15}" text-anchor="end">{escape(str(label))}</text>'
                    f'<rect x="{label_width}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" fill="{colour}"/>'
                    f'<text x="{label_width + length + 5:.1f}" y="{y + 15}">{_number(value)}{escape(unit)}</text>')
    return _svg(width, height, body, title)


def paired_bar_chart(labels: Sequence[str], series: Sequence[Tuple[str, Sequence[float]]], title: str,
                     label_width: int = 160, width: int = 760, percent: bool = True) -> str:
    """Bars side by side per label, e.g. target vs achieved weight per domain, with a legend."""
    bar, gap = 12, 10
    group = bar * len(series) + gap
    height = 28 + group * len(labels)
    top = max((v for _, values in series for v in values), default=0) or 1
    plot = width - label_width - 80
    body = []
    x = label_width
    for s, (name, _) in enumerate(series):
        body.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{PALETTE[s]}"/>'
                    f'<text x="{x + 16}" y="15">{escape(name)}</text>')
        x += 36 + 7 * len(name)  # about 7 px per character at 12 px
    for i, label in enumerate(labels):
        y = 26 + i * group
        body.append(f'<text x="{label_width - 6}" y="{y + bar * len(series) / 2 + 4:.1f}" '
                    f'text-anchor="end">{escape(str(label))}</text>')
        for s, (_, values) in enumerate(series):
            value = values[i]
            length = plot * value / top
            shown = f"{value * 100:.1f} %" if percent else _number(value)
            body.append(f'<rect x="{label_width}" y="{y + s * bar}" width="{length:.1f}" height="{bar - 2}" '
                        f'fill="{PALETTE[s]}"/><text x="{label_width + length + 4:.1f}" y="{y + s * bar + 9}" '
                        f'font-size="10">{shown}</text>')
    return _svg(width, height, body, title)


def nice_ticks(top: float, count: int = 5) -> List[float]:
    """Round y-axis ticks from 0 to at least ``top``: steps of 1, 2 or 5 times a power of ten."""
    if top <= 0:
        return [0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if top >= 1:
        step = max(step, 1)  # counts: no fractional ticks
    return [i * step for i in range(int(math.ceil(top / step - 1e-9)) + 1)]


def histogram(bins: Sequence[Tuple[str, Union[float, Sequence[float]]]], title: str, x_label: str,
              colour: str = PALETTE[0], width: int = 760, height: int = 220,
              parts: Sequence[Tuple[str, str]] = (), marker: Optional[Tuple[float, str]] = None) -> str:
    """Vertical bars over ordered bins (label, count), labels thinned to stay readable, y-axis ticks.

    With ``parts`` (name, colour), each bin's value is a sequence of counts stacked bottom-up in
    those colours, with a legend. ``marker`` (position in bins, label) draws a dashed vertical line,
    e.g. a threshold: 2.5 is halfway through the third bin."""
    left, bottom, top_pad = 50, 40, 34 if parts or marker else 10
    plot_w, plot_h = width - left - 10, height - bottom - top_pad
    stacks = [(label, list(value) if parts else [value]) for label, value in bins]
    colours = [c for _, c in parts] or [colour]
    ticks = nice_ticks(max((sum(v) for _, v in stacks), default=0))
    top = ticks[-1] or 1
    step = plot_w / max(len(stacks), 1)
    every = max(1, round(len(stacks) / 12))
    body = []
    for tick in ticks:
        y = top_pad + plot_h - plot_h * tick / top
        body.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" '
                    f'stroke="{"#555" if tick == 0 else "#e4e4e4"}"/>'
                    f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(tick)}</text>')
    body.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle">{escape(x_label)}</text>')
    for i, (label, values) in enumerate(stacks):
        x, base = left + i * step, top_pad + plot_h
        tip = " / ".join(f"{name} {_number(v)}" for (name, _), v in zip(parts, values)) if parts else _number(values[0])
        for value, fill in zip(values, colours):
            h = plot_h * value / top
            if h > 0:
                body.append(f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{max(step - 2, 1):.1f}" '
                            f'height="{h:.1f}" fill="{fill}"><title>{escape(str(label))}: {escape(tip)}</title></rect>')
            base -= h
        if i % every == 0:
            body.append(f'<text x="{x + step / 2:.1f}" y="{top_pad + plot_h + 14}" text-anchor="middle" '
                        f'font-size="10">{escape(str(label))}</text>')
    if marker is not None:
        position, text = marker
        x = left + step * position
        body.append(f'<line x1="{x:.1f}" y1="{top_pad - 4}" x2="{x:.1f}" y2="{top_pad + plot_h}" stroke="#222" '
                    f'stroke-width="2" stroke-dasharray="5,3"/>'
                    f'<text x="{x + 4:.1f}" y="{top_pad - 8}" font-size="11">{escape(text)}</text>')
    x = left + plot_w
    for name, fill in reversed(parts):  # legend, right-aligned above the plot
        x -= 22 + 7 * len(name)
        body.append(f'<rect x="{x}" y="2" width="12" height="12" fill="{fill}"/>'
                    f'<text x="{x + 16}" y="13">{escape(name)}</text>')
    return _svg(width, height, body, title)


def funnel_chart(stages: Sequence[Tuple[str, int, Sequence[Tuple[str, int]], str]], title: str,
                 label_width: int = 110, width: int = 760) -> str:
    """One bar per stage (name, records in, drops, unit of the kept records): records in, split into
    kept (green) and each drop reason (coloured)."""
    row = 30
    top = max((records_in for _, records_in, _, _ in stages), default=0) or 1
    plot = width - label_width - 20
    reasons: List[str] = []
    for _, _, drops, _ in stages:
        reasons += [r for r, _ in drops if r not in reasons]
    others = [c for c in PALETTE if c != KEPT_COLOUR]
    colour = {r: others[i % len(others)] for i, r in enumerate(reasons)}
    body = []
    for i, (name, records_in, drops, unit) in enumerate(stages):
        y = 5 + i * row
        kept = records_in - sum(n for _, n in drops)
        body.append(f'<text x="{label_width - 6}" y="{y + 18}" text-anchor="end">{escape(name)}</text>')
        x = float(label_width)
        for reason, n, fill in [("kept", kept, KEPT_COLOUR)] + [(r, n, colour[r]) for r, n in drops]:
            w = plot * n / top
            if w <= 0:
                continue
            body.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" fill="{fill}">'
                        f'<title>{escape(name)} {escape(reason)}: {_number(n)}</title></rect>')
            x += w
        label = f"{_number(kept)} {unit} kept"
        inside = plot * kept / top >= 7 * len(label) + 8  # about 7 px per character at 12 px
        body.append(f'<text x="{label_width + 4 if inside else x + 4:.1f}" y="{y + 18}" '
                    f'fill="{"#fff" if inside else "#222"}">{escape(label)}</text>')
    legend_y = 10 + len(stages) * row
    legend = [("kept", KEPT_COLOUR)] + [(r, colour[r]) for r in reasons]
    per_row = 3
    for j, (reason, fill) in enumerate(legend):
        x, y = label_width + (j % per_row) * 210, legend_y + (j // per_row) * 18
        body.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{fill}"/>'
                    f'<text x="{x + 16}" y="{y + 11}">{escape(reason[:30])}</text>')
    height = legend_y + 18 * ((len(legend) + per_row - 1) // per_row) + 6
    return _svg(width, height, body, title)


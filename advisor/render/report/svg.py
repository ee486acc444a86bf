"""The report's charts as inline SVG: no script, no external asset, every label escaped.

Coordinates are rounded to 0.1 so that the same figures always give the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from advisor.render.common.html import escape

ALLOTTED_COLOUR = "#4338ca"
USED_COLOUR = "#0d9488"
USED_FILL = "#99f6e4"
GRID_COLOUR = "#e2e8f0"
AXIS_COLOUR = "#94a3b8"
MAX_POINTS = 1200  # more samples than pixels add bytes, not detail

# Time-axis steps in seconds; the first that gives at most _MAX_TIME_TICKS ticks is used.
# Steps under a minute label seconds too (a demo's or a fresh Prometheus's few seconds).
_TIME_STEPS: tuple[int, ...] = (1, 2, 5, 10, 15, 30, 60, 300, 600, 900, 1800, 3600, 7200)
_TIME_STEPS += (10800, 21600, 43200, 86400, 172800, 604800)
_MAX_TIME_TICKS = 9
TIME_ZONE = "UTC"  # samples are unix seconds; the axis names its zone


def _n(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


# -- Pending by cause ----------------------------------------------------------------------------


def cause_bar_chart(rows: Sequence[tuple[str, int, str]], width: int = 1100) -> str:
    """Horizontal bars, one per (label, count, colour), widths by count."""
    label_w, count_w, row_h, bar_h, top = 120, 60, 32, 22, 4
    track = width - label_w - count_w
    peak = max([count for _, count, _ in rows] + [1])
    height = top * 2 + row_h * len(rows)
    parts = [
        f'<svg class="chart cause-chart" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="Pending pods by cause">'
        "<title>Pending pods by cause</title>"
    ]
    for i, (label, count, colour) in enumerate(rows):
        y = top + i * row_h
        mid = y + bar_h / 2
        bar = track * count / peak
        parts.append(
            f'<g class="cause-row"><text x="{label_w - 10}" y="{_n(mid)}" text-anchor="end" '
            f'dominant-baseline="central">{escape(label)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{track}" height="{bar_h}" rx="4" '
            f'fill="#f1f5f9"/>'
            + (
                f'<rect x="{label_w}" y="{y}" width="{_n(max(bar, 4))}" height="{bar_h}" rx="4" '
                f'fill="{escape(colour)}"><title>{escape(label)}: {count}</title></rect>'
                if count
                else ""
            )
            + f'<text x="{_n(label_w + max(bar, 0) + 8)}" y="{_n(mid)}" class="count" '
            f'dominant-baseline="central">{count}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


# -- usage over time -----------------------------------------------------------------------------


def nice_step(span: float, ticks: int = 5) -> float:
    """1, 2, 2.5 or 5 × 10^k, so that `span` takes about `ticks` steps."""
    raw = max(span, 1e-9) / ticks
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw * 0.999)


def _time_label(stamp: float, step: int) -> str:
    moment = datetime.fromtimestamp(stamp, UTC)
    if step < 60:
        return moment.strftime("%H:%M:%S")
    if step >= 86400 or (moment.hour == 0 and moment.minute == 0):
        return moment.strftime("%m-%d")
    return moment.strftime("%H:%M")


def time_ticks(start: float, end: float) -> list[tuple[float, str]]:
    """Round UTC times between start and end, labelled HH:MM (MM-DD at midnight; HH:MM:SS
    for steps under a minute)."""
    span = max(end - start, 1.0)
    step = next((s for s in _TIME_STEPS if span / s <= _MAX_TIME_TICKS), _TIME_STEPS[-1])
    first = math.ceil(start / step) * step
    return [(float(t), _time_label(t, step)) for t in range(first, int(end) + 1, step)]


def thin(
    times: Sequence[float], series: Sequence[Sequence[float]], limit: int = MAX_POINTS
) -> tuple[list[float], list[list[float]]]:
    """At most `limit` points: each bucket keeps its first time and each series' maximum
    (peaks are what a capacity chart must not lose)."""
    n = len(times)
    if n <= limit:
        return list(times), [list(s) for s in series]
    bounds = [n * i // limit for i in range(limit + 1)]
    kept_times = [times[bounds[i]] for i in range(limit)]
    kept = [[max(s[bounds[i] : bounds[i + 1]]) for i in range(limit)] for s in series]
    return kept_times, kept


def usage_line_chart(
    times: Sequence[float],
    allotted_gib: Sequence[float],
    used_gib: Sequence[float],
    width: int = 1100,
    height: int = 318,
) -> str:
    """Allotted and used vGPU memory (GiB) over time (UTC): a line and a shaded area."""
    left, right, top, bottom = 64, 16, 14, 54
    plot_w, plot_h = width - left - right, height - top - bottom
    xs, (allotted, used) = thin(times, [allotted_gib, used_gib])
    start, end = xs[0], xs[-1]
    if end <= start:  # one sample: centre it in an hour
        start, end = start - 1800, end + 1800
    top_value = max([*allotted, *used, 0.0]) * 1.05  # a line at the very top is hard to read
    step = nice_step(top_value or 1.0)
    y_max = max(math.ceil(top_value / step), 1) * step

    def x(t: float) -> float:
        return left + plot_w * (t - start) / (end - start)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / y_max)

    parts = [
        f'<svg class="chart usage-chart" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="vGPU memory allotted and used over time">'
        f"<title>vGPU memory allotted and used over time (GiB, {TIME_ZONE})</title>"
    ]
    for i in range(round(y_max / step) + 1):
        value = i * step
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{_n(y(value))}" y2="{_n(y(value))}" '
            f'stroke="{GRID_COLOUR}"/><text x="{left - 8}" y="{_n(y(value))}" '
            f'text-anchor="end" dominant-baseline="central">{escape(f"{value:g}")}</text>'
        )
    for stamp, label in time_ticks(start, end):
        parts.append(
            f'<line x1="{_n(x(stamp))}" x2="{_n(x(stamp))}" y1="{top}" y2="{top + plot_h + 5}" '
            f'stroke="{GRID_COLOUR}"/><text x="{_n(x(stamp))}" y="{top + plot_h + 18}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    parts.append(
        f'<text x="14" y="{_n(top + plot_h / 2)}" transform="rotate(-90 14 '
        f'{_n(top + plot_h / 2)})" text-anchor="middle" class="axis-title">GiB</text>'
        f'<text x="{_n(left + plot_w / 2)}" y="{height - 6}" text-anchor="middle" '
        f'class="axis-title">time ({TIME_ZONE})</text>'
        f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" '
        f'stroke="{AXIS_COLOUR}"/>'
    )
    line_used = " ".join(f"{_n(x(t))},{_n(y(v))}" for t, v in zip(xs, used, strict=True))
    line_allotted = " ".join(f"{_n(x(t))},{_n(y(v))}" for t, v in zip(xs, allotted, strict=True))
    base = _n(y(0))
    parts.append(
        f'<polygon class="used-area" points="{_n(x(xs[0]))},{base} {line_used} '
        f'{_n(x(xs[-1]))},{base}" fill="{USED_FILL}" fill-opacity="0.55"/>'
        f'<polyline class="used-line" points="{line_used}" fill="none" stroke="{USED_COLOUR}" '
        'stroke-width="2" stroke-linejoin="round"/>'
        f'<polyline class="allotted-line" points="{line_allotted}" fill="none" '
        f'stroke="{ALLOTTED_COLOUR}" stroke-width="2.5" stroke-linejoin="round"/>'
    )
    if len(xs) < 3:  # too few points for a visible line
        for t, a, u in zip(xs, allotted, used, strict=True):
            parts.append(
                f'<circle cx="{_n(x(t))}" cy="{_n(y(a))}" r="4" fill="{ALLOTTED_COLOUR}"/>'
                f'<circle cx="{_n(x(t))}" cy="{_n(y(u))}" r="4" fill="{USED_COLOUR}"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


# -- right-sizing --------------------------------------------------------------------------------


def sizing_bar(
    allotted: float | None,
    p95: float | None,
    peak: float | None,
    recommended: float | None,
    scale: float,
    width: int = 170,
) -> str:
    """One workload's memory per vGPU: the allotment as a track, p95 use filled, the peak as
    a dark tick, the recommendation as a dashed line."""
    height, bar_top, bar_h = 20, 4, 12

    def at(value: float) -> float:
        return width * min(max(value / scale, 0.0), 1.0)

    parts = [
        f'<svg class="sizing" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
    ]
    tip = []
    if allotted is not None:
        parts.append(
            f'<rect x="0" y="{bar_top}" width="{_n(at(allotted))}" height="{bar_h}" rx="2" '
            'fill="#e2e8f0" stroke="#94a3b8"/>'
        )
        tip.append(f"allotted {allotted:,.0f} MiB")
    if p95 is not None:
        parts.append(
            f'<rect x="0" y="{bar_top + 2}" width="{_n(at(p95))}" height="{bar_h - 4}" '
            f'fill="{USED_COLOUR}"/>'
        )
        tip.append(f"p95 {p95:,.0f} MiB")
    if peak is not None:
        parts.append(
            f'<rect x="{_n(max(at(peak) - 1, 0))}" y="{bar_top - 2}" width="2" '
            f'height="{bar_h + 4}" fill="#0f172a"/>'
        )
        tip.append(f"peak {peak:,.0f} MiB")
    if recommended is not None:
        parts.append(
            f'<line x1="{_n(at(recommended))}" x2="{_n(at(recommended))}" y1="0" '
            f'y2="{height}" stroke="{ALLOTTED_COLOUR}" stroke-width="2" stroke-dasharray="3 2"/>'
        )
        tip.append(f"recommended {recommended:,.0f} MiB")
    parts.append(f"<title>{escape(', '.join(tip))}</title></svg>")
    return "".join(parts)

"""The report's inline SVG charts: axes, ticks, thinning and the edge cases of few points."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from advisor.render.report.svg import (
    cause_bar_chart,
    nice_step,
    sizing_bar,
    thin,
    time_ticks,
    usage_line_chart,
)

DAY_END = datetime(2025, 11, 30, 8, 30, tzinfo=UTC).timestamp()
HOUR_TICKS = [(7, 30), (7, 40), (7, 50), (8, 0), (8, 10), (8, 20), (8, 30)]


@pytest.mark.parametrize(
    ("span", "step"), [(175.0, 50.0), (1.0, 0.2), (9.0, 2.0), (12.0, 2.5), (3000.0, 1000.0)]
)
def test_nice_steps(span: float, step: float) -> None:
    assert nice_step(span) == pytest.approx(step)


def test_a_day_gets_three_hourly_ticks_and_a_date_at_midnight() -> None:
    ticks = time_ticks(DAY_END - 86400, DAY_END)
    labels = [label for _, label in ticks]
    assert labels == ["09:00", "12:00", "15:00", "18:00", "21:00", "11-30", "03:00", "06:00"]
    assert all(t % 10800 == 0 for t, _ in ticks)


def test_a_week_gets_daily_ticks_and_an_hour_finer_ones() -> None:
    assert {label for _, label in time_ticks(DAY_END - 7 * 86400, DAY_END)} >= {"11-24", "11-30"}
    hour = time_ticks(DAY_END - 3600, DAY_END)
    assert [label for _, label in hour] == [f"{h:02}:{m:02}" for h, m in HOUR_TICKS]


def test_thinning_keeps_the_peaks() -> None:
    times = [float(i) for i in range(5000)]
    values = [0.0] * 5000
    values[4321] = 99.0
    kept_times, (kept,) = thin(times, [values], limit=100)
    assert len(kept_times) == len(kept) == 100
    assert max(kept) == 99.0
    assert kept_times[0] == 0.0
    assert kept_times == sorted(kept_times)


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_usage_chart_is_well_formed_svg_with_both_series() -> None:
    times = [DAY_END - 300 * i for i in range(288)][::-1]
    svg = usage_line_chart(times, [100.0] * 288, [40.0 + i / 10 for i in range(288)])
    root = _parse(svg)
    ns = "{http://www.w3.org/2000/svg}"
    lines = {p.get("class"): p.get("points", "") for p in root.iter(f"{ns}polyline")}
    assert len(lines["allotted-line"].split()) == len(lines["used-line"].split()) == 288
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert "GiB" in texts
    assert "100" in texts
    ticks = [float(t) for t in texts if t and t.replace(".", "").isdigit()]
    assert 100 < max(ticks) <= 150  # the top line is not drawn on the frame
    # higher values are drawn higher up: y of the last used point is smaller than the first
    first, last = lines["used-line"].split()[0], lines["used-line"].split()[-1]
    assert float(last.split(",")[1]) < float(first.split(",")[1])


def test_usage_chart_with_one_sample_draws_points() -> None:
    svg = usage_line_chart([DAY_END], [8.0], [0.0])
    root = _parse(svg)
    assert len(list(root.iter("{http://www.w3.org/2000/svg}circle"))) == 2
    assert not re.search(r"\b(nan|inf)\b", svg, re.IGNORECASE)


def test_usage_chart_with_zeros_only() -> None:
    svg = usage_line_chart([DAY_END - 60, DAY_END], [0.0, 0.0], [0.0, 0.0])
    _parse(svg)
    assert not re.search(r"\b(nan|inf)\b", svg, re.IGNORECASE)


def test_cause_bars_scale_by_count_and_escape_labels() -> None:
    svg = cause_bar_chart([("a<b", 4, "#111111"), ("zero", 0, "#222222"), ("c", 2, "#333333")])
    root = _parse(svg)
    assert "a&lt;b" in svg
    bars = re.findall(r'width="([\d.]+)" height="22" rx="4" fill="#(\d{6})"', svg)
    widths = {colour: float(w) for w, colour in bars}
    assert widths["111111"] == pytest.approx(2 * widths["333333"], abs=0.1)
    assert "222222" not in widths  # zero gets no bar, only its count
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == ["a<b", "4", "zero", "0", "c", "2"]


def test_sizing_bar_marks_and_clamps() -> None:
    svg = sizing_bar(1000.0, 500.0, 800.0, 2000.0, scale=1000.0, width=100)
    assert 'width="50"' in svg  # p95 at half the scale
    assert 'x1="100"' in svg  # the recommendation past the scale is clamped to the edge
    assert "recommended 2,000 MiB" in svg
    empty = sizing_bar(None, None, None, None, scale=1.0)
    _parse(empty)


TIME_LABEL = re.compile(r"\d\d:\d\d(:\d\d)?|\d\d-\d\d")


def _time_axis(svg: str) -> tuple[list[tuple[float, str]], list[str]]:
    """The time tick labels with their x, and the axis titles."""
    root = _parse(svg)
    ns = "{http://www.w3.org/2000/svg}"
    labels = [
        (float(t.get("x", "nan")), t.text)
        for t in root.iter(f"{ns}text")
        if t.text and TIME_LABEL.fullmatch(t.text)
    ]
    titles = [t.text or "" for t in root.iter(f"{ns}text") if t.get("class") == "axis-title"]
    return labels, titles


@pytest.mark.parametrize(
    ("span", "every"),
    [(4.0, 1.0), (50.0, 2.0), (600.0, 5.0), (86400.0, 300.0), (7 * 86400.0, 3600.0)],
)
def test_the_time_axis_is_labelled_with_the_samples_utc_times(span: float, every: float) -> None:
    """Each tick label names the UTC time at its place on the axis, read back from where
    the first and last samples are drawn; a few seconds of history (the demo's) is
    labelled too, and the axis says its time zone."""
    count = round(span / every) + 1
    times = [DAY_END - span + every * i for i in range(count)]
    svg = usage_line_chart(times, [10.0] * count, [4.0] * count)
    labels, titles = _time_axis(svg)
    assert "time (UTC)" in titles
    assert len(labels) >= 2, labels
    root = _parse(svg)
    line = next(p for p in root.iter("{http://www.w3.org/2000/svg}polyline"))
    points = line.get("points", "").split()
    x0, x1 = float(points[0].split(",")[0]), float(points[-1].split(",")[0])
    for x, label in labels:
        at = times[0] + (x - x0) / (x1 - x0) * (times[-1] - times[0])
        moment = datetime.fromtimestamp(round(at), UTC)  # coordinates are rounded to 0.1 px
        if label.count(":") == 2:
            want = moment.strftime("%H:%M:%S")
        else:
            moment = datetime.fromtimestamp(round(at / 60) * 60, UTC)
            want = moment.strftime("%m-%d" if "-" in label else "%H:%M")
            assert "-" not in label or (moment.hour, moment.minute) == (0, 0) or span > 86400
        assert label == want, (x, at)
    assert [x for x, _ in labels] == sorted(x for x, _ in labels)

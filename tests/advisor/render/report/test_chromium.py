"""The report page in a real headless Chromium: it paints, the SVG charts draw, and the
rendered DOM holds every Pending pod."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from advisor.render.common.style import CAUSE_COLOURS
from advisor.render.report.html import render_report_html
from advisor.render.report.svg import ALLOTTED_COLOUR, USED_COLOUR
from tests.advisor.chromium import (
    chromium_path,
    decode_png,
    dump_dom,
    hex_rgb,
    pixel_counts,
    screenshot,
)
from tests.advisor.render.sample_report import sample_report

pytestmark = pytest.mark.realservices  # headless Chromium

WIDTH = 1200


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_path()


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return sample_report()


@pytest.fixture(scope="module")
def page(report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_report_html(report), encoding="utf-8")
    return path


def near(counts: Counter[bytes], colour: str, tolerance: int = 6) -> int:
    """Pixels within `tolerance` per channel of `colour` (anti-aliasing shifts lines a bit)."""
    want = hex_rgb(colour)
    return sum(
        n
        for rgb, n in counts.items()
        if all(abs(a - b) <= tolerance for a, b in zip(rgb, want, strict=True))
    )


def test_top_of_the_page_paints_summary_and_cause_chart(
    chromium: str, page: Path, tmp_path: Path
) -> None:
    height = 1100  # header, summary strip and the Pending-by-cause chart
    data = screenshot(chromium, page, tmp_path / "top.png", WIDTH, height)
    width, got_height, rows = decode_png(data)
    assert (width, got_height) == (WIDTH, height)
    counts = pixel_counts(rows)
    _, most = counts.most_common(1)[0]
    assert most < 0.8 * width * height, "the page is mostly one colour"
    assert len(counts) > 500, "too few distinct colours for text, badges and charts"
    # The cause bars: 3 schedulable against 1 of each other cause, ~900 px per 3 pods, 22 px high.
    schedulable = counts[hex_rgb(CAUSE_COLOURS["schedulable"])]
    fragmentation = counts[hex_rgb(CAUSE_COLOURS["fragmentation"])]
    assert schedulable > 15_000, schedulable
    assert fragmentation > 5_000, fragmentation
    assert schedulable > 2 * fragmentation
    # The stale series box is there, in its red.
    assert counts[hex_rgb("#fef2f2")] > 10_000


def test_usage_chart_paints_both_lines(
    chromium: str, report: dict[str, Any], tmp_path: Path
) -> None:
    # Only the usage section filled, so that the chart sits within one screenshot.
    short = {key: report[key] for key in ("schema", "generated_at", "source", "usage")}
    path = tmp_path / "usage.html"
    path.write_text(render_report_html(short), encoding="utf-8")
    data = screenshot(chromium, path, tmp_path / "usage.png", WIDTH, 1600)
    _, _, rows = decode_png(data)
    counts = pixel_counts(rows)
    assert near(counts, ALLOTTED_COLOUR) > 1_500  # a 2.5 px line across ~1000 px
    assert near(counts, USED_COLOUR) > 500  # a jagged 2 px line: fewer exact pixels
    chart_rows = [i for i, row in enumerate(rows) if hex_rgb(ALLOTTED_COLOUR) in row]
    assert chart_rows, "the allotted line is not on screen"


def test_dom_holds_every_pending_pod_and_the_charts(
    chromium: str, report: dict[str, Any], page: Path, tmp_path: Path
) -> None:
    dom = dump_dom(chromium, page, tmp_path / "profile")
    for pod in report["diagnosis"]["pods"]:
        assert pod["pod"] in dom
    assert dom.count('<svg class="chart cause-chart"') == 1
    assert dom.count('<svg class="chart usage-chart"') == 1
    assert dom.count('<svg class="sizing"') == len(report["rightsizing"]["workloads"])
    assert dom.count("<polyline") == 2
    # card bars: 12 cards after the cycle, and the 4 cards plan 1 touches, before and after
    assert dom.count('class="bar"') == 12 + 2 * 4
    assert "Stale series LEFT OUT of the model (1)" in dom

"""The HTML report in a real headless Chromium: it renders, draws the bars, shows every pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.render.common.style import MODE_PALETTES
from advisor.render.diagnose import render_html
from tests.advisor.chromium import (
    chromium_path,
    decode_png,
    hex_rgb,
    pixel_counts,
    run_chromium,
)
from tests.advisor.render.sample_diagnosis import sample_diagnosis, sample_view

pytestmark = pytest.mark.realservices  # headless Chromium

WIDTH, HEIGHT = 1200, 1400  # tall enough to show the first node's bars under the header


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_path()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("render") / "diagnosis.html"
    path.write_text(render_html(sample_diagnosis(), sample_view()), encoding="utf-8")
    return path


def test_screenshot_shows_the_report(chromium: str, page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "diagnosis.png"
    run_chromium(
        chromium,
        tmp_path / "profile",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--screenshot={shot}",
        page.as_uri(),
    )
    data = shot.read_bytes()
    assert len(data) > 50_000  # a blank page of this size compresses to a few KiB
    width, height, rows = decode_png(data)
    assert (width, height) == (WIDTH, HEIGHT)
    counts = pixel_counts(rows)
    _, most = counts.most_common(1)[0]
    assert most < 0.8 * width * height, "the page is mostly one colour"
    assert len(counts) > 500, "too few distinct colours for text, badges and bars"
    # The bars are drawn: solid fills of both isolation modes' colour families.
    memory = sum(counts[hex_rgb(c)] for c in MODE_PALETTES[0])
    memory_core = sum(counts[hex_rgb(c)] for c in MODE_PALETTES[1])
    assert memory > 40_000, memory
    assert memory_core > 20_000, memory_core


def test_dom_contains_every_pod_and_node(chromium: str, page: Path, tmp_path: Path) -> None:
    dom = run_chromium(chromium, tmp_path / "profile", "--dump-dom", page.as_uri()).decode()
    assert dom.count('class="bar"') == 24
    for pod in sample_diagnosis()["pods"]:
        assert pod["pod"] in dom
    for node in sample_view()["nodes"]:
        assert f'id="node-{node["name"]}"' in dom
        for card in node["cards"]:
            for allotment in card["allotments"]:
                assert allotment["pod"] in dom

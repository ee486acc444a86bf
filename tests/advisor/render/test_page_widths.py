"""Every HTML page fits the window at 1024, 1400 and 1920 px in headless Chromium: wide
tables scroll inside their own panel, long names (pods and nodes run to 253 characters)
wrap, and the charts scale, so that the page itself never scrolls sideways."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.demo import DEFAULT_SCENARIO
from advisor.render.diagnose import render_html
from advisor.render.report.html import render_report_html
from tests.advisor.chromium import chromium_path, page_widths
from tests.advisor.render.sample_diagnosis import sample_diagnosis, sample_view
from tests.advisor.render.sample_report import sample_report

pytestmark = pytest.mark.realservices  # headless Chromium

WIDTHS = (1024, 1400, 1920)
LONG_NODE = "gpunode" + "x" * 120  # no break opportunity in it
LONG_POD = "finetune" + "y" * 120


def long_names(tmp: Path) -> Path:
    """The demo's scenario with a node and two pods (one Pending, one a plan's victim) renamed
    to names with nowhere to break."""
    text = DEFAULT_SCENARIO.read_text(encoding="utf-8")
    text = text.replace("a100-node-1", LONG_NODE).replace("ml/finetune-0", f"ml/{LONG_POD}")
    text = re.sub(r"ml/train-a\b", f"ml/train{LONG_POD}", text)
    path = tmp / "long-names.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("pages")
    found = {
        "sample report": tmp / "sample-report.html",
        "sample diagnosis": tmp / "sample-diagnosis.html",
    }
    found["sample report"].write_text(render_report_html(sample_report()), encoding="utf-8")
    found["sample diagnosis"].write_text(
        render_html(sample_diagnosis(), sample_view()), encoding="utf-8"
    )
    for name, scenario in (("demo", DEFAULT_SCENARIO), ("long names", long_names(tmp))):
        for command in ("diagnose", "plan"):
            page = tmp / f"{command}-{name.replace(' ', '-')}.html"
            argv = [command, "--scenario", str(scenario), "--format", "html", "--output"]
            assert main([*argv, str(page)]) == 0
            found[f"{command} {name}"] = page
        home = tmp / f"home-{name.replace(' ', '-')}"
        assert main(["report", "--scenario", str(scenario), "--reports", str(home)]) == 0
        (run,) = home.glob("2*/report.html")
        found[f"report {name}"], found[f"index {name}"] = run, home / "index.html"
    assert LONG_NODE in found["report long names"].read_text(encoding="utf-8")
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways(pages: dict[str, Path], width: int, tmp_path: Path) -> None:
    chromium = chromium_path()
    wide = {}
    for name, page in pages.items():
        scroll, viewport = page_widths(chromium, page, width, tmp_path / name.replace(" ", "-"))
        assert viewport == width
        if scroll > viewport:
            wide[name] = scroll
    assert wide == {}, f"pages wider than the {width} px window"

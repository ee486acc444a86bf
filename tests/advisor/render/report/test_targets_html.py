"""The report page's "Autoscaler targets" table (docs/design.md §12.2): a row per target from
history, in the parts of the Markdown's line; none, nor a link to it, where the report has
none; remote text (names, metrics, reasons, notes) escaped; read back from the page and from
headless Chromium's DOM."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from tests.advisor.chromium import chromium_path, dump_dom, page_widths
from tests.advisor.render.sample_report import sample_report
from tests.advisor.test_hpatargets import CORE, DAY, history, hpa, report_of, rows

HEAD = ["Autoscaler", "Metric", "Advice", "What the HPA saw", "History", "Confidence"]
LONG = "web/infer" + "x" * 120  # an HPA's name with nowhere to break
HOSTILE = "<script>alert(1)</script></td></tr><b>x"


class Targets(HTMLParser):
    """The elements after the heading with id="targets" (name and attribute names), and the
    cell texts of each row of its table."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = False
        self.elements: list[tuple[str, tuple[str, ...]]] = []
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "footer":
            self.inside = False
        if not self.inside:
            self.inside = tag == "h2" and ("id", "targets") in attrs
            return
        self.elements.append((tag, tuple(name for name, _ in attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in {"td", "th"}:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if self.inside and tag in {"td", "th"} and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def targets(page: str) -> Targets:
    parser = Targets()
    parser.feed(page)
    return parser


def target(name: str, **more: Any) -> dict[str, Any]:
    """A target as the report's JSON holds it: advised, unless `more` says otherwise."""
    return {
        "name": name,
        "target": "Deployment/web/infer",
        "metric": CORE,
        "status": "advised",
        "reason": None,
        "current": {"target_average": 60.0, "max_replicas": 4, "min_replicas": 1},
        "recommended": {"target_average": 35.0, "max_replicas": 2},
        "confidence": {"level": "medium", "why": ["the replicas moved"]},
        "notes": ["max_replicas is capped by what the cluster places"],
        "observed": None,
        "reachable_replicas": 2,
        "evidence": {
            "first": 0.0,
            "last": 86_100.0,
            "window_seconds": 86_400.0,
            "window": "24 h",
            "step_seconds": 300.0,
            "samples": DAY,
        },
        **more,
    }


def with_targets(*entries: dict[str, Any]) -> dict[str, Any]:
    report = sample_report()
    assert "autoscaler_targets" not in report  # the sample's cluster has no autoscaler
    return {**report, "autoscaler_targets": list(entries)}


STATES = with_targets(
    target(LONG),
    target("web/short-hpa", status="not-advised", reason="not enough history", recommended=None),
    target("web/mem-hpa", status="not-applicable", reason="no exporter metric", metric=None),
)


def test_the_report_page_has_a_row_per_target_in_the_markdown_s_words() -> None:
    frame = history(rows("infer-1", [30.0] * DAY), rows("infer-2", [30.0] * DAY))
    data = report_of(frame, hpa())
    found = targets(render_report_html(data)).rows
    assert found == [
        HEAD,
        [
            "web/infer-hpa",
            CORE,
            "target_average 60 % → 35 %, max_replicas 4 → 2",
            "30 % at p95 (peak 30 %) over 2–2 replicas",
            "24 h, 288 samples",
            "high",
        ],
    ]
    line = (
        "- web/infer-hpa on xgpu_core_percentage_used: target_average 60 % → 35 %, max_replicas "
        "4 → 2; the HPA saw 30 % at p95 (peak 30 %) over 2–2 replicas; 24 h, 288 samples; "
        "confidence high\n"
    )
    assert line in render_report_markdown(data)


def test_each_state_reads_as_in_the_markdown() -> None:
    page = render_report_html(STATES)
    notes = "Max_replicas is capped by what the cluster places"
    history_cell = "24 h, 288 samples"
    medium = "medium (the replicas moved)"
    # the notes under the advice, in its cell; without advice only why, as in the Markdown
    assert targets(page).rows[1:] == [
        [
            LONG,
            CORE,
            f"target_average 60 % → 35 %, max_replicas 4 → 2{notes}",
            "",
            history_cell,
            medium,
        ],
        ["web/short-hpa", CORE, "not advised: not enough history", "", "", ""],
        ["web/mem-hpa", "", "not applicable: no exporter metric", "", "", ""],
    ]
    markdown = render_report_markdown(STATES)
    assert f"{history_cell}; confidence {medium}. {notes}\n" in markdown
    assert "- web/short-hpa on xgpu_core_percentage_used: not advised: not enough history\n" in (
        markdown
    )
    assert "- web/mem-hpa: not applicable: no exporter metric\n" in markdown
    # after right-sizing, as in the Markdown, and linked from the contents
    assert page.index('id="rightsizing"') < page.index('id="targets"') < page.index("<footer")
    assert '<a href="#targets">Autoscaler targets</a>' in page


def test_no_targets_no_section_and_no_link() -> None:
    page = render_report_html(sample_report())
    assert 'id="targets"' not in page
    assert "Autoscaler targets" not in page
    assert "Autoscaler targets" not in render_report_markdown(sample_report())


def test_remote_text_stays_text() -> None:
    """A hostile name, metric, reason, note and confidence reason: the same elements as plain
    ones, each shown as written."""
    pages = []
    for suffix in ("-plain", HOSTILE):
        report = with_targets(
            target(
                f"web/a{suffix}",
                metric=CORE + suffix,
                notes=[f"note{suffix}"],
                confidence={"level": f"low{suffix}", "why": [f"why{suffix}"]},
            ),
            target(
                f"web/b{suffix}",
                status="not-advised",
                reason=f"r{suffix}",
                recommended=None,
                notes=[],
            ),
        )
        pages.append(targets(render_report_html(report)))
    plain, hostile = pages
    assert hostile.elements == plain.elements
    cells = [cell for row in hostile.rows for cell in row]
    assert f"web/a{HOSTILE}" in cells
    assert f"{CORE}{HOSTILE}" in cells
    assert f"low{HOSTILE} (why{HOSTILE})" in cells
    assert f"not advised: r{HOSTILE}" in cells
    assert any(cell.endswith(f"Note{HOSTILE}") for cell in cells)


@pytest.mark.realservices  # headless Chromium
def test_chromium_reads_the_table_and_the_long_name_wraps(tmp_path: Path) -> None:
    chromium = chromium_path()
    page = tmp_path / "report.html"
    page.write_text(render_report_html(json.loads(json.dumps(STATES))))
    dom = dump_dom(chromium, page, tmp_path / "dom")
    assert targets(dom).rows == targets(page.read_text()).rows
    assert [row[0] for row in targets(dom).rows] == [
        "Autoscaler",
        LONG,
        "web/short-hpa",
        "web/mem-hpa",
    ]
    for window in (1024, 1400):  # a 130-character name wraps: no sideways scroll
        scroll, viewport = page_widths(chromium, page, window, tmp_path / f"width-{window}")
        assert scroll <= viewport == window, (scroll, window)

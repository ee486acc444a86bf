"""The Autoscalers table of the HTML pages (docs/design.md §12.2): the report's, beside its
Pending pods, and the diagnosis page's, from the same JSON the Markdown words; one row per
autoscaler in each of its states, read back from the page and from headless Chromium's DOM."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.render.common.style import CAUSE_COLOURS
from advisor.render.plan.room import ROOM_LEAD, room_lines
from advisor.render.report.html import render_report_html
from advisor.render.report.read import read_report
from tests.advisor.chromium import chromium_path, dump_dom, page_widths
from tests.advisor.render.sample_report import sample_report

LONG = "infer" + "x" * 120  # a Deployment name with nowhere to break


def hpa(name: str, target: str, replicas: int, most: int) -> dict[str, Any]:
    return {"name": name, "target": target, "max_replicas": most, "replicas": replicas}


SCENARIO: dict[str, Any] = {
    "nodes": [{"name": "n1", "cards": [{"index": i, "memory_mib": 16384} for i in range(2)]}],
    "pods": [
        {
            "name": "web/infer-0",
            "node": "n1",
            "cards": [0],
            "request": {"gpus": 1, "memory_mib": 8192},
            "owner": "ReplicaSet/web/infer-7d9f8",
        },
        {
            "name": "web/small-0",
            "node": "n1",
            "cards": [1],
            "request": {"gpus": 1, "memory_mib": 1024},
            "owner": f"Deployment/web/{LONG}",
        },
    ],
    "autoscalers": [
        hpa("web/infer-hpa", "Deployment/web/infer", 1, 5),  # 8 + 15 GiB free: 2 of 4 place
        hpa("web/small-hpa", f"Deployment/web/{LONG}", 1, 3),  # 1 GiB each: both place
        hpa("web/full-hpa", "Deployment/web/infer", 5, 5),  # at max: none to add
        hpa("web/lost-hpa", "Deployment/web/gone", 1, 3),  # no running pod to copy
    ],
}
SUMMARY = "0/1 nodes are unavailable: 1 card-memory."
ROWS = [
    ["web/infer-hpa", "Deployment/web/infer", "1", "5", "2 of 4", "capacity", SUMMARY],
    ["web/small-hpa", f"Deployment/web/{LONG}", "1", "3", "2 of 2", "reachable", ""],
    ["web/full-hpa", "Deployment/web/infer", "5", "5", "none to add", "reachable", ""],
    [
        "web/lost-hpa",
        "Deployment/web/gone",
        "1",
        "3",
        "?",
        "unknown-template",
        "no running pod to copy a replica from",
    ],
]


class Table(HTMLParser):
    """The cell texts of each row of the element with id="autoscalers"; a row of what would
    make room (class "room") as its lead and its items, apart."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # sections open since the autoscalers' one (0: outside it)
        self.rows: list[list[str]] = []
        self.rooms: dict[int, list[str]] = {}  # by the index of the row it is under
        self.room: list[str] | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += tag == "section"
            if tag == "tr" and ("class", "room") in attrs:
                self.room = self.rooms.setdefault(len(self.rows) - 2, [""])  # the head row
            elif tag == "tr":
                self.rows.append([])
                self.room = None
            elif tag == "td" and self.room is None:
                self.cell = []
            elif tag == "li" and self.room is not None:
                self.room.append("")
        elif tag == "section" and ("id", "autoscalers") in attrs:
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if not self.depth:
            return
        if tag == "td" and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None
        self.depth -= tag == "section"

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        elif self.room is not None:
            self.room[-1] += data


def parsed(page: str) -> Table:
    parser = Table()
    parser.feed(page)
    return parser


def table_rows(page: str) -> list[list[str]]:
    return [row for row in parsed(page).rows if row]  # the head row has no td


def room_rows(page: str) -> dict[int, list[str]]:
    """What would make room, by the index (in table_rows) of the autoscaler it is under:
    the lead, then a sentence each."""
    return parsed(page).rooms


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.json, report.html and diagnose.html of the scenario, as the commands write them."""
    out = tmp_path_factory.mktemp("autoscalers")
    scenario = out / "s.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    assert main(["report", "--scenario", str(scenario), "--output-dir", str(out)]) == 0
    page = out / "diagnose.html"
    argv = ["diagnose", "--scenario", str(scenario), "--format", "html", "--output", str(page)]
    assert main(argv) == 0
    return out


def test_the_report_page_has_a_row_per_autoscaler(written: Path) -> None:
    page = (written / "report.html").read_text()
    assert table_rows(page) == ROWS
    # beside the Pending pods, before the cards
    assert page.index('id="pending"') < page.index('id="autoscalers"') < page.index('id="cards"')
    # the JSON says the same: one decision, read by both pages
    listed = json.loads((written / "report.json").read_text())["diagnosis"]["autoscalers"]
    assert [a["name"] for a in listed] == [row[0] for row in ROWS]
    assert [a["placeable"] for a in listed] == [2, 2, 0, None]


def test_a_blocked_autoscaler_is_tagged_in_its_cause_s_colour(written: Path) -> None:
    page = (written / "report.html").read_text()
    section = page[page.index('id="autoscalers"') : page.index('id="cards"')]
    tags = re.findall(
        r'<span class="tag" style="background:(#[0-9a-f]{6})">([^<]+)</span>', section
    )
    assert tags[0] == (CAUSE_COLOURS["capacity"], "capacity")
    assert [text for _, text in tags] == [row[5] for row in ROWS]


def test_the_diagnosis_page_has_the_same_table(written: Path) -> None:
    assert table_rows((written / "diagnose.html").read_text()) == ROWS


def room_of(written: Path) -> list[str]:
    """What would make room for web/infer-hpa's replicas, as the JSON report's sentences."""
    report = read_report(json.loads((written / "report.json").read_text()))
    (blocked,) = [a for a in report["diagnosis"]["autoscalers"] if a.get("remedy")]
    assert blocked["name"] == "web/infer-hpa"
    remedy = blocked.get("remedy")
    assert remedy is not None
    return [ROOM_LEAD, *room_lines(remedy)]


def test_under_the_blocked_autoscaler_what_would_make_room(written: Path) -> None:
    room = room_of(written)
    # its two replicas that do not place: capacity, and the scale-up that takes them
    assert room[1] == "Capacity, scale up: web/infer (replica 4), web/infer (replica 5)."
    assert room[2].startswith("Scale up: 1 node of 2 × 16,384 MiB cards")
    for name in ("report.html", "diagnose.html"):
        page = (written / name).read_text()
        assert room_rows(page) == {0: room}, name  # under web/infer-hpa's row, and no other
        assert table_rows(page) == ROWS, name
    # the Markdown says the same sentences under the same autoscaler
    markdown = (written / "report.md").read_text()
    at = markdown.index("- web/infer-hpa (")
    for line in room:
        assert line in markdown[at : markdown.index("- web/small-hpa (")]


def test_no_remedy_no_room_row(written: Path) -> None:
    raw = json.loads((written / "report.json").read_text())
    for autoscaler in raw["diagnosis"]["autoscalers"]:
        autoscaler.pop("remedy", None)
    page = render_report_html(raw)
    assert room_rows(page) == {}
    assert table_rows(page) == ROWS
    assert 'class="led"' not in page


def test_no_autoscalers_no_table() -> None:
    report = sample_report()
    assert "autoscalers" not in report["diagnosis"]  # the sample lists none
    page = render_report_html(report)
    assert 'id="autoscalers"' not in page
    assert "Autoscalers" not in page


@pytest.mark.realservices  # headless Chromium
def test_chromium_reads_the_table_and_the_long_target_wraps(written: Path, tmp_path: Path) -> None:
    chromium = chromium_path()
    for name in ("report.html", "diagnose.html"):
        dom = dump_dom(chromium, written / name, tmp_path / f"dom-{name}")
        assert table_rows(dom) == ROWS, name
        assert room_rows(dom) == {0: room_of(written)}, name
        for window in (1024, 1400):  # a 130-character target wraps: no sideways scroll
            scroll, viewport = page_widths(
                chromium, written / name, window, tmp_path / f"width-{name}-{window}"
            )
            assert scroll <= viewport == window, (name, scroll, window)

"""The report renderers on hostile names, missing or null sections and junk values: every
value escaped, a short note for what is missing, never an exception."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from advisor.render.report.data import MAX_DRAWN_NODES
from advisor.render.report.findings import NO_HISTORY
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from tests.advisor.render.sample_report import sample_report

HOSTILE_POD = "x/<img src=x onerror=alert(1)>\"'|*b*`c`[d](e)"
HOSTILE_NODE = "n<script>alert(2)</script>|"
HOSTILE_TEXT = "<b onclick=alert(3)>|bold|</b>\nnext line"

# Every tag the page may contain: ours, and the SVG charts'.
ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "main",
    "header",
    "footer",
    "nav",
    "section",
    "aside",
    "div",
    "span",
    "p",
    "h1",
    "h2",
    "h3",
    "strong",
    "b",
    "i",
    "a",
    "ul",
    "li",
    "code",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "details",
    "summary",
    "br",
    "dl",
    "dt",
    "dd",
    "svg",
    "g",
    "rect",
    "line",
    "text",
    "polyline",
    "polygon",
    "circle",
}


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    return sample_report()


def _hostile(report: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(report)
    for plain, nasty in (("web/infer-2", HOSTILE_POD), ("t4-spare", HOSTILE_NODE)):
        text = text.replace(plain, json.dumps(nasty)[1:-1])
    hostile: dict[str, Any] = json.loads(text)
    hostile["source"] = HOSTILE_TEXT
    hostile["warnings"] = [HOSTILE_TEXT]
    hostile["stale"] = [{"subject": HOSTILE_TEXT, "metric": HOSTILE_TEXT, "age_s": 5}]
    hostile["rightsizing"]["workloads"][0]["workload"] = HOSTILE_TEXT
    return hostile


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def test_html_escapes_every_value(sample: dict[str, Any]) -> None:
    page = render_report_html(_hostile(sample), title=HOSTILE_TEXT)
    parser = _Tags()
    parser.feed(page)
    assert parser.tags <= ALLOWED_TAGS, parser.tags - ALLOWED_TAGS
    assert not [a for a in parser.attributes if a.startswith("on")]
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "n&lt;script&gt;alert(2)&lt;/script&gt;|" in page
    assert page.count("&lt;b onclick=alert(3)&gt;") >= 5  # title, source, warning, stale, sizing
    # the plan still rescues the (renamed) pod, and its picture still shows it
    plans = page[page.index('id="plans"') : page.index('id="scaling"')]
    assert plans.count("x/&lt;img src=x onerror=alert(1)&gt;") >= 3


def _tables(text: str) -> list[list[str]]:
    tables: list[list[str]] = []
    fenced = False
    previous = ""
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    return tables


def test_markdown_escapes_every_value(sample: dict[str, Any]) -> None:
    text = render_report_markdown(_hostile(sample), title=HOSTILE_TEXT)
    tables = _tables(text)
    assert len(tables) >= 10
    for table in tables:
        widths = {re.sub(r"\\.", "", row).count("|") for row in table}
        assert len(widths) == 1, table  # an unescaped | would add a column
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    assert not re.search(r"(?<!\\)<(img|script|b )", prose)  # only as \<img, \<script
    assert r"x/\<img src=x onerror=alert(1)\>" in prose
    # a newline in a name neither breaks a table row nor starts a line of its own
    assert "\nnext line" not in text


def test_kubectl_commands_stay_one_line_per_eviction(sample: dict[str, Any]) -> None:
    report = json.loads(json.dumps(sample).replace("ml/train-a", "ml/train-a\\nrm -rf /"))
    report["plan"]["plans"][0]["placements"]["ml/train-a\nrm -rf /"]["node"] = "x\nreboot"
    text, page = render_report_markdown(report), render_report_html(report)
    scripts = [
        text.split("```sh\n", 1)[1].split("```", 1)[0],
        html.unescape(page.split('<pre class="cmds">', 1)[1].split("</pre>", 1)[0]),
    ]
    for script in scripts:
        lines = [line for line in script.splitlines() if line]
        assert [line for line in lines if line.startswith("kubectl")] == []
        assert "# not a Kubernetes pod name, left out: ml/train-a?rm -rf /" in lines
        assert all(line.startswith(("#", "kubectl ", "set -e")) for line in lines), lines


NOTES = {
    "diagnosis": "No diagnosis in this report.",
    "view": "No nodes in this report.",
    "plan": "No plan data in this report.",
    "fragmentation": "No fragmentation figures in this report.",
    "usage": NO_HISTORY,
    "rightsizing": "No history: right-sizing needs usage series.",
}


@pytest.mark.parametrize("key", sorted(NOTES))
@pytest.mark.parametrize("value", [None, "junk", 7, [], "missing"])
def test_a_missing_section_gets_a_note(sample: dict[str, Any], key: str, value: object) -> None:
    report = dict(sample)
    if value == "missing":
        del report[key]
    else:
        report[key] = value
    page, text = render_report_html(report), render_report_markdown(report)
    note = NOTES[key]
    assert note.replace("'", "&#x27;") in page
    assert note in text
    assert "</html>" in page


def test_an_empty_report_renders() -> None:
    page, text = render_report_html({}), render_report_markdown({})
    for note in NOTES.values():
        assert note in text
    assert "Generated ? · source ?" in text
    assert "Generated ? · source" in page
    assert "Rescuable by plans: ?" in text
    assert "Pending GPU pods: ?" in text
    assert "policy" not in text  # not said, so not guessed
    assert text.count("No plan data in this report.") == 3  # summary, plans and scaling
    assert "Headroom: ?" in text


def test_junk_inside_sections_renders(sample: dict[str, Any]) -> None:
    report = dict(sample)
    report["warnings"] = "not a list"
    report["stale"] = ["a bare string", None, {"age_s": "old", "ended": True}]
    report["generated_at"] = "yesterday"
    report["run"] = {"duration_seconds": float("nan")}
    report["plan"] = {
        "plans": [None, 5, {"rescues": "x", "evict": [None], "placements": {"a": 3}}],
        "summary": {"pending": "many", "rescued_share": "lots"},
        "scale_up": [{"shape": None, "for": "x"}],
        "scale_down": [{"moves": [1, 2], "also_moves": 7}, {"also_moves": [None, "<b>"]}],
    }
    report["usage"] = {"timestamps": [3, "x", 1, None], "allotted_bytes": [1, 2, 2**30, 4]}
    report["rightsizing"] = {"workloads": [None, {"memory_mib": "x", "overcommit": 5}]}
    report["fragmentation"] = {"ratio": "high", "nodes": [None], "shapes": [{"gpus": "2"}]}
    report["headroom"] = {"spare_gpus": None}
    page, text = render_report_html(report), render_report_markdown(report)
    assert "Generated yesterday" in page
    assert "run ? ·" in text
    assert "a bare string" in page
    assert "series ended ? ago" in text
    assert NO_HISTORY in text  # the usage series were too broken to pair up
    assert "Plan 3: 0 evictions" in page
    assert "&lt;b&gt;" in page
    assert "<b>" not in page.split('id="scaling"')[1].split('id="fragmentation"')[0]


def test_many_nodes_draw_the_named_ones_first(sample: dict[str, Any]) -> None:
    report = dict(sample)
    extra = [
        {"name": f"idle-{i:03}", "cards": [{"index": 0, "memory_mib": 16384}]} for i in range(60)
    ]
    report["view"] = {"nodes": extra + list(sample["view"]["nodes"])}
    page, text = render_report_html(report), render_report_markdown(report)
    cards = page[page.index('id="cards"') : page.index('id="plans"')]
    assert cards.count('class="panel node"') == MAX_DRAWN_NODES
    assert 'id="node-a100-node-1"' in cards
    assert 'id="node-t4-spare"' in cards
    assert 'id="node-idle-000"' in cards
    assert 'id="node-idle-059"' not in cards
    assert "26 more nodes not drawn" in cards
    assert "26 more nodes not listed" in text

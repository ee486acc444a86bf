"""Scale-down advice in the plan and report renderings: the other pods that would move too,
"none" when the node has none, "not known" when the source did not say."""

from __future__ import annotations

from typing import Any

from advisor.core.scaling import scale_down
from advisor.render.plan_html import render_plan_html
from advisor.render.plan_markdown import render_plan_markdown
from advisor.render.report_html import render_report_html
from advisor.render.report_markdown import render_report_markdown
from advisor.render.report_sample import sample_report
from tests.advisor.core.scenario_dicts import build, node, running

ALSO = "Other pods, also moved (not simulated)"
MARKDOWN_CELL = "web/api, web/\\<i\\>x\\</i\\>\\|y"


def idle_nodes() -> dict[str, Any]:
    """a, b, c idle and able to go (their pods move to busy); a and b have other pods known."""
    a, b, c = node("a", 16), node("b", 16), node("c", 16)
    a["other_pods"] = [{"name": "web/api"}, {"name": "web/<i>x</i>|y"}]
    b["other_pods"] = []
    cluster = build(
        [a, b, c, node("busy", 16, 16, 16)],
        [
            running("t/a", "a", [0], 1),
            running("t/b", "b", [0], 2),
            running("t/c", "c", [0], 3),
            running("t/busy", "busy", [0, 1, 2], 36),
        ],
    )
    steps = scale_down(cluster, threshold=0.5)
    assert [s.node for s in steps] == ["a", "b", "c"]  # guards the fixture
    return {"plans": [], "summary": {}, "scale_down": [s.json() for s in steps]}


def rows(text: str, first: str) -> dict[str, list[str]]:
    """The Markdown table that starts at the header line whose first cell is `first`."""
    lines = [*text[text.index(f"| {first} |") :].splitlines(), ""]
    table = lines[: lines.index("")]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table]
    return {r[0]: r[1:] for r in cells if r[0] != "---"}


def test_plan_markdown_lists_the_other_pods_of_each_node() -> None:
    text = render_plan_markdown(idle_nodes(), [])
    assert "## Nodes that could go" in text
    table = rows(text, "Node")
    assert table["Node"] == ["Utilisation", "Its pods would move to", ALSO]
    assert table["a"][2] == MARKDOWN_CELL  # the name's pipe and tags are escaped
    assert table["b"][2] == "none"
    assert table["c"][2] == "not known"
    assert table["a"][1].startswith("t/a → busy")


def test_plan_html_lists_them_escaped() -> None:
    page = render_plan_html(idle_nodes(), [])
    panel = page[page.index("<h3>Nodes that could go</h3>") :]
    assert f"<th>{ALSO}</th>" in panel
    assert "web/&lt;i&gt;x&lt;/i&gt;|y" in panel
    assert "<i>" not in page
    assert '<span class="mono">not known</span>' in panel


def test_no_column_when_no_node_knows_its_other_pods() -> None:
    data = idle_nodes()
    for entry in data["scale_down"]:
        entry.pop("also_moves", None)
    text = render_plan_markdown(data, [])
    assert rows(text, "Node")["Node"] == ["Utilisation", "Its pods would move to"]
    assert ALSO not in render_plan_html(data, [])


def test_plans_without_scale_down_show_no_section() -> None:
    data = {"plans": [], "summary": {}, "scale_down": []}
    assert "Nodes that could go" not in render_plan_markdown(data, [])
    assert "Nodes that could go" not in render_plan_html(data, [])


def test_report_renders_the_same_cells() -> None:
    report = sample_report()
    report["plan"]["scale_down"] = idle_nodes()["scale_down"]
    text = render_report_markdown(report)
    scaling = text[text.index("### Scale down") :]
    table = rows(scaling, "Node")
    assert [table[n][2] for n in "abc"] == [MARKDOWN_CELL, "none", "not known"]
    page = render_report_html(report)
    section = page[page.index('id="scaling"') : page.index('id="fragmentation"')]
    assert "web/&lt;i&gt;x&lt;/i&gt;|y" in section
    assert section.count('<span class="mono">none</span>') == 1

"""Scale-down advice in the plan and report renderings: the other pods that would move too,
"none" when the node has none, "not known" when the source did not say; and the idle nodes
kept, each with its reason."""

from __future__ import annotations

from typing import Any

from advisor.core.plan import PlanOptions, plan
from advisor.core.scaling.down import HeldNode, ScaleDownAdvice, scale_down, scale_down_advice
from advisor.output.plan import MAX_HELD_LISTED, plan_json
from advisor.output.scaling import scale_down_json
from advisor.render.plan.html import render_plan_html
from advisor.render.plan.markdown import render_plan_markdown
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.schemas import PlanJson
from tests.advisor.core.scenario_dicts import build, node, running
from tests.advisor.render.sample_report import sample_report

ALSO = "Other pods, also moved"
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
    return {"plans": [], "summary": {}, "scale_down": [scale_down_json(s) for s in steps]}


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
    data: dict[str, Any] = {"plans": [], "summary": {}, "scale_down": []}
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


# -- idle nodes kept, and why ------------------------------------------------------------------

HOSTILE_NODE = "n<b>|1"
HOSTILE_DETAIL = "web/<i>x</i>|y: local storage: volume *d*"


def kept_nodes() -> PlanJson:
    """The plan JSON for a cluster whose idle nodes all stay: `pinned` runs a kube-system
    pod, `blocked` has an other pod that blocks; then a hostile-named entry, as a report
    file may hold one."""
    blocked = node("blocked", 16)
    blocked["other_pods"] = [{"name": "web/db", "blocks": "not replicated"}]
    cluster = build(
        [node("pinned", 16), blocked, node("busy", 16)],
        [
            running("kube-system/probe", "pinned", [0], 1),
            running("t/b", "blocked", [0], 2),
            running("t/busy", "busy", [0], 15),
        ],
    )
    empty = plan(cluster, PlanOptions(time_budget_s=5), clock=lambda: 0.0)
    data = plan_json(empty, cluster, (), scale_down_advice(cluster, threshold=0.5))
    assert data["scale_down"] == []  # guards the fixture
    data["scale_down_held"].append(
        {
            "node": HOSTILE_NODE,
            "utilisation": 0.4,
            "reason": "blocked-by-pod",
            "detail": HOSTILE_DETAIL,
        }
    )
    return data


def test_plan_json_lists_each_kept_node_with_its_reason() -> None:
    data = kept_nodes()
    assert data["scale_down_held"][:2] == [
        {
            "node": "pinned",
            "utilisation": 0.0625,
            "reason": "gpu-pod-not-movable",
            "detail": "kube-system/probe: kube-system pod",
        },
        {
            "node": "blocked",
            "utilisation": 0.125,
            "reason": "blocked-by-pod",
            "detail": "web/db: not replicated",
        },
    ]
    assert data["scale_down_held_omitted"] == 0


def test_plan_json_lists_the_least_utilised_and_counts_the_rest() -> None:
    cluster = build([node("n", 16)], [])
    empty = plan(cluster, PlanOptions(time_budget_s=5), clock=lambda: 0.0)
    held = [
        HeldNode(f"n{i:03}", i / 1000, "blocked-by-pod", "x") for i in range(MAX_HELD_LISTED + 3)
    ]
    data = plan_json(empty, cluster, (), ScaleDownAdvice((), tuple(held)))
    assert [h["node"] for h in data["scale_down_held"]] == [h.node for h in held[:MAX_HELD_LISTED]]
    assert data["scale_down_held_omitted"] == 3
    assert plan_json(empty, cluster)["scale_down_held"] == []  # no advice: none listed
    text, page = render_plan_markdown(data, []), render_plan_html(data, [])
    assert "_3 more idle nodes kept, not listed (only the least utilised are)._" in text
    assert "3 more idle nodes kept, not listed" in page
    assert text.count("| blocked-by-pod |") == MAX_HELD_LISTED


def test_plan_markdown_shows_the_kept_nodes_even_when_none_can_go() -> None:
    text = render_plan_markdown(kept_nodes(), [])
    section = text[text.index("## Nodes that could go") :]
    assert "None: no node below the threshold can be emptied." in section
    kept = rows(section[section.index("**Idle nodes kept, and why**") :], "Node")
    assert kept["Node"] == ["Utilisation", "Reason", "Detail"]
    assert kept["pinned"] == ["6.2%", "gpu-pod-not-movable", "kube-system/probe: kube-system pod"]
    assert kept["n\\<b\\>\\|1"] == [
        "40.0%",
        "blocked-by-pod",
        "web/\\<i\\>x\\</i\\>\\|y: local storage: volume \\*d\\*",
    ]
    assert "Its pods would move to" not in section


def test_plan_html_shows_them_escaped() -> None:
    page = render_plan_html(kept_nodes(), [])
    panel = page[page.index("<h3>Nodes that could go</h3>") :]
    assert "None: no node below the threshold can be emptied." in panel
    assert "<h3>Idle nodes kept, and why</h3>" in panel
    assert '<span class="mono">n&lt;b&gt;|1</span>' in panel
    assert "web/&lt;i&gt;x&lt;/i&gt;|y: local storage: volume *d*" in panel
    assert "n<b>" not in page
    assert "<i>" not in page


def test_no_kept_nodes_no_table() -> None:
    data = idle_nodes()
    assert "Idle nodes kept" not in render_plan_markdown(data, [])
    assert "Idle nodes kept" not in render_plan_html(data, [])
    data["scale_down_held"] = []
    assert "Idle nodes kept" not in render_plan_markdown(data, [])


def test_report_shows_the_kept_nodes_under_the_scale_down_table() -> None:
    report = sample_report()
    assert [h["node"] for h in report["plan"]["scale_down_held"]] == ["t4-broken"]
    text = render_report_markdown(report)
    scaling = text[text.index("### Scale down") : text.index("## Fragmentation")]
    assert scaling.index("| t4-idle |") < scaling.index("**Idle nodes kept, and why**")
    kept = rows(scaling[scaling.index("**Idle nodes kept") :], "Node")
    assert kept["t4-broken"] == [
        "0.0%",
        "blocked-by-pod",
        "ml/cache: local storage: volume scratch",
    ]
    report["plan"]["scale_down_held"] = kept_nodes()["scale_down_held"]
    page = render_report_html(report)
    section = page[page.index('id="scaling"') : page.index('id="fragmentation"')]
    assert section.index("<h3>Scale down</h3>") < section.index("<h3>Idle nodes kept, and why</h3>")
    assert '<span class="mono">n&lt;b&gt;|1</span>' in section
    assert "web/&lt;i&gt;x&lt;/i&gt;|y" in section

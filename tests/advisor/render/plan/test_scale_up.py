"""Scale-up advice in the plan and report renderings: a node template shows its allocatable,
labels and taints; pods that no template admits are listed with the autoscaler's reason
(their selector, or more cpu than any template has), not silently dropped."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.render.plan.html import render_plan_html
from advisor.render.plan.markdown import render_plan_markdown
from advisor.render.plan.read import read_shape
from advisor.render.plan.scaling import shape_text
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.report import ReportInputs, ReportOptions, build_report
from advisor.scenario import scenario_from_data

TOLERATES = [{"key": "gpu", "operator": "Exists"}]


def _text(shape: dict[str, Any]) -> str:
    """The template as a report file holds it, read as the pages read it, then worded."""
    return shape_text(read_shape(shape))


def gpu_pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": 1, "memory_mib": 4096}, **extra}


# One node, full; its template is the only one a new node could copy.
SCENARIO: dict[str, Any] = {
    "nodes": [
        {
            "name": "n1",
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": 110},
            "labels": {"pool": "a"},
            "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            "cards": [{"index": 0, "memory_mib": 16384}],
        }
    ],
    "pods": [
        {"name": "a/run", "node": "n1", "cards": [0], "request": {"gpus": 1, "memory_mib": 16384}},
        gpu_pod("a/wants-b", node_selector={"pool": "b"}),  # a pool no node group has
        gpu_pod("a/big-cpu", resources={"cpu": "16"}, tolerations=TOLERATES),  # over 8 cores
        gpu_pod("a/fits-new", tolerations=TOLERATES),  # a new n1 would take it
    ],
}
TEMPLATE = (
    "1 × 16,384 MiB card, any model; cpu 8, memory 32Gi, pods 110; labels pool=a; "
    "taint gpu=yes:NoSchedule"
)
NOT_TRIGGERED = "pod didn't trigger scale-up (it wouldn't fit if a new node is added): "
SELECTOR = "1 node(s) didn't match Pod's node affinity/selector"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    cluster = scenario_from_data(SCENARIO, "scale-up.yaml")
    data: dict[str, Any] = build_report(
        ReportInputs(cluster, "scenario", 0.0), ReportOptions(time_budget_s=5), lambda: 0.0
    ).data
    plan = data["plan"]
    # guards the fixture: one template, for the one pod it can take; two it cannot
    assert [u["for"] for u in plan["scale_up"]] == [["a/fits-new"]]
    assert [n["pod"] for n in plan["scale_up_not_triggered"]] == ["a/wants-b", "a/big-cpu"]
    return data


def test_a_template_names_its_allocatable_labels_and_taints() -> None:
    shape = {
        "cards": 1,
        "memory_mib": 16384,
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": 110},
        "labels": {"pool": "a"},
        "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
    }
    assert _text(shape) == TEMPLATE
    # a GPU-only template reads as it always did; odd values are left out
    assert _text({"cards": 2, "memory_mib": 1024, "model": "T4"}) == "2 × 1,024 MiB cards, T4"
    odd = {"cards": 1, "memory_mib": 1024, "allocatable": {"cpu": True, "pods": None}}
    assert _text(odd) == "1 × 1,024 MiB card, any model"
    keyless = {"cards": 1, "memory_mib": 1024, "taints": [{"effect": "NoExecute"}]}
    assert _text(keyless) == "1 × 1,024 MiB card, any model; taint ?:NoExecute"
    # the pods a fresh node runs (its DaemonSets), as the template's JSON gives them
    reserved = {
        "cards": 1,
        "memory_mib": 1024,
        "reserved": {"pods": 2, "cpu": "1500m", "memory": "1Gi"},
    }
    assert (
        _text(reserved)
        == "1 × 1,024 MiB card, any model; 2 pods of its own (cpu 1500m, memory 1Gi)"
    )


def test_report_markdown_lists_the_template_and_the_pods_no_node_helps(
    report: dict[str, Any],
) -> None:
    text = render_report_markdown(report)
    scaling = text[text.index("## Scaling advice") : text.index("### Scale down")]
    assert f"| 1 | {TEMPLATE} | a/fits-new |" in scaling
    helpless = scaling[scaling.index("**Pods no new node would help**") :]
    assert f"| a/wants-b | {NOT_TRIGGERED}{SELECTOR} |" in helpless
    assert f"| a/big-cpu | {NOT_TRIGGERED}1 Insufficient cpu |" in helpless


def test_report_html_lists_the_pods_no_node_helps(report: dict[str, Any]) -> None:
    page = render_report_html(report)
    scaling = page[page.index('id="scaling"') : page.index("<h3>Scale down</h3>")]
    assert "<h3>Pods no new node would help</h3>" in scaling
    assert '<span class="mono">a/wants-b</span>' in scaling
    assert "node(s) didn&#x27;t match Pod&#x27;s node affinity/selector" in scaling
    assert TEMPLATE in scaling


def test_the_plan_pages_list_them_too(report: dict[str, Any]) -> None:
    text = render_plan_markdown(report["plan"], [])
    section = text[text.index("## Nodes to add") :]
    assert "**Pods no new node would help**" in section
    assert "| a/big-cpu |" in section
    page = render_plan_html(report["plan"], [])
    assert "<h3>Pods no new node would help</h3>" in page


def test_only_pods_no_node_helps_still_get_the_section(report: dict[str, Any]) -> None:
    plan = dict(report["plan"], scale_up=[])
    text = render_plan_markdown(plan, [])
    section = text[text.index("## Nodes to add") :]
    assert section.startswith("## Nodes to add\n\nNone: no unresolved pod needs new nodes.\n")
    assert "| a/wants-b |" in section
    page = render_plan_html(plan, [])
    assert "None: no unresolved pod needs new nodes." in page
    assert '<span class="mono">a/wants-b</span>' in page
    # and without either, no section at all
    assert "## Nodes to add" not in render_plan_markdown(dict(plan, scale_up_not_triggered=[]), [])

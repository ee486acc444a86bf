"""Scale-up advice in the plan and report renderings: a node template shows its allocatable,
labels and taints; pods that no template admits are listed with the autoscaler's reason
(their selector, or more cpu than any template has), not silently dropped."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.scaling.actor import CCE_ADDON, CCE_NOT_TRIGGERED
from advisor.core.scaling.templates import NodeShape
from advisor.output.scaling import node_shape_json
from advisor.render.plan.html import render_plan_html
from advisor.render.plan.markdown import render_plan_markdown
from advisor.render.plan.read import read_shape
from advisor.render.plan.scaling import shape_text
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.report import ReportInputs, ReportOptions, build_report
from advisor.scenario import scenario_from_data
from advisor.words import plural

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


def test_a_template_with_mig_cards_names_their_instances() -> None:
    # the core's shape, written as the plan's JSON writes it, read back and worded
    a100 = "NVIDIA A100-SXM4-40GB"
    cut = [{"profile": "3g.20gb", "start": 0}, {"profile": "1g.5gb", "start": 4}]
    node = {
        "name": "m",
        "mig_strategy": "mixed",
        "cards": [
            {"index": 0, "memory_mib": 40960, "model": a100},
            {"index": 1, "memory_mib": 40960, "model": a100, "mig": {"instances": cut}},
        ],
    }
    cluster = scenario_from_data({"nodes": [node], "pods": []}, "t.yaml")
    written = node_shape_json(NodeShape.of(cluster.nodes[0]))
    assert written["mig"] == [None, ["3g.20gb@0", "1g.5gb@4"]]
    assert _text(dict(written)) == (
        f"2 × 40,960 MiB cards, {a100}; MIG (mixed) card 1 3g.20gb@0 1g.5gb@4"
    )


def test_report_markdown_lists_the_template_and_the_pods_no_node_helps(
    report: dict[str, Any],
) -> None:
    text = render_report_markdown(report)
    scaling = text[text.index("## Scaling advice") : text.index("### Scale down")]
    assert f"| 1 | {TEMPLATE} | a/fits-new |" in scaling
    helpless = scaling[scaling.index("**Pods no new node would help**") :]
    # cce (the scenario's default profile): the add-on would not act either
    assert f"| a/wants-b | {CCE_NOT_TRIGGERED} ({NOT_TRIGGERED}{SELECTOR}) |" in helpless
    assert f"| a/big-cpu | {CCE_NOT_TRIGGERED} ({NOT_TRIGGERED}1 Insufficient cpu) |" in helpless


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


# -- who adds the nodes: a person on CCE, the cluster-autoscaler elsewhere ----------------

POOL_LABEL = "cce.cloud.com/cce-nodepool"


def _report_of(scenario: dict[str, Any]) -> dict[str, Any]:
    cluster = scenario_from_data(scenario, "scale-up.yaml")
    data: dict[str, Any] = build_report(
        ReportInputs(cluster, "scenario", 0.0), ReportOptions(time_budget_s=5), lambda: 0.0
    ).data
    return data


def test_on_cce_a_scale_up_is_the_resize_a_person_runs() -> None:
    """CCE's Autoscaler add-on does not scale xGPU nodes: each entry names the node pool
    (its nodes' CCE pool label), the count and the shape as a resize by hand; the pods no
    new node helps say the add-on would not act for them either."""
    node = dict(SCENARIO["nodes"][0], labels={"pool": "a", POOL_LABEL: "gpu-a"})
    data = _report_of(dict(SCENARIO, nodes=[node]))
    plan = data["plan"]
    [entry] = plan["scale_up"]
    assert (entry["actor"], entry["node_pool"], entry["nodes"]) == ("person", "gpu-a", 1)
    assert entry["resize"] == "by hand: add 1 node to node pool gpu-a"
    assert plan["scale_up_note"] == CCE_ADDON
    assert {n["note"] for n in plan["scale_up_not_triggered"]} == {CCE_NOT_TRIGGERED}
    text = render_report_markdown(data)
    scaling = text[text.index("## Scaling advice") : text.index("### Scale down")]
    assert "| a/fits-new | by hand: add 1 node to node pool gpu-a |" in scaling
    assert f"_{CCE_ADDON}._" in scaling
    assert "| Pod | Why |" in scaling
    page = render_plan_html(plan, [])
    assert "by hand: add 1 node to node pool gpu-a" in page
    assert "CCE&#x27;s Autoscaler add-on does not scale xGPU nodes" in page


def test_on_cce_nodes_in_no_known_pool_or_a_new_shape_need_a_pool() -> None:
    data = _report_of(SCENARIO)  # its node names no CCE pool
    [entry] = data["plan"]["scale_up"]
    assert "node_pool" not in entry
    assert entry["resize"] == (
        "by hand: add 1 node to the node pool of this shape (which one is not known: its "
        f"nodes carry no {POOL_LABEL} label; nodes in none, CCE's DefaultPool, need a pool "
        "created)"
    )
    node = dict(SCENARIO["nodes"][0], labels={POOL_LABEL: "gpu-a"})
    huge = gpu_pod("a/huge", request={"gpus": 2, "memory_mib": 8192}, tolerations=TOLERATES)
    data = _report_of(dict(SCENARIO, nodes=[node], pods=[*SCENARIO["pods"], huge]))
    [new] = [e for e in data["plan"]["scale_up"] if e.get("new_shape")]
    assert new["for"] == ["a/huge"]
    assert "node_pool" not in new  # a pool has one flavour: a new shape is a new pool
    count = plural(new["nodes"], "node")
    assert new["resize"] == f"by hand: create a node pool of this shape with {count}"


def test_elsewhere_the_cluster_autoscaler_adds_them_and_the_words_stay() -> None:
    node = dict(SCENARIO["nodes"][0], labels={"pool": "a", POOL_LABEL: "gpu-a"})
    data = _report_of(dict(SCENARIO, nodes=[node], scheduler={"profile": "hami"}))
    plan = data["plan"]
    [entry] = plan["scale_up"]
    assert entry["actor"] == "cluster-autoscaler"
    assert not {"node_pool", "resize"} & set(entry)
    assert "scale_up_note" not in plan
    assert all("note" not in n for n in plan["scale_up_not_triggered"])
    text = render_report_markdown(data)
    scaling = text[text.index("## Scaling advice") : text.index("### Scale down")]
    assert "by hand" not in scaling
    assert "CCE" not in scaling
    assert "| Pod | Why (the cluster-autoscaler's reason) |" in scaling
    assert f"| a/wants-b | {NOT_TRIGGERED}{SELECTOR} |" in scaling

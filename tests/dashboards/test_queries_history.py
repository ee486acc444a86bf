"""Every query of every dashboard, run on a real Prometheus holding two hours of history.

Each variable query and each panel target, variables substituted as Grafana would, must
succeed and return data: once with every variable on "All", once on each variable's first
option (chained: the options of one depend on the choices before it).
"""

from __future__ import annotations

import pytest

from tests.dashboards.dashboards_grafana import Json, legend_labels, panels, render_legend
from tests.dashboards.dashboards_history import NODES
from tests.dashboards.dashboards_prometheus import Answer, Window, choose, run_all
from tests.realparts import Prometheus

pytestmark = pytest.mark.realservices  # a real Prometheus

History = tuple[Prometheus, Window]


@pytest.fixture(scope="module", params=["all", "first"])
def answers(
    request: pytest.FixtureRequest, history: History, built: dict[str, Json]
) -> list[Answer]:
    prometheus, window = history
    found = []
    for board in built.values():
        selections = choose(prometheus, board, window, first=request.param == "first")
        found += run_all(prometheus, board, selections, window)
    return found


# The node dashboard's MIG row: on the first options (gpu-node-a's GPU 0, no MIG) empty
MIG_PANELS = {
    "MIG instances by profile",
    "MIG instance memory: used vs total",
    "Free MIG slices per card",
    "MIG instance memory by pod",
}


def test_every_query_succeeds_and_returns_data(
    answers: list[Answer], request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["answers"] == "first":
        assert {a.target.panel["title"] for a in answers if not a.series} == MIG_PANELS
        answers = [a for a in answers if a.target.panel["title"] not in MIG_PANELS]
    empty = [f"{a.target.name}: {a.expr}" for a in answers if not a.series]
    assert not empty, "queries without data:\n" + "\n".join(empty)
    assert len({a.target.name for a in answers}) > 60


def test_node_variable_lists_every_node(history: History, built: dict[str, Json]) -> None:
    prometheus, window = history
    for uid in ("xgpu-cluster", "xgpu-node", "xgpu-workload"):
        (node,) = [v for v in built[uid]["templating"]["list"] if v["name"] == "node"]
        assert node["query"] == 'label_values(xgpu_node_info{cluster=~"$cluster"}, node)'
    nodes = prometheus.label_values("node", "xgpu_node_info", window.start, window.end)
    assert nodes == sorted(NODES)


def test_first_options_narrow_the_chain(history: History, built: dict[str, Json]) -> None:
    prometheus, window = history
    selections = choose(prometheus, built["xgpu-workload"], window, first=True)
    assert selections == {
        "datasource": ["test"],
        "cluster": ["prod-a"],
        "node": ["gpu-node-a"],
        "gpu": ["0"],
        "namespace": ["infer"],
        "pod": ["llm-0"],
    }


def test_values_are_on_the_panel_s_scale(answers: list[Answer]) -> None:
    """0-1 ratios in percentunit panels, 0-100 in percent panels, counts not negative."""
    tops = {"percentunit": 1.0 + 1e-9, "percent": 100.0 + 1e-9}
    for answer in answers:
        values = answer.values()
        assert all(v >= 0 for v in values), answer.target.name
        top = tops.get(answer.target.unit)
        if top is not None:
            assert max(values) <= top, (answer.target.name, max(values))
        if answer.target.unit == "bytes" and values and max(values) > 0:  # MIG: none on "first"
            assert max(values) >= 1 << 20, answer.target.name  # bytes, not GiB or MiB


def test_legends_name_node_and_card_and_tell_series_apart(answers: list[Answer]) -> None:
    for answer in answers:
        legend = answer.target.target["legendFormat"]
        if not legend or len(answer.series) == 0:
            continue
        labels = [s["metric"] for s in answer.series]
        for label in ("node", "gpu_index", "namespace", "pod"):
            if any(label in m for m in labels):
                assert f"{{{{{label}}}}}" in legend, (answer.target.name, label, legend)
        for m in labels:
            assert legend_labels(legend) <= set(m), (answer.target.name, legend, m)
        rendered = [render_legend(legend, m) for m in labels]
        assert len(set(rendered)) == len(rendered), (answer.target.name, rendered)


def test_mode_and_health_values_are_all_mapped(answers: list[Answer]) -> None:
    checked = 0
    for answer in answers:
        mappings = answer.target.panel["fieldConfig"]["defaults"].get("mappings", [])
        if answer.target.panel["type"] != "state-timeline" or not mappings:
            continue
        mapped = {float(k) for k in mappings[0]["options"]}
        assert set(answer.values()) <= mapped, answer.target.name
        checked += 1
    assert checked == 3  # mode, health, collectors


def test_waste_ranks_the_idle_pod_first(history: History, answers: list[Answer]) -> None:
    (table,) = [
        a
        for a in answers
        if a.target.panel["title"] == "Top wasteful workloads" and "value" in a.series[0]
    ]
    ranked = sorted(table.series, key=lambda s: -float(s["value"][1]))
    assert (ranked[0]["metric"]["namespace"], ranked[0]["metric"]["pod"]) in {
        ("research", "sim-1"),  # 14 GiB allotted, about 2 used ("all")
        ("infer", "llm-0"),  # the only pod in the "first options" selection
    }


def test_unhealthy_card_and_failing_collector_show(
    history: History, built: dict[str, Json]
) -> None:
    """The history's incidents reach the panels that should show them."""
    prometheus, window = history
    by_title = {p["title"]: p for p in panels(built["xgpu-node"])}
    expr = by_title["Unhealthy cards"]["targets"][0]["expr"]
    everything = expr
    for variable in ("$cluster", "$node", "$gpu"):
        everything = everything.replace(f'"{variable}"', '".*"')
    (series,) = prometheus.query_range(everything, window.start, window.end, window.step)
    assert max(float(v) for _, v in series["values"]) == 1
    assert min(float(v) for _, v in series["values"]) == 0
    expr = by_title["Failing collectors"]["targets"][0]["expr"]
    expr = expr.replace('"$node"', '".*"').replace('"$cluster"', '".*"')
    (series,) = prometheus.query_range(expr, window.start, window.end, window.step)
    assert max(float(v) for _, v in series["values"]) == 1

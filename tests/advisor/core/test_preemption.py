"""Preemption verdicts (advisor.core.preemption, docs/design.md §10.2): kube-scheduler's
DefaultPreemption under hami, converted from k8s.io/kubernetes v1.35.3
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go, and hand cases.

Converted from TestPostFilter: "pod with higher priority can be made schedulable", "pod with
tied priority is still unschedulable", "preemption should respect filteredNodesStatuses"
(an UnschedulableAndUnresolvable node is a node the pod's taints keep it off), "preemption
should respect absent NodeToStatusReader entry ...", "pod can be made schedulable on one
node", "pod can be made schedulable on minHighestPriority node" (PDBs as the advisor's
disruption-budget annotation), "no candidate nodes found, no enough resource after removing
low priority pods", "no candidate nodes found with mixed reasons, no lower priority pod and
no enough CPU resource", "... 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have
enough CPU resource". Not converted: the extender cases (HAMi's extender has no preempt
verb) and the TestPlugin error cases (no such plugin in the advisor). From
TestPodEligibleToPreemptOthers: "Pod with preemptionPolicy=Never"; its nominated-node
cases need pods in graceful termination, which the model does not hold.
"""

from __future__ import annotations

from typing import Any

from advisor.core.gang import judge
from advisor.core.preemption import Preemption
from advisor.scenario import scenario_from_data

BUDGET = "xgpu.io/disruption-budget"
HIGH, MID, LOW = 1000, 100, 0


def node(
    name: str, *, pods: int = 10, cpu: str = "8", taint: bool = False, daemon: str | None = None
) -> dict[str, Any]:
    """`daemon`: the cpu of a pod without GPU on the node, which no preemption evicts."""
    out: dict[str, Any] = {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": pods},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
    }
    if daemon is not None:
        out["other_pods"] = [{"name": f"kube-system/ds-{name}", "resources": {"cpu": daemon}}]
    if taint:
        out["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return out


def pod(
    name: str, *, on: str | None = None, priority: int = 0, cpu: str = "100m", **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"default/{name}",
        "request": {"gpus": 1, "memory_mib": 1024},
        "resources": {"cpu": cpu, "memory": "100Mi"},
        "priority": priority,
        **extra,
    }
    if on is not None:
        out["node"], out["cards"] = on, [0]
    return out


def verdicts(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, Any]:
    data = {"scheduler": {"profile": "hami"}, "nodes": nodes, "pods": pods}
    cluster = scenario_from_data(data, "preempt.yaml")
    return {d.pod.name: d.preemption for d in judge(cluster).pods}


def only(found: dict[str, Any]) -> Preemption:
    value = found["default/p"]
    assert isinstance(value, Preemption)
    return value


def test_post_filter_higher_priority_can_be_made_schedulable() -> None:
    got = only(verdicts([node("node1", pods=1)], [pod("p1", on="node1"), pod("p", priority=HIGH)]))
    assert (got.verdict, got.node, got.victims, got.helps) == (
        "evicts",
        "node1",
        ("default/p1",),
        True,
    )


def test_post_filter_tied_priority_is_still_unschedulable() -> None:
    got = only(verdicts([node("node1", pods=1)], [pod("p1", on="node1"), pod("p")]))
    assert got.verdict == "no-victims"
    assert got.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_post_filter_respects_unresolvable_nodes() -> None:
    nodes = [node("node1", pods=1, taint=True)]
    got = only(verdicts(nodes, [pod("p1", on="node1"), pod("p", priority=HIGH)]))
    assert got.verdict == "no-victims"
    assert got.message == (
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_post_filter_schedulable_on_one_node() -> None:
    nodes = [node("node1", pods=1), node("node2", pods=1)]
    pods = [
        pod("p1", on="node1", priority=HIGH),
        pod("p2", on="node2", priority=LOW),
        pod("p", priority=MID),
    ]
    got = only(verdicts(nodes, pods))
    assert (got.node, got.victims) == ("node2", ("default/p2",))


def test_post_filter_min_highest_priority_node_with_pdbs() -> None:
    """The PDB-violating victim is reprieved last, and fewest violations ties: node2's one
    victim of mid priority beats node1's high one."""
    nodes = [node("node1", pods=1), node("node2", pods=1)]
    violating = {BUDGET: "violating-pdb:0"}
    pods = [
        pod("p1", on="node1", priority=HIGH, annotations={BUDGET: "non-violating-pdb:2147483647"}),
        pod("p2", on="node1", priority=LOW, annotations=violating),
        pod("p3", on="node2", priority=MID, annotations=violating),
        pod("p", priority=HIGH + 1),
    ]
    got = only(verdicts(nodes, pods))
    assert (got.node, got.victims) == ("node2", ("default/p3",))
    assert "1 against its disruption budget" in got.message


# Upstream's TestPostFilter hands the PostFilter Unschedulable statuses for nodes of 200m
# and a pod of 300m; NodeResourcesFit itself answers UnschedulableAndUnresolvable for a
# request above the node's whole allocatable (fit.go fitsRequest: "Unresolvable"), so here
# the nodes have 400m of which a daemon takes 200m: short after every eviction, not beyond
# the node (test_a_pod_larger_than_the_node_finds_preemption_not_helpful).
def short(name: str) -> dict[str, Any]:
    return node(name, cpu="400m", daemon="200m")


def test_post_filter_not_enough_resource_after_removing_low_priority_pods() -> None:
    nodes = [short("node1"), short("node2")]
    pods = [
        pod("p1", on="node1"),
        pod("p2", on="node2"),
        pod("p", priority=HIGH, cpu="300m"),
    ]
    got = only(verdicts(nodes, pods))
    assert got.message == "preemption: 0/2 nodes are available: 2 Insufficient cpu."


def test_post_filter_mixed_reasons() -> None:
    nodes = [node("node1", pods=1), short("node2"), node("node3", pods=1)]
    pods = [
        pod("p1", on="node1", priority=HIGH),
        pod("p2", on="node2"),
        pod("p3", on="node3", priority=HIGH),
        pod("p", priority=HIGH, cpu="300m"),
    ]
    got = only(verdicts(nodes, pods))
    assert got.message == (
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod."
    )


def test_post_filter_unresolvable_and_short_of_cpu() -> None:
    nodes = [
        short("node1"),
        short("node2"),
        node("node3", cpu="200m", taint=True),
        node("node4", cpu="200m", taint=True),
    ]
    pods = [pod("p1", on="node1"), pod("p2", on="node2"), pod("p", priority=HIGH, cpu="300m")]
    got = only(verdicts(nodes, pods))
    assert got.message == (
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling."
    )


def test_a_pod_larger_than_the_node_finds_preemption_not_helpful() -> None:
    """The differential harness's finding: NodeResourcesFit's status is
    UnschedulableAndUnresolvable where the request exceeds the node's allocatable, so the
    node is no candidate and counts as "Preemption is not helpful for scheduling"."""
    nodes = [node("node1", cpu="200m"), short("node2")]
    pods = [pod("p1", on="node1"), pod("p2", on="node2"), pod("p", priority=HIGH, cpu="300m")]
    got = only(verdicts(nodes, pods))
    assert got.message == (
        "preemption: 0/2 nodes are available: 1 Insufficient cpu, "
        "1 Preemption is not helpful for scheduling."
    )


def test_pod_eligible_to_preempt_others_never() -> None:
    pods = [pod("p1", on="node1"), pod("p", priority=HIGH, preemption_policy="Never")]
    got = only(verdicts([node("node1", pods=1)], pods))
    assert (got.verdict, got.message) == (
        "not-eligible",
        "preemption: not eligible due to preemptionPolicy=Never.",
    )


# -- hand cases ---------------------------------------------------------------------------


def gpu_pod(name: str, memory: int, **extra: Any) -> dict[str, Any]:
    out = pod(name, **extra)
    out["request"] = {"gpus": 1, "memory_mib": memory}
    return out


def one_card(name: str, cpu: str = "8") -> dict[str, Any]:
    out = node(name, cpu=cpu)
    out["cards"] = [{"index": 0, "memory_mib": 16384}]
    return out


def test_hami_pod_short_only_of_gpu_finds_no_victims() -> None:
    """The card is full of a lower-priority pod, but kube-scheduler's in-tree filters never
    see HAMi's resources: nothing to evict for, and the message says why."""
    pods = [gpu_pod("low", 12288, on="gpu-1"), gpu_pod("p", 8192, priority=HIGH)]
    got = only(verdicts([one_card("gpu-1")], pods))
    assert got.verdict == "no-victims"
    assert "priority never frees GPU memory, cores or slots under HAMi" in got.message
    assert "expected at least one victim pod on node 'gpu-1'" in got.message


def test_hami_victims_chosen_for_cpu_alone_may_not_help() -> None:
    """Short of cpu and of card memory: the lower-priority pod is evicted for its cpu, but
    the higher-priority pod beside it keeps the card too full: helps is False."""
    pods = [
        gpu_pod("low", 1024, on="gpu-1", cpu="2"),
        gpu_pod("high", 10240, on="gpu-1", priority=HIGH + 1, cpu="100m"),
        gpu_pod("p", 8192, priority=HIGH, cpu="2"),
    ]
    got = only(verdicts([one_card("gpu-1", cpu="2100m")], pods))
    assert (got.verdict, got.victims, got.helps) == ("evicts", ("default/low",), False)
    assert "under HAMi" in got.message


def test_hami_preemption_off() -> None:
    data = {
        "scheduler": {"profile": "hami", "preemption": False},
        "nodes": [node("node1", pods=1)],
        "pods": [pod("p1", on="node1"), pod("p", priority=HIGH)],
    }
    got = judge(scenario_from_data(data, "off.yaml")).pods[0].preemption
    assert got is not None
    assert got.verdict == "off"


def test_a_placed_pod_has_no_verdict() -> None:
    found = verdicts([node("node1")], [pod("p", priority=HIGH)])
    assert found["default/p"] is None


def test_evictions_accumulate_within_one_session() -> None:
    """Two high-priority pods, one node with one slot for each victim: the second pod does
    not pick the first one's victim again."""
    nodes = [node("node1", pods=2)]
    pods = [
        pod("v1", on="node1"),
        pod("v2", on="node1"),
        pod("p", priority=HIGH),
        pod("q", priority=HIGH),
    ]
    found = verdicts(nodes, pods)
    first, second = found["default/p"], found["default/q"]
    assert first.verdict == second.verdict == "evicts"
    assert set(first.victims) | set(second.victims) == {"default/v1", "default/v2"}
    assert not set(first.victims) & set(second.victims)

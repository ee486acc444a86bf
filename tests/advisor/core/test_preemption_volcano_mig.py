"""Volcano's preempt and reclaim for MIG pods (core.preemption, docs/design.md §10.3, §13),
and the queue arithmetic they and allocate share: an instance of profile P is the scalar
`nvidia.com/mig-<P>` in a node's sums (allocatable: the instances its device plugin
advertises, less what its pods ask), in a pod's Resreq and in the queues' allocated,
deserved and capability (Volcano v1.15.1 pkg/scheduler/api/resource_info.go counts every
extended resource of a container's requests as a scalar). Hand cases of issue #26."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.gang import judge
from advisor.core.mig_cycle import MigBook
from advisor.core.occupancy import build_state
from advisor.core.preemption import Preemption
from advisor.core.preemption.predicates import FitErrors
from advisor.core.queues import cluster_total
from advisor.scenario import scenario_from_data

A100 = "NVIDIA A100-SXM4-40GB"
HIGH, MID, LOW = 1000, 100, 0
HALVES = (("3g.20gb", 0), ("3g.20gb", 4))
NO_GANG_VOTE = {"preemptable": False}  # a job at its minAvailable may still be a victim


def card(index: int, *instances: tuple[str, int], healthy: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "memory_mib": 40960, "model": A100}
    if instances:
        out["mig"] = {"instances": [{"profile": p, "start": s} for p, s in instances]}
    if not healthy:
        out["healthy"] = False
    return out


def node(name: str, *cards: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "mig_strategy": "mixed",
        "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 10},
        "cards": list(cards),
    }


def pod(
    name: str, profile: str, *held: tuple[int, int], on: str = "", group: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"ml/{name}",
        "request": {"gpus": max(len(held), 1), "mig_profile": profile},
        "resources": {"cpu": "100m", "memory": "100Mi"},
        "group": f"ml/{group or name}",
        "preemptable": True,
    }
    if on:
        out["node"] = on
        out["mig_instances"] = [{"card": c, "start": s} for c, s in held]
    return out


def group(name: str, priority: int, queue: str = "q1") -> dict[str, Any]:
    return {"name": f"ml/{name}", "priority": priority, "min_member": 1, "queue": queue}


def scenario(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    actions: tuple[str, ...] = ("allocate", "preempt"),
    queues: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    scheduler = {"profile": "volcano-vgpu", "actions": list(actions), "gang": NO_GANG_VOTE}
    return {
        "scheduler": scheduler,
        "nodes": nodes,
        "pods": pods,
        "groups": groups,
        "queues": queues or [{"name": "q1"}],
    }


def verdicts(data: dict[str, Any]) -> dict[str, Any]:
    return {d.pod.name: d for d in judge(scenario_from_data(data, "t.yaml")).pods}


def of(found: dict[str, Any], name: str = "ml/p") -> Preemption:
    value = found[name].preemption
    assert isinstance(value, Preemption)
    return value


def test_preempt_evicts_the_lowest_priority_holder_of_the_profile() -> None:
    pods = [
        pod("a", "3g.20gb", (0, 0), on="m"),
        pod("b", "3g.20gb", (0, 4), on="m"),
        pod("p", "3g.20gb"),
    ]
    groups = [group("a", LOW), group("b", MID), group("p", HIGH)]
    found = verdicts(scenario([node("m", card(0, *HALVES))], pods, groups))
    assert found["ml/p"].cause == "capacity"
    got = of(found)
    assert (got.verdict, got.node, got.victims, got.helps) == ("evicts", "m", ("ml/a",), True)
    expected = "Volcano's preempt evicts 1 pod on m and then the pod fits its cards there"
    assert got.message == expected


def test_preempt_evicts_in_victim_order_until_the_instances_are_covered() -> None:
    """The lowest job priority goes first (BuildVictimsPriorityQueue), though its 1g.5gb
    instance is no 3g.20gb: the loop evicts until the node's sums cover the request, so
    Volcano evicts it and then the 3g.20gb holder (preempt.go `preempt`)."""
    pods = [
        pod("c", "1g.5gb", (1, 0), on="m"),
        pod("a", "3g.20gb", (0, 0), on="m"),
        pod("b", "3g.20gb", (0, 4), on="m"),
        pod("p", "3g.20gb"),
    ]
    groups = [group("c", LOW), group("a", 10), group("b", MID), group("p", HIGH)]
    nodes = [node("m", card(0, *HALVES), card(1, ("1g.5gb", 0)))]
    got = of(verdicts(scenario(nodes, pods, groups)))
    assert (got.verdict, got.victims, got.helps) == ("evicts", ("ml/c", "ml/a"), True)


def test_evictions_accumulate_over_the_session() -> None:
    """p1 evicts a and takes its instance; p2 then finds the node's sums as p1 left them
    (a's instance gone to p1) and evicts b, the next lowest, alone. (Node n's free
    instances keep the queue within its deserved; the pods may not go there.)"""
    on_m = {"node_selector": {"on": "m"}}
    pods = [
        pod("a", "3g.20gb", (0, 0), on="m"),
        pod("b", "3g.20gb", (0, 4), on="m"),
        pod("c", "3g.20gb", (1, 0), on="m"),
        pod("d", "3g.20gb", (1, 4), on="m"),
        {**pod("p1", "3g.20gb"), **on_m},
        {**pod("p2", "3g.20gb"), **on_m},
    ]
    groups = [group(n, LOW + i) for i, n in enumerate("abcd")]
    groups += [group("p1", HIGH), group("p2", HIGH)]
    nodes = [
        {**node("m", card(0, *HALVES), card(1, *HALVES)), "labels": {"on": "m"}},
        node("n", card(0, *HALVES), card(1, *HALVES)),
    ]
    found = verdicts(scenario(nodes, pods, groups))
    assert [of(found, f"ml/{p}").victims for p in ("p1", "p2")] == [("ml/a",), ("ml/b",)]


def test_no_victims_where_their_instances_would_not_cover_the_ask() -> None:
    """util.ValidateVictims: idle plus every victim must cover 2 × 3g.20gb; the one
    lower-priority holder frees one (the other holder ranks higher)."""
    pods = [
        pod("a", "3g.20gb", (0, 0), on="m"),
        pod("b", "3g.20gb", (0, 4), on="m"),
        {**pod("p", "3g.20gb"), "request": {"gpus": 2, "mig_profile": "3g.20gb"}},
    ]
    groups = [group("a", LOW), group("b", HIGH + 1), group("p", HIGH)]
    got = of(verdicts(scenario([node("m", card(0, *HALVES))], pods, groups)))
    assert (got.verdict, got.victims) == ("no-victims", ())


def test_a_holder_on_an_unhealthy_card_counts_against_the_node() -> None:
    """The unhealthy card's instances leave m's allocatable (2), its holder's request stays
    (2 asked): the free healthy instance is out of reach, so Volcano evicts a holder. (Node
    n's free instances keep the queue within its deserved; the pod may not go there.)"""
    nodes = [
        {**node("m", card(0, *HALVES), card(1, *HALVES, healthy=False)), "labels": {"on": "m"}},
        node("n", card(0, *HALVES)),
    ]
    pods = [
        pod("a", "3g.20gb", (1, 0), on="m"),
        pod("b", "3g.20gb", (0, 0), on="m"),
        {**pod("p", "3g.20gb"), "node_selector": {"on": "m"}},
    ]
    groups = [group("a", LOW), group("b", MID), group("p", HIGH)]
    got = of(verdicts(scenario(nodes, pods, groups)))
    assert (got.verdict, got.victims, got.helps) == ("evicts", ("ml/a",), True)


def test_reclaim_takes_an_instance_back_from_the_queue_over_its_deserved() -> None:
    """Two queues of equal weight share the node's two 3g.20gb instances: q1 holds both,
    so it is over its deserved (one) in nvidia.com/mig-3g.20gb and q2's pod reclaims one.
    Counted as a vGPU (volcano.sh/vgpu-number, which a MIG card advertises none of), the
    deserved would be none and nothing reclaimed."""
    pods = [
        pod("a", "3g.20gb", (0, 0), on="m", group="j"),
        pod("b", "3g.20gb", (0, 4), on="m", group="j"),
        pod("p", "3g.20gb"),
    ]
    groups = [group("j", LOW), group("p", LOW, "q2")]
    queues = [{"name": "q1"}, {"name": "q2"}]
    data = scenario([node("m", card(0, *HALVES))], pods, groups, ("allocate", "reclaim"), queues)
    got = of(verdicts(data))
    assert (got.verdict, got.node, len(got.victims), got.helps) == ("evicts", "m", 1, True)
    assert got.message.startswith("Volcano's reclaim evicts 1 pod on m")


def test_a_queue_capability_in_instances_refuses_the_next_pod() -> None:
    """allocate's queueAllocatable: q1 may hold one nvidia.com/mig-3g.20gb, holds it, so the
    second pod waits though an instance is free."""
    pods = [pod("a", "3g.20gb", (0, 0), on="m"), pod("p", "3g.20gb")]
    groups = [group("a", LOW), group("p", LOW)]
    queues = [{"name": "q1", "capability": {"nvidia.com/mig-3g.20gb": "1"}}]
    found = verdicts(scenario([node("m", card(0, *HALVES))], pods, groups, queues=queues))
    assert found["ml/p"].cause == "queue"
    assert "nvidia.com/mig-3g.20gb" in found["ml/p"].message
    roomy = [{"name": "q1", "capability": {"nvidia.com/mig-3g.20gb": "2"}}]
    found = verdicts(scenario([node("m", card(0, *HALVES))], pods, groups, queues=roomy))
    assert found["ml/p"].cause == "schedulable"


def test_the_session_total_counts_instances_not_mig_card_memory() -> None:
    """TotalResource: a MIG card's memory and slots are no vGPU allocatable; its healthy
    instances are `nvidia.com/mig-<P>` (thousandths, as NewResource counts a scalar)."""
    vgpu = {"index": 2, "memory_mib": 16384}
    nodes = [node("m", card(0, *HALVES), card(1, ("1g.5gb", 0), healthy=False), vgpu)]
    cluster = scenario_from_data(scenario(nodes, [], []), "t.yaml")
    total = cluster_total(cluster)
    assert total["nvidia.com/mig-3g.20gb"] == 2000.0
    assert "nvidia.com/mig-1g.5gb" not in total  # its card is unhealthy
    assert total["volcano.sh/vgpu-memory"] == 16384 * 1000.0
    assert total["volcano.sh/vgpu-number"] == 10 * 1000.0  # the one vGPU card's slots


def test_allocate_fit_error_is_unresolvable_only_where_the_instances_are_free() -> None:
    """FilterOutUnschedulableAndUnresolvableNodesForTask: allocate's predicate checks the
    node's sums first ("Insufficient nvidia.com/mig-3g.20gb", resolvable); only where they
    cover the pod does its node selector's refusal read UnschedulableAndUnresolvable."""
    nodes = [node("full", card(0, *HALVES)), node("free", card(0, *HALVES))]
    pods = [
        pod("a", "3g.20gb", (0, 0), on="full"),
        pod("b", "3g.20gb", (0, 4), on="full"),
        {**pod("p", "3g.20gb"), "node_selector": {"zone": "elsewhere"}},
    ]
    groups = [group(n, LOW) for n in "abp"]
    cluster = scenario_from_data(scenario(nodes, pods, groups), "t.yaml")
    state = build_state(cluster)
    waiting = next(p for p in cluster.pods if p.name == "ml/p")
    found = FitErrors(cluster, MigBook(cluster, state)).unresolvable(state, waiting)
    assert dict(zip(state.node_names, found.tolist(), strict=True)) == {
        "full": False,
        "free": True,
    }


def test_a_single_node_advertises_its_own_profile_on_healthy_cards() -> None:
    """Node.mig_allocatable, what the sums and the session's total start from: `single`
    counts the node's one profile (nvidia.com/gpu there), `none` nothing (the scenario
    refuses MIG cards there; a live node may have them without the device plugin)."""
    cards = (card(0, *HALVES), card(1, *HALVES), card(2, *HALVES, healthy=False))
    data = scenario([{**node("s", *cards), "mig_strategy": "single"}], [], [])
    (single,) = scenario_from_data(data, "t.yaml").nodes
    assert single.mig_allocatable() == {"3g.20gb": 4}
    assert replace(single, mig_strategy="none").mig_allocatable() == {}
    assert replace(single, mig_strategy="mixed").mig_allocatable() == {"3g.20gb": 4}

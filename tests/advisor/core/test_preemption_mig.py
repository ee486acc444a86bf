"""Preemption verdicts for MIG pods (core.preemption, docs/design.md §10.3, §13): under
kube-scheduler's DefaultPreemption a pod asking `nvidia.com/mig-<P>: N` counts the node's
instances of P as NodeResourcesFit counts an extended resource; hand cases of issue #26.
Volcano's preempt and reclaim: tests/advisor/core/test_preemption_volcano_mig.py."""

from __future__ import annotations

from typing import Any

from advisor.core.gang import judge
from advisor.core.preemption import Preemption
from advisor.scenario import scenario_from_data

A100 = "NVIDIA A100-SXM4-40GB"
HIGH, MID, LOW = 1000, 100, 0
HALVES = (("3g.20gb", 0), ("3g.20gb", 4))


def card(index: int, *instances: tuple[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "memory_mib": 40960, "model": A100}
    if instances:
        out["mig"] = {"instances": [{"profile": p, "start": s} for p, s in instances]}
    return out


def node(name: str, *cards: dict[str, Any], pods: int = 10) -> dict[str, Any]:
    return {
        "name": name,
        "mig_strategy": "mixed",
        "allocatable": {"cpu": "8", "memory": "64Gi", "pods": pods},
        "cards": list(cards),
    }


def bound(
    name: str, on: str, profile: str, *held: tuple[int, int], priority: int = LOW
) -> dict[str, Any]:
    return {
        "name": f"ml/{name}",
        "node": on,
        "request": {"gpus": len(held), "mig_profile": profile},
        "mig_instances": [{"card": c, "start": s} for c, s in held],
        "resources": {"cpu": "100m", "memory": "100Mi"},
        "priority": priority,
    }


def ask(name: str, profile: str, gpus: int = 1, priority: int = HIGH) -> dict[str, Any]:
    return {
        "name": f"ml/{name}",
        "request": {"gpus": gpus, "mig_profile": profile},
        "resources": {"cpu": "100m", "memory": "100Mi"},
        "priority": priority,
    }


def verdicts(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], profile: str = "hami"
) -> dict[str, Preemption | None]:
    data = {"scheduler": {"profile": profile}, "nodes": nodes, "pods": pods}
    return {d.pod.name: d.preemption for d in judge(scenario_from_data(data, "t.yaml")).pods}


def of(found: dict[str, Preemption | None], name: str = "ml/p") -> Preemption:
    value = found[name]
    assert isinstance(value, Preemption)
    return value


def test_a_mig_pod_evicts_a_lower_priority_holder_of_its_profile() -> None:
    nodes = [node("m", card(0, *HALVES))]
    pods = [
        bound("a", "m", "3g.20gb", (0, 0)),
        bound("b", "m", "3g.20gb", (0, 4)),
        ask("p", "3g.20gb"),
    ]
    got = of(verdicts(nodes, pods))
    # both holders are victims on removal; reprieved most important first (same priority:
    # the one started earlier, none here: creation order), so a is kept and b evicted
    assert (got.verdict, got.node, got.victims, got.helps) == ("evicts", "m", ("ml/b",), True)
    assert got.message == "kube-scheduler nominates m and evicts 1 pod of lower priority"


def test_the_more_important_holder_is_reprieved() -> None:
    nodes = [node("m", card(0, *HALVES))]
    pods = [
        bound("low", "m", "3g.20gb", (0, 0), priority=LOW),
        bound("mid", "m", "3g.20gb", (0, 4), priority=MID),
        ask("p", "3g.20gb"),
    ]
    assert of(verdicts(nodes, pods)).victims == ("ml/low",)


def test_holders_of_higher_priority_are_never_victims() -> None:
    nodes = [node("m", card(0, *HALVES))]
    pods = [
        bound("a", "m", "3g.20gb", (0, 0), priority=HIGH),
        bound("b", "m", "3g.20gb", (0, 4), priority=HIGH),
        ask("p", "3g.20gb", priority=MID),
    ]
    got = of(verdicts(nodes, pods))
    assert got.verdict == "no-victims"
    assert got.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_holders_of_other_profiles_free_no_instance_of_it() -> None:
    # one 3g held by a pod of higher priority; the lower-priority pods hold 1g instances
    nodes = [node("m", card(0, ("3g.20gb", 0), ("1g.5gb", 4), ("1g.5gb", 5)))]
    pods = [
        bound("hi", "m", "3g.20gb", (0, 0), priority=HIGH),
        bound("x", "m", "1g.5gb", (0, 4)),
        bound("y", "m", "1g.5gb", (0, 5)),
        ask("p", "3g.20gb", priority=MID),
    ]
    got = of(verdicts(nodes, pods))
    assert got.verdict == "no-victims"
    assert got.message == (
        "preemption: 0/1 nodes are available: 1 Insufficient nvidia.com/mig-3g.20gb."
    )


def test_a_node_offering_no_such_profile_is_not_helpful() -> None:
    # m's card is cut in 1g instances only: allocatable nvidia.com/mig-3g.20gb is 0, so
    # NodeResourcesFit's shortfall is Unresolvable there, whatever is evicted
    nodes = [
        node("m", card(0, *(("1g.5gb", s) for s in range(7)))),
        node("n", card(0, *HALVES)),
    ]
    pods = [
        *(bound(f"s{s}", "m", "1g.5gb", (0, s)) for s in range(7)),
        bound("a", "n", "3g.20gb", (0, 0), priority=HIGH),
        bound("b", "n", "3g.20gb", (0, 4), priority=HIGH),
        ask("p", "3g.20gb", priority=MID),
    ]
    got = of(verdicts(nodes, pods))
    assert got.verdict == "no-victims"
    assert got.message == (
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
        "pod, 1 Preemption is not helpful for scheduling."
    )


def test_two_instances_asked_need_two_freed() -> None:
    # n holds the 3g profile twice but one holder outranks the pod: only m frees both
    nodes = [node("m", card(0, *HALVES)), node("n", card(0, *HALVES))]
    pods = [
        bound("m1", "m", "3g.20gb", (0, 0)),
        bound("m2", "m", "3g.20gb", (0, 4)),
        bound("n1", "n", "3g.20gb", (0, 0)),
        bound("n2", "n", "3g.20gb", (0, 4), priority=HIGH),
        ask("p", "3g.20gb", 2),
    ]
    got = of(verdicts(nodes, pods))
    assert (got.node, got.victims) == ("m", ("ml/m1", "ml/m2"))


def test_on_a_node_of_mig_and_vgpu_cards_only_mig_holders_are_victims() -> None:
    # the vGPU pods on card 1 are of lower priority too, but their eviction frees no instance
    nodes = [node("m", card(0, *HALVES), card(1))]
    vgpu = {"request": {"gpus": 1, "memory_mib": 4096}, "priority": LOW, "node": "m"}
    pods = [
        {"name": "v/one", **vgpu, "cards": [1]},
        bound("a", "m", "3g.20gb", (0, 0), priority=HIGH),
        bound("b", "m", "3g.20gb", (0, 4), priority=LOW),
        {"name": "v/two", **vgpu, "cards": [1]},
        ask("p", "3g.20gb", priority=MID),
    ]
    got = of(verdicts(nodes, pods))
    assert (got.verdict, got.node, got.victims, got.helps) == ("evicts", "m", ("ml/b",), True)


def test_a_mig_victim_frees_its_pod_slot_for_a_vgpu_pod() -> None:
    # one pod slot left to free, taken by a MIG pod of lower priority: under HAMi the
    # in-tree filters count the slot, so the MIG pod is the victim (the vGPU card is free)
    nodes = [node("m", card(0, *HALVES), card(1), pods=1)]
    pods = [
        bound("a", "m", "3g.20gb", (0, 0)),
        {"name": "v/p", "request": {"gpus": 1, "memory_mib": 4096}, "priority": HIGH},
    ]
    got = of(verdicts(nodes, pods), "v/p")
    assert (got.verdict, got.victims, got.helps) == ("evicts", ("ml/a",), True)


def test_a_nominated_mig_pod_holds_the_freed_instance_for_the_pods_after_it() -> None:
    # p evicts b and is nominated on m; q, after it in the queue, finds b gone but its
    # instance held by p, and the other holder outranks it
    nodes = [node("m", card(0, *HALVES))]
    pods = [
        bound("a", "m", "3g.20gb", (0, 0), priority=HIGH),
        bound("b", "m", "3g.20gb", (0, 4)),
        ask("p", "3g.20gb", priority=HIGH),
        ask("q", "3g.20gb", priority=MID),
    ]
    found = verdicts(nodes, pods)
    assert of(found).victims == ("ml/b",)
    got = of(found, "ml/q")
    assert got.verdict == "no-victims"
    assert got.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_a_pod_judged_at_its_turn_does_not_see_pods_placed_after_it() -> None:
    # p (2 instances) is first in the queue and fits nowhere; q (1, lower priority) then
    # takes the free 3g. At p's turn q is not yet placed: one free and one held by a pod of
    # lower priority make two
    nodes = [node("m", card(0, *HALVES))]
    pods = [
        bound("a", "m", "3g.20gb", (0, 0)),
        ask("p", "3g.20gb", 2, priority=HIGH),
        ask("q", "3g.20gb", priority=MID),
    ]
    found = verdicts(nodes, pods)
    assert found["ml/q"] is None  # placed by the cycle
    got = of(found)
    assert (got.verdict, got.victims) == ("evicts", ("ml/a",))


def test_preemption_policy_never() -> None:
    nodes = [node("m", card(0, *HALVES))]
    pods = [
        bound("a", "m", "3g.20gb", (0, 0)),
        bound("b", "m", "3g.20gb", (0, 4)),
        {**ask("p", "3g.20gb"), "preemption_policy": "Never"},
    ]
    assert of(verdicts(nodes, pods)).verdict == "not-eligible"


def test_under_volcano_a_mig_victim_frees_no_vgpu() -> None:
    """A vGPU pod short of a vGPU slot (Volcano's node sums: volcano.sh/vgpu-number): the
    MIG pod of the lowest job priority goes first in victim order, but its Resreq holds no
    vGPU (and its MIG card advertises none), so Volcano goes on to the vGPU pod. (With
    enqueue, the pod's group would not be admitted: the session's total holds one vGPU slot,
    the MIG card's counting none, and one is allocated.)"""
    vgpu_card = {"index": 0, "memory_mib": 16384, "max_vgpus": 1}
    nodes = [node("m", vgpu_card, card(1, *HALVES))]
    vgpu = {"request": {"gpus": 1, "memory_mib": 1024}, "resources": {"cpu": "100m"}}
    pods = [
        {"name": "v/a", **vgpu, "node": "m", "cards": [0], "priority": MID},
        bound("b", "m", "3g.20gb", (1, 0), priority=LOW),
        {"name": "v/p", **vgpu, "priority": HIGH},
    ]
    scheduler = {
        "profile": "volcano-vgpu",
        "actions": ["allocate", "preempt"],
        "gang": {"preemptable": False},
    }
    data = {"scheduler": scheduler, "nodes": nodes, "pods": pods}
    found = {d.pod.name: d.preemption for d in judge(scenario_from_data(data, "t.yaml")).pods}
    got = of(found, "v/p")
    assert (got.verdict, got.victims, got.helps) == ("evicts", ("ml/b", "v/a"), True)


def test_a_holder_on_an_unhealthy_card_is_a_victim_that_frees_room() -> None:
    """The unhealthy card's instances leave the node's allocatable, its holder's request
    stays: 2 allocatable, 2 requested, so the free healthy instance is out of reach until
    the holder on the unhealthy card goes (fitsRequest counts requests, not devices)."""
    broken = {**card(1, *HALVES), "healthy": False}
    nodes = [node("m", card(0, *HALVES), broken)]
    pods = [
        bound("a", "m", "3g.20gb", (1, 0)),
        bound("b", "m", "3g.20gb", (0, 0), priority=MID),
        ask("p", "3g.20gb"),
    ]
    got = of(verdicts(nodes, pods))
    # b, more important, is reprieved first: with it back 2 - 1 leaves room
    assert (got.verdict, got.node, got.victims, got.helps) == ("evicts", "m", ("ml/a",), True)

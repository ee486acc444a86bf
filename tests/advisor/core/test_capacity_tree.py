"""Hand cases of capacity's hierarchical queues (core.capacity_tree, docs/design.md §10.2),
beside the upstream table (test_capacity_hierarchy_upstream.py): what a parent's capability
does to its children, the queue order by ancestors, and that without `enable_hierarchy` a
queue's parent changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.capacity_tree import HierAttr, open_hierarchy
from advisor.core.gang import diagnose_jobs
from advisor.core.queues import JobLoad
from advisor.scenario import scenario_from_data
from tests.advisor.core.volcano_tables import node, pod


def team(cpu_a: str, *, hierarchy: bool, min_resources: bool = False) -> Any:
    """`team` (4 cpu) over `a` and `b` (4 cpu each); `a` runs `cpu_a`; b's pod asks 2 cpu."""
    scheduler = {
        "profile": "volcano-vgpu",
        "actions": ["enqueue", "allocate"],
        "queue_plugin": "capacity",
        "enable_hierarchy": hierarchy,
    }
    a_group: dict[str, Any] = {"name": "ml/a", "queue": "a"}
    b_group: dict[str, Any] = {"name": "ml/b", "queue": "b"}
    if min_resources:  # a's too, or all a holds is elastic and leaves team's sum
        a_group["min_resources"] = {"cpu": cpu_a, "memory": "1Gi"}
        b_group["min_resources"] = {"cpu": "2", "memory": "1Gi"}
    data = {
        "scheduler": scheduler,
        "nodes": [node("n1", "16", "64Gi")],
        "queues": [
            {"name": "team", "capability": {"cpu": "4"}},
            {"name": "a", "parent": "team", "capability": {"cpu": "4"}},
            {"name": "b", "parent": "team", "capability": {"cpu": "4"}},
        ],
        "groups": [a_group, b_group],
        "pods": [
            pod("ml", 1024, "a-0", "a", cpu_a, "1Gi", on="n1"),
            pod("ml", 1024, "b-0", "b", "2", "1Gi"),
        ],
    }
    result = diagnose_jobs(scenario_from_data(data, "team.yaml"))
    (found,) = [d for d in result.diagnosis.pods if d.pod.name == "ml/b-0"]
    return found


def test_a_siblings_use_counts_against_the_parent() -> None:
    """b holds nothing, its pod's 2 cpu within b's own 4; but a's 3 cpu count in team, and
    3 + 2 exceeds team's 4 (checkQueueAllocatableHierarchically): refused by its queue, in
    allocate's words, naming the ancestor."""
    verdict = team("3", hierarchy=True)
    assert verdict.cause == "queue"
    assert verdict.message == (
        "Queue b is overused when considering this task: insufficient cpu (in its ancestor "
        "queue team: cpu: 3 allocated + 2 > 4 realCapability)"
    )


def test_the_parent_within_its_capability_lets_the_child_in() -> None:
    verdict = team("2", hierarchy=True)
    assert verdict.placement is not None
    assert verdict.placement.node == "n1"


def test_without_enable_hierarchy_the_parent_changes_nothing() -> None:
    """Flat capacity reads no `spec.parent`: b is judged on its own 4 cpu."""
    verdict = team("3", hierarchy=False)
    assert verdict.placement is not None


def test_a_group_is_not_admitted_when_the_parent_has_no_room() -> None:
    """checkJobEnqueueableHierarchically: minResources + allocated + inqueue − elastic
    within realCapability in team as well as in b."""
    verdict = team("3", hierarchy=True, min_resources=True)
    assert verdict.cause == "queue"
    assert verdict.message == "queue resource quota insufficient: insufficient cpu"
    assert team("3", hierarchy=False, min_resources=True).placement is not None


def _tree(allocated: dict[str, float]) -> dict[str, HierAttr]:
    """root over A (deserves 4 cpu) and B (4); A over a1 (1), B over b1 (4); each leaf
    holding `allocated[leaf]` millicores."""
    queues = [
        {"name": "A", "deserved": {"cpu": "4"}},
        {"name": "B", "deserved": {"cpu": "4"}},
        {"name": "a1", "parent": "A", "deserved": {"cpu": "1"}},
        {"name": "b1", "parent": "B", "deserved": {"cpu": "4"}},
    ]
    scheduler = {"profile": "volcano-vgpu", "queue_plugin": "capacity", "enable_hierarchy": True}
    data = {"scheduler": scheduler, "nodes": [node("n1", "16", "64Gi")], "queues": queues}
    cluster = scenario_from_data(data, "tree.yaml")
    loads = [JobLoad(q, {"cpu": v}, {"cpu": v}, None, "Running") for q, v in allocated.items()]
    attrs = open_hierarchy(cluster, loads)
    return {n: a for n, a in attrs.items() if isinstance(a, HierAttr)}


def _first(tree: dict[str, HierAttr], *names: str) -> str:
    return min(names, key=lambda n: tree[n].order_key())


def test_leaves_are_ordered_by_their_ancestors_below_the_shared_one() -> None:
    """a1 holds all it deserves (share 1), b1 half (0.5): flat, b1 would go first; with the
    hierarchy A (1 of 4: 0.25) and B (2 of 4: 0.5) decide, so a1 does."""
    tree = _tree({"a1": 1000.0, "b1": 2000.0})
    assert (tree["a1"].share, tree["b1"].share) == (1.0, 0.5)
    assert (tree["A"].share, tree["B"].share) == (0.25, 0.5)
    assert _first(tree, "a1", "b1") == "a1"
    assert tree["root"].deserved["cpu"] == 8000.0  # its children's deserved


def test_a_parents_share_is_the_sessions_opening_one() -> None:
    """The Allocate event updates the leaf's share, not its ancestors' (AllocateFunc): A
    stays at 0.25 though a1 takes 2 cpu more, so a1 still goes before b1."""
    tree = _tree({"a1": 1000.0, "b1": 2000.0})
    tree["a1"].allocate({"cpu": 2000.0})
    assert tree["A"].allocated["cpu"] == 3000.0
    assert tree["A"].share == 0.25
    assert _first(tree, "a1", "b1") == "a1"


@pytest.mark.parametrize(("a1", "first"), [(0.0, "a1"), (4000.0, "b1")])
def test_equal_shares_at_the_divergence_fall_back_to_creation(a1: float, first: str) -> None:
    """A and B both at 0.5 (a1 at 2 of A's 4): upstream's compare gives 0 and the session
    takes creation, here the listing (A's a1 before B's b1); A above B's share: b1."""
    tree = _tree({"a1": 2000.0 if a1 == 0.0 else a1, "b1": 2000.0})
    assert _first(tree, "a1", "b1") == first


def test_deserved_is_not_capped_by_real_capability_under_the_hierarchy() -> None:
    """checkHierarchicalQueue: a child's deserved is max(spec.deserved, guarantee), with
    no cap by realCapability (flat buildQueueAttrs caps it)."""
    scheduler = {"profile": "volcano-vgpu", "queue_plugin": "capacity", "enable_hierarchy": True}
    queues = [{"name": "q", "deserved": {"cpu": "8"}, "capability": {"cpu": "4"}}]
    data = {"scheduler": scheduler, "nodes": [node("n1", "16", "64Gi")], "queues": queues}
    attrs = open_hierarchy(scenario_from_data(data, "q.yaml"), [])
    assert attrs["q"].deserved["cpu"] == 8000.0
    assert attrs["q"].real_capability["cpu"] == 4000.0


def test_reclaim_takes_first_the_victims_whose_queue_shares_a_deeper_ancestor() -> None:
    """VictimQueueOrderFn: b1's pod reclaims 1 cpu on a full node from a1's pod or b2's
    (both queues above their deserved). Reverse QueueOrderFn would take a1's first (A at
    share 1, B at 0.25); b2 shares B with b1, a deeper ancestor than a1's root: b2's pod is
    evicted."""
    scheduler = {
        "profile": "volcano-vgpu",
        "actions": ["allocate", "reclaim"],
        "queue_plugin": "capacity",
        "enable_hierarchy": True,
    }
    data = {
        "scheduler": scheduler,
        "nodes": [node("n1", "2", "64Gi")],
        "queues": [
            {"name": "A", "deserved": {"cpu": "1"}},
            {"name": "B", "deserved": {"cpu": "4"}},
            {"name": "a1", "parent": "A", "deserved": {"cpu": "500m"}},
            {"name": "b1", "parent": "B", "deserved": {"cpu": "1"}},
            {"name": "b2", "parent": "B", "deserved": {"cpu": "500m"}},
        ],
        "groups": [  # min_member 0: the gang plugin lets each lose its one pod
            {"name": "ml/a", "queue": "a1", "min_member": 0},
            {"name": "ml/b", "queue": "b2", "min_member": 0},
            {"name": "ml/r", "queue": "b1"},
        ],
        "pods": [
            pod("ml", 1024, "a-0", "a", "1", "1Gi", on="n1"),
            pod("ml", 1024, "b-0", "b", "1", "1Gi", on="n1", card=1),
            pod("ml", 1024, "r-0", "r", "1", "1Gi"),
        ],
    }
    result = diagnose_jobs(scenario_from_data(data, "victims.yaml"))
    (found,) = [d for d in result.diagnosis.pods if d.pod.name == "ml/r-0"]
    assert found.preemption is not None
    assert found.preemption.victims == ("ml/b-0",)


def test_a_childs_capability_at_zero_cpu_is_its_parents() -> None:
    """checkHierarchicalQueue: cpu or memory ≤ 0 in a child's capability takes its
    parent's; a resource the child names keeps its own, one it does not the parent's."""
    scheduler = {"profile": "volcano-vgpu", "queue_plugin": "capacity", "enable_hierarchy": True}
    queues = [
        {"name": "p", "capability": {"cpu": "6", "memory": "8Gi", "volcano.sh/vgpu-number": "3"}},
        {"name": "c", "parent": "p", "capability": {"cpu": "0", "memory": "2Gi"}},
    ]
    data = {"scheduler": scheduler, "nodes": [node("n1", "16", "64Gi")], "queues": queues}
    attrs = open_hierarchy(scenario_from_data(data, "q.yaml"), [])
    real = attrs["c"].real_capability
    assert (real["cpu"], real["memory"]) == (6000.0, 2.0 * 2**30)
    assert real["volcano.sh/vgpu-number"] == 3000.0

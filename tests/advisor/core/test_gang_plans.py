"""Plans move and rescue whole gangs (docs/design.md §10.4): a Pending gang is rescued only
when min_member of it place at once in the simulated cycle, a running gang is evicted whole
or not at all (and counted whole), and every plan holds in the job cycle every output
judges by (`gang.judge`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.gang import judge
from advisor.core.model import Cluster, Placement
from advisor.core.plan import PlanOptions, PlanReport, plan
from advisor.core.scaling import pod_remedies, scaling_advice
from advisor.scenario import scenario_from_data

GANG = "g/job"


def card(index: int = 0) -> dict[str, Any]:
    return {"index": index, "memory_mib": 16384}


def node(name: str, cards: int = 1, pool: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "cards": [card(i) for i in range(cards)]}
    if pool:
        out["labels"] = {"pool": pool}
    return out


def running(name: str, where: str, index: int, mib: int, **extra: Any) -> dict[str, Any]:
    request = {"gpus": 1, "memory_mib": mib}
    return {"name": name, "node": where, "cards": [index], "request": request, **extra}


def pending(name: str, mib: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": 1, "memory_mib": mib}, **extra}


def workers(count: int) -> list[dict[str, Any]]:
    return [pending(f"g/w-{i}", 16384, group=GANG, owner="Job/g/job") for i in range(count)]


def cluster(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], min_member: int, priority: int = 0
) -> Cluster:
    data = {
        "scheduler": {"profile": "cce"},
        "nodes": nodes,
        "pods": pods,
        "groups": [{"name": GANG, "min_member": min_member, "priority": priority}],
    }
    return scenario_from_data(data, "gang-plans.yaml")


def replica(name: str, where: str, index: int, mib: int = 8192, **extra: Any) -> dict[str, Any]:
    return running(name, where, index, mib, owner=f"ReplicaSet/x/{name.split('/')[1]}", **extra)


def cycle_after(cluster: Cluster, report: PlanReport) -> dict[str, Placement]:
    """What the job cycle places once the plans' evicted pods are Pending again (each plan
    in turn, as `plan` applies them; recreated in the order they are evicted), checked
    against each plan's own placements."""
    where = {d.pod.name: d.placement for d in judge(cluster).pods if d.placement is not None}
    pods = [replace(p, placement=where.get(p.name, p.placement)) for p in cluster.pods]
    for p in report.plans:
        gone = set(p.evict)
        kept = [q for q in pods if q.name not in gone]
        by_name = {q.name: q for q in pods}
        again = [replace(by_name[name], placement=None) for name in p.evict]
        trial = replace(cluster, pods=(*kept, *again))
        landed = {d.pod.name: d.placement for d in judge(trial).pods if d.placement is not None}
        assert landed == dict(p.placements)
        pods = [replace(q, placement=landed.get(q.name, q.placement)) for q in trial.pods]
    return {q.name: q.placement for q in pods if q.placement is not None}


# Node a has two cards, each half used by a replica; c, d and e one empty card each. The
# gang's four 16 GiB workers: three fit (c, d, e), the fourth finds a's 16 GiB split.
SPLIT_ROOM = [node("a", 2), node("c"), node("d"), node("e")]
HALVES = [replica("x/s-0", "a", 0), replica("x/s-1", "a", 1)]


def test_one_move_rescues_a_gang_of_four() -> None:
    gang = cluster(SPLIT_ROOM, [*HALVES, *workers(4)], min_member=4)
    causes = {d.pod.name: d.cause for d in judge(gang).pods}
    assert causes == {"g/w-0": "gang", "g/w-1": "gang", "g/w-2": "gang", "g/w-3": "fragmentation"}
    report = plan(gang)
    assert len(report.plans) == 1
    only = report.plans[0]
    assert only.evict == ("x/s-0",)
    assert sorted(only.rescues) == ["g/w-0", "g/w-1", "g/w-2", "g/w-3"]  # named whole
    assert dict(only.placements)["x/s-0"] == Placement("a", (1,))  # beside x/s-1
    assert not report.unresolved
    after = cycle_after(gang, report)
    assert all(f"g/w-{i}" in after for i in range(4))
    # one decision: the report advises the plan for every member, and proposes no node
    advice = {r.pod: r.advice for r in pod_remedies(judge(gang), report)}
    assert advice == {
        "g/w-0": "rebalance",
        "g/w-1": "rebalance",
        "g/w-2": "rebalance",
        "g/w-3": "fragmentation",
    }
    ups, _ = scaling_advice(gang, report, judge(gang))
    assert not ups.steps


def test_the_same_cluster_without_the_gang_needs_no_gang_rule() -> None:
    """min_member 1: the three that fit are placed now; the fourth gets the same move."""
    loose = cluster(SPLIT_ROOM, [*HALVES, *workers(4)], min_member=1)
    report = plan(loose)
    assert [p.rescues for p in report.plans] == [("g/w-3",)]


# b's two cards each hold 12 GiB that may not move: a plan frees one card of a, never the
# two more the gang lacks (the second card of a leaves its replica nowhere to go).
PINNED = [
    running("y/p-0", "b", 0, 12288, annotations={"xgpu.io/do-not-disrupt": "true"}),
    running("y/p-1", "b", 1, 12288, annotations={"xgpu.io/do-not-disrupt": "true"}),
]


def test_no_plan_when_room_for_only_some_of_min_member() -> None:
    nodes = [node("a", 2), node("b", 2), node("c"), node("d")]
    gang = cluster(nodes, [*HALVES, *PINNED, *workers(4)], min_member=4)
    report = plan(gang)
    assert not report.plans
    reasons = {u.pod: u.reason for u in report.unresolved}
    assert reasons["g/w-0"] == (
        "no plan places min_member of gang g/job at once: the plans tried make room for at "
        "most 3 of the 4 Pending pods it needs (min_member 4)"
    )
    assert set(reasons) == {f"g/w-{i}" for i in range(4)}
    advice = {r.pod: r.advice for r in pod_remedies(judge(gang), report)}
    assert advice["g/w-2"] == "no-plan"  # the member that fails on its own: nodes proposed


def test_a_gang_that_rolls_back_leaves_its_room_to_another_plan() -> None:
    """web/big (pool a only) gets a's card once a replica moves; the gang's first member
    fits on c in that simulation but its second fits nowhere, so the gang is rolled back
    and takes no room: it does not spoil the plan (as a member landing alone would)."""
    nodes = [node("a", 2, pool="a"), node("c")]
    big = pending("web/big", 16384, node_selector={"pool": "a"})
    gang = cluster(nodes, [*HALVES, big, *workers(2)], min_member=2)
    report = plan(gang)
    assert [(p.rescues, p.evict) for p in report.plans] == [(("web/big",), ("x/s-0",))]
    assert {u.pod for u in report.unresolved} == {"g/w-0", "g/w-1"}
    after = cycle_after(gang, report)
    assert "web/big" in after
    assert "g/w-0" not in after


# A running gang of two holds half of a and half of b; c is full: a 16 GiB pod fits only
# once one member moves next to the other.
SPLIT_GANG = [
    running("g/r-0", "a", 0, 8192, group=GANG, owner="Job/g/job", started="2024-05-01T00:00:00Z"),
    running("g/r-1", "b", 0, 8192, group=GANG, owner="Job/g/job", started="2024-05-01T00:00:00Z"),
    running("x/full", "c", 0, 16384, annotations={"xgpu.io/do-not-disrupt": "true"}),
    pending("web/big", 16384),
]


def test_a_plan_never_splits_a_running_gang() -> None:
    """One eviction would do (min_member 1 moves one member), but a gang of min_member 2
    moves whole: under a cap of one eviction per plan there is no plan, and the plan held
    back needs both members."""
    nodes = [node("a"), node("b"), node("c")]
    one = PlanOptions(max_plan_evictions=1)
    loose = plan(cluster(nodes, SPLIT_GANG, min_member=1), one)
    assert [len(p.evict) for p in loose.plans] == [1]
    whole = plan(cluster(nodes, SPLIT_GANG, min_member=2), one)
    assert not whole.plans
    assert [(sorted(h.evict), h.needs) for h in whole.held_back] == [(["g/r-0", "g/r-1"], "2")]


def test_a_plan_may_evict_a_running_gang_whole_and_counts_all_of_it() -> None:
    nodes = [node("a"), node("b"), node("c")]
    gang = cluster(nodes, SPLIT_GANG, min_member=2)
    report = plan(gang)
    assert len(report.plans) == 1
    only = report.plans[0]
    assert only.rescues == ("web/big",)
    assert sorted(only.evict) == ["g/r-0", "g/r-1"]
    assert report.evictions == 2  # every member counted
    # the gang restarts once: charged its dearest member, the other rides along
    charges = {name: (cost, why) for name, cost, why in only.costs}
    first, second = only.evict
    assert charges[second] == (0.0, f"restarts with {first} (gang {GANG})")
    assert only.cost == charges[first][0] > 0
    after = cycle_after(gang, report)
    assert after["g/r-0"].node == after["g/r-1"].node == "b"  # together again, whole


def test_a_plan_the_job_cycle_places_otherwise_is_not_proposed() -> None:
    """The same whole-gang move, its PodGroup now of priority 100: Volcano's allocate takes
    the recreated gang before web/big (job priority), both members land on a, and web/big
    on b, not where the planner's pod queue would put them: that plan is not proposed,
    since every plan must be what the job cycle does."""
    nodes = [node("a"), node("b"), node("c")]
    gang = cluster(nodes, SPLIT_GANG, min_member=2, priority=100)
    report = plan(gang)
    assert not report.plans
    cycle_after(gang, report)


def test_scale_up_after_a_plan_starts_the_gang_is_for_the_member_left() -> None:
    """Five workers, min_member 4: the move starts the gang with four of them; the fifth
    still finds no room. Scale-up is for it alone: the four the plan places are neither
    sized for again nor counted as a gang that cannot start."""
    gang = cluster(SPLIT_ROOM, [*HALVES, *workers(5)], min_member=4)
    diagnosis = judge(gang)
    report = plan(gang, diagnosis=diagnosis)
    rescued = [name for p in report.plans for name in p.rescues]
    assert len(rescued) == 4
    (left,) = {f"g/w-{i}" for i in range(5)} - set(rescued)
    ups, _ = scaling_advice(gang, report, diagnosis)
    assert [step.pods for step in ups.steps] == [(left,)]
    assert not ups.not_triggered

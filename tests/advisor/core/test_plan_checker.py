"""An independent checker of rebalancing plans (docs/design.md §8), and tests that it bites.

It shares nothing with the planner but `diagnose`: it rebuilds a plain `Cluster` for each
plan — the evicted pods removed from their cards and appended, in eviction order, at the
end of the pod list as Pending pods (so the queue puts them after the Pending pods of equal
priority) — runs one scheduling cycle and checks that every pod the plan rescues and every
pod it evicts lands where the plan says. Then every pod that landed runs there, and the
next plan is checked on that cluster. Every placement (the current cycle's and each plan's)
is also checked against the node filters by `filter_checker`, which shares no code with the
core: no pod lands on a node that is cordoned, that its selector, affinity or a taint
excludes, or whose pod slots, cpu or memory it overruns.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Placement, Pod
from advisor.core.plan import PlanReport, plan
from advisor.core.plan.limits import EvictionBudget, NeverEvict
from advisor.scenario import scenario_from_data
from tests.advisor.core.filter_checker import placement_refusals

GiB = 1024


def _with(pod: Pod, placement: Placement | None) -> Pod:
    return dataclasses.replace(pod, placement=placement)


def _budget(pod: Pod) -> tuple[str, int] | None:
    """(namespace/budget, disruptions allowed) from the Kubernetes source's annotation
    `<pdb>:<allowed>` (several budgets, "a,b:0", allow none); None: no budget."""
    value = pod.annotations.get("xgpu.io/disruption-budget")
    if value is None:
        return None
    name, _, allowed = value.rpartition(":")
    return f"{pod.name.split('/', 1)[0]}/{name}", int(allowed) if allowed.isdigit() else 0


def _protected(pod: Pod) -> bool:
    budget = _budget(pod)
    return (
        pod.name.split("/", 1)[0] == "kube-system"
        or pod.annotations.get("xgpu.io/do-not-disrupt", "").lower() == "true"
        or (budget is not None and budget[1] == 0)
    )


def _never_evicted(pod: Pod, selectors: Sequence[NeverEvict]) -> bool:
    """Whether a --never-evict selector names the pod: its owner's kind, or a label."""
    kind = (pod.owner or "").split("/", 1)[0]
    for selector in selectors:
        if selector.kind is not None and selector.kind == kind:
            return True
        if selector.key is not None and pod.labels.get(selector.key) == selector.value:
            return True
    return False


def _within(budget: EvictionBudget, evictions: int, cards: int, gpus: float) -> bool:
    allowed = {"advice": budget.amount, "card": budget.amount * cards, "gpu": budget.amount * gpus}
    return evictions <= allowed[budget.per] + 1e-9


def _landed(cluster: Cluster, pods: list[Pod], evict: Sequence[str]) -> dict[str, Placement]:
    """One scheduling cycle with `evict` removed from their cards and queued at the end."""
    by_name = {p.name: p for p in pods}
    gone = set(evict)
    queue = [p for p in pods if p.name not in gone]
    queue += [_with(by_name[name], None) for name in evict]
    trial = Cluster(cluster.nodes, tuple(queue), cluster.policy, cluster.max_vgpus_per_card)
    return {
        d.pod.name: d.placement
        for d in diagnose(trial, node_detail_limit=0).pods
        if d.placement is not None
    }


def check_report(cluster: Cluster, report: PlanReport) -> None:
    """Raise AssertionError unless every plan of `report` holds when applied in order, within
    the caps the report was asked for, and every plan it holds back as above a cap holds on
    the state the plans leave and is above that cap."""
    options = report.options
    first = diagnose(cluster, node_detail_limit=0)
    causes = {d.pod.name: d.cause for d in first.pods}
    bound = {d.pod.name: d.placement for d in first.pods if d.placement is not None}
    assert dict(report.schedulable) == bound
    pods = [_with(p, bound[p.name]) if p.name in bound else p for p in cluster.pods]
    by_name = {p.name: p for p in pods}
    refused = placement_refusals(cluster.nodes, pods, bound)
    assert not refused, f"the current cycle breaks a node filter: {refused}"
    evictions = cards = 0
    rescued_mib = 0
    rescued_all: set[str] = set()
    for number, made in enumerate(report.plans, 1):
        assert made.evict, f"plan {number} evicts nothing"
        assert made.rescues, f"plan {number} rescues nothing"
        evicted = set(made.evict)
        assert len(evicted) == len(made.evict), f"plan {number} evicts a pod twice"
        assert len(made.evict) <= options.max_plan_evictions, f"plan {number} is above the cap"
        for name in made.evict:
            pod = by_name[name]
            assert pod.placement is not None, f"plan {number} evicts {name}, which is not running"
            assert not _protected(pod), f"plan {number} evicts protected {name}"
            assert not _never_evicted(pod, options.never_evict), f"plan {number} evicts {name}"
            assert dict(made.evicted_from)[name] == pod.placement
        under = Counter(b for name in made.evict if (b := _budget(by_name[name])) is not None)
        for (budget, allowed), count in under.items():
            assert count <= allowed, f"plan {number} evicts {count} pods under {budget}"
        for name in made.rescues:
            assert by_name[name].placement is None, f"plan {number}: {name} is not Pending"
        landed = _landed(cluster, pods, made.evict)
        for name in [*made.rescues, *made.evict]:
            assert name in landed, f"plan {number}: {name} does not land"
        newly = {name for name in landed if name not in evicted}
        assert newly == set(made.rescues), f"plan {number} rescues {sorted(newly)}"
        assert dict(made.placements) == {name: landed[name] for name in landed}
        pods = [_with(p, landed.get(p.name, p.placement)) for p in pods]
        by_name = {p.name: p for p in pods}
        refused = placement_refusals(cluster.nodes, pods, landed)
        assert not refused, f"plan {number} breaks a node filter: {refused}"
        evictions += len(made.evict)
        cards += sum(by_name[name].request.gpus for name in made.rescues)
        rescued_mib += sum(by_name[name].request.memory_mib for name in made.rescues)
        rescued_all |= set(made.rescues)
    gpus = rescued_mib / report.reference_card_mib
    assert _within(options.max_evictions, evictions, cards, gpus), "over --max-evictions"
    for held in report.held_back:
        assert not rescued_all.intersection(held.rescues), f"held back: {held} is rescued"
        landed = _landed(cluster, pods, held.evict)
        assert all(name in landed for name in [*held.rescues, *held.evict]), f"{held} fails"
        assert {n for n in landed if n not in set(held.evict)} == set(held.rescues)
        # the rescued pod and those of its request that no plan rescues
        alike = {by_name[name].request for name in held.rescues}
        unrescued = [n for n, c in causes.items() if c != "schedulable" and n not in rescued_all]
        assert 1 <= held.waiting <= sum(by_name[n].request in alike for n in unrescued)
        if held.flag == "--max-plan-evictions":
            assert len(held.evict) > options.max_plan_evictions
            assert held.needs == str(len(held.evict))
        else:
            assert held.flag == "--max-evictions"
            more_cards = sum(by_name[name].request.gpus for name in held.rescues)
            more_mib = sum(by_name[name].request.memory_mib for name in held.rescues)
            assert not _within(
                options.max_evictions,
                evictions + len(held.evict),
                cards + more_cards,
                (rescued_mib + more_mib) / report.reference_card_mib,
            ), f"{held} is within --max-evictions"
    expected = [
        (name, cause)
        for name, cause in causes.items()
        if cause != "schedulable" and name not in rescued_all
    ]
    assert [(u.pod, u.cause) for u in report.unresolved] == expected


# -- scenarios --------------------------------------------------------------------------


def build(nodes: list[Any], pods: list[Any], **top: Any) -> Cluster:
    return scenario_from_data({"nodes": nodes, "pods": pods, **top}, "test.yaml")


def node(name: str, *sizes: int) -> dict[str, Any]:
    return {
        "name": name,
        "cards": [{"index": i, "memory_mib": s * GiB} for i, s in enumerate(sizes)],
    }


def running(name: str, on: str, cards: list[int], gib: int, **extra: Any) -> dict[str, Any]:
    request = {"gpus": len(cards), "memory_mib": gib * GiB}
    return {"name": name, "node": on, "cards": cards, "request": request, **extra}


def pending(name: str, gpus: int, gib: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "memory_mib": gib * GiB}, **extra}


def two_dependent_plans() -> Cluster:
    """Two 16 GiB pods wait; each needs a card emptied of an 8 GiB pod, and plan 2 only
    works after plan 1 (before it, the first Pending pod would take the room)."""
    return build(
        [node("a", 16), node("b", 16), node("s", 16, 16)],
        [
            running("t/v1", "a", [0], 8),
            running("t/v2", "b", [0], 8),
            running("t/r1", "s", [0], 8),
            running("t/r2", "s", [1], 8),
            pending("t/p1", 1, 16),
            pending("t/p2", 1, 16),
        ],
    )


def test_checker_accepts_the_planners_plans() -> None:
    cluster = two_dependent_plans()
    report = plan(cluster)
    assert len(report.plans) == 2
    check_report(cluster, report)


def test_checker_rejects_plans_out_of_order() -> None:
    cluster = two_dependent_plans()
    report = plan(cluster)
    swapped = dataclasses.replace(report, plans=report.plans[::-1])
    with pytest.raises(AssertionError, match="plan 1"):
        check_report(cluster, swapped)


def test_checker_rejects_a_wrong_placement_and_a_claim_that_does_not_land() -> None:
    cluster = two_dependent_plans()
    report = plan(cluster)
    first = report.plans[0]
    moved = dict(first.placements)
    victim = first.evict[0]
    moved[victim] = Placement("a", (0,))
    bad = dataclasses.replace(first, placements=tuple(moved.items()))
    with pytest.raises(AssertionError):
        check_report(cluster, dataclasses.replace(report, plans=(bad, *report.plans[1:])))
    greedy = dataclasses.replace(first, rescues=("t/p1", "t/p2"))
    with pytest.raises(AssertionError, match="does not land"):
        check_report(cluster, dataclasses.replace(report, plans=(greedy,)))


def test_checker_rejects_evicting_a_protected_pod() -> None:
    cluster = two_dependent_plans()
    report = plan(cluster)
    pods = tuple(
        dataclasses.replace(p, annotations={"xgpu.io/do-not-disrupt": "true"})
        if p.name == report.plans[0].evict[0]
        else p
        for p in cluster.pods
    )
    with pytest.raises(AssertionError, match="protected"):
        check_report(dataclasses.replace(cluster, pods=pods), report)

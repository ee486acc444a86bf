"""One function decides a Pending pod's advice and whether a scale-up is proposed for it, so
that "capacity (consolidate): scaling up would waste money" never sits beside a scale-up
for the same pod (the failure reported), on hand-made clusters and generated ones."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from advisor.core.plan import PlanOptions, plan
from advisor.core.remedy import ACTIONS, ADVISES_NO_NODES, ADVISES_NODES, WHY, Remedy
from advisor.core.scaling import pod_remedies, scaling_advice
from advisor.report import ReportInputs, ReportOptions, build_report
from tests.advisor.core.scenario_dicts import GiB, build, node
from tests.advisor.core.test_scaling import clusters
from tests.fastloop import examples


def owned(name: str, on: str, gib: int) -> dict[str, Any]:
    request = {"gpus": 1, "memory_mib": gib * GiB}
    owner = f"Deployment/{name.replace('/', '/d-')}"
    return {"name": name, "node": on, "cards": [0], "request": request, "owner": owner}


def wanting(gib: int) -> dict[str, Any]:
    return {"name": "ml/big", "request": {"gpus": 1, "memory_mib": gib * GiB}}


def decided(cluster: Cluster, options: PlanOptions | None = None) -> tuple[Any, ...]:
    diagnosis = diagnose(cluster)
    plans = plan(cluster, options or PlanOptions(time_budget_s=None), diagnosis=diagnosis)
    ups, _ = scaling_advice(cluster, plans, diagnosis)
    proposed = {name for entry in ups for name in entry.pods}
    return diagnosis, plans, pod_remedies(diagnosis, plans), proposed


def test_the_keys_split_cleanly() -> None:
    assert not ADVISES_NODES & ADVISES_NO_NODES
    assert set(WHY) == set(ACTIONS) == ADVISES_NODES | ADVISES_NO_NODES


def test_enough_in_total_but_no_plan_is_scale_up_advice() -> None:
    """The reported case. Two nodes of one 16 GiB card, each holding a 10 GiB pod: 6 + 6 =
    12 GiB free, so the 12 GiB pod is `capacity` with enough free in total ("consolidate").
    No plan can make room: moving either 10 GiB pod needs 10 GiB free on the other card,
    which has 6. So a node is proposed, and the advice must not say consolidate."""
    cluster = build(
        [node("n1", 16), node("n2", 16)],
        [owned("a/one", "n1", 10), owned("a/two", "n2", 10), wanting(12)],
    )
    diagnosis, plans, decided_, proposed = decided(cluster)
    (verdict,) = diagnosis.pods
    assert (verdict.cause, verdict.cluster_free_sufficient) == ("capacity", True)
    assert plans.plans == ()
    (big,) = decided_
    assert big == Remedy("ml/big", "no-plan", True, WHY["no-plan"], "capacity", verdict.message)
    assert (big.title, big.text) == ACTIONS["no-plan"]
    assert proposed == {"ml/big"}


def test_consolidation_a_plan_makes_is_not_scaled_up() -> None:
    """n1 holds a 10 GiB pod, n2 a 4 GiB one: 6 + 12 = 18 GiB free, the 13 GiB pod fits on
    neither card. Moving the 4 GiB pod to n1 (6 GiB free there) leaves n2's 16 GiB card
    empty: a plan rescues it, and no node is proposed."""
    cluster = build(
        [node("n1", 16), node("n2", 16)],
        [owned("a/one", "n1", 10), owned("a/two", "n2", 4), wanting(13)],
    )
    _, plans, decided_, proposed = decided(cluster)
    assert [p.rescues for p in plans.plans] == [("ml/big",)]
    (big,) = decided_
    assert (big.advice, big.scale_up) == ("capacity-consolidate", False)
    assert big.why == "a rebalancing plan makes room for it"
    assert proposed == set()


def test_a_plan_held_back_by_a_cap_is_consolidate_advice_without_scale_up() -> None:
    """n1 and n2 each hold two 4 GiB pods: 8 + 8 = 16 GiB free, the 16 GiB pod fits on
    neither. Any plan moves both pods of one card (2 evictions); with at most 1 per plan it
    is held back: the advice is still to consolidate (raise the cap), and no node is
    proposed for the pod."""
    cluster = build(
        [node("n1", 16), node("n2", 16)],
        [
            owned("a/one", "n1", 4),
            owned("a/two", "n1", 4),
            owned("b/one", "n2", 4),
            owned("b/two", "n2", 4),
            wanting(16),
        ],
    )
    capped = PlanOptions(max_plan_evictions=1, time_budget_s=None)
    _, plans, decided_, proposed = decided(cluster, capped)
    assert plans.plans == ()
    assert [h.rescues for h in plans.held_back] == [("ml/big",)]
    (big,) = decided_
    assert (big.advice, big.scale_up) == ("capacity-consolidate", False)
    assert "above a cap on evictions" in big.why
    assert proposed == set()


def test_the_report_carries_the_advice_its_scale_up_was_decided_with() -> None:
    """The reported case through the report: the diagnosis entry and the plan's unresolved
    entry say `no-plan` with scale_up, and the scale-up is for that pod."""
    cluster = build(
        [node("n1", 16), node("n2", 16)],
        [owned("a/one", "n1", 10), owned("a/two", "n2", 10), wanting(12)],
    )
    data = build_report(ReportInputs(cluster, "test", 0.0), ReportOptions(), lambda: 0.0).data
    (entry,) = data["diagnosis"]["pods"]
    advice = {"key": "no-plan", "scale_up": True, "why": WHY["no-plan"]}
    assert entry["advice"] == advice
    (unresolved,) = data["plan"]["unresolved"]
    assert unresolved["advice"] == advice
    assert [e["for"] for e in data["plan"]["scale_up"]] == [["ml/big"]]


@settings(max_examples=examples(60), deadline=None)
@given(clusters())
def test_advice_and_scale_up_never_contradict(cluster: Cluster) -> None:
    """Over generated clusters: a pod is proposed a node only when its advice proposes
    nodes, never when it says consolidate, rebalance, fix the request or that it fits; and
    every pod whose advice proposes nodes gets one, or a reason no node would help."""
    options = PlanOptions(time_budget_s=None, work=20_000)
    diagnosis = diagnose(cluster)
    plans = plan(cluster, options, diagnosis=diagnosis)
    ups, _ = scaling_advice(cluster, plans, diagnosis)
    proposed = {name for entry in ups for name in entry.pods}
    helpless = {n.pod for n in ups.not_triggered}
    shapes = [entry.shape for entry in ups]
    assert len(shapes) == len(set(shapes)), shapes  # each node shape listed once
    rescued = {name for p in plans.plans for name in p.rescues}
    for r in pod_remedies(diagnosis, plans):
        assert r.scale_up == (r.advice in ADVISES_NODES), r
        if r.pod in proposed:
            assert r.scale_up, r
            assert r.advice not in ADVISES_NO_NODES, r
        if r.pod in rescued:
            assert not r.scale_up, r
        if r.scale_up and cluster.max_vgpus_per_card >= 1:
            assert r.pod in proposed | helpless, r

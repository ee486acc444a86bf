"""PodDisruptionBudgets in the pure core: one rule for "may this pod be disrupted"
(`model.disruption_blocker`), honoured by plans (checked by the independent checker) and by
scale-down."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.model import Cluster, Pod, Request, disruption_blocker, disruption_budget
from advisor.core.plan import plan
from advisor.core.plan.board import may_evict
from advisor.core.scaling.down import movable, scale_down, scale_down_advice
from tests.advisor.core.test_plan_checker import (
    build,
    check_report,
    node,
    pending,
    running,
)

BUDGET = "xgpu.io/disruption-budget"


def pod(name: str, **annotations: str) -> Pod:
    return Pod(name, Request(1, 1024), annotations=annotations)


@pytest.mark.parametrize(
    ("name", "annotations", "blocker"),
    [
        ("ml/a", {}, None),
        ("ml/a", {BUDGET: "pdb:1"}, None),
        ("ml/a", {BUDGET: "pdb:3"}, None),
        ("ml/a", {BUDGET: "pdb:0"}, "disruption budget pdb allows 0 disruptions"),
        (
            "ml/a",
            {BUDGET: "a,b:0"},
            "disruption budgets a,b all cover it: the Eviction API refuses",
        ),
        ("ml/a", {BUDGET: "pdb:lots"}, "disruption budget pdb:lots allows 0 disruptions"),
        ("ml/a", {"xgpu.io/do-not-disrupt": " True "}, "xgpu.io/do-not-disrupt: true"),
        ("kube-system/dns", {BUDGET: "pdb:5"}, "kube-system pod"),
        # the autoscaler's own annotation is scale-down's business, not the shared rule's
        ("ml/a", {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, None),
    ],
)
def test_one_rule_for_plans_and_scale_down(
    name: str, annotations: dict[str, str], blocker: str | None
) -> None:
    subject = pod(name, **annotations)
    assert disruption_blocker(subject) == blocker
    assert may_evict(subject) is (blocker is None)
    safe_false = annotations.get("cluster-autoscaler.kubernetes.io/safe-to-evict") == "false"
    assert movable(subject) is (blocker is None and not safe_false)


def test_budget_annotation_reads_back() -> None:
    assert disruption_budget({}) is None
    assert disruption_budget({BUDGET: "web:2"}) == ("web", 2)
    assert disruption_budget({BUDGET: "a,b:0"}) == ("a,b", 0)
    assert disruption_budget({BUDGET: "web:-1"}) == ("web", 0)


# -- plans ------------------------------------------------------------------------------


def cce(**train_a: Any) -> Cluster:
    """One plan rescues web/infer-2 by moving ml/train-a off cce-node-1; moving ml/train-b
    instead would do as well."""
    return build(
        [node("cce-node-1", 16, 16, 16), node("spare", 16), node("b", 16)],
        [
            running("ml/train-a", "cce-node-1", [0], 12, owner="Job/ml/train-a", **train_a),
            running("ml/train-b", "cce-node-1", [1], 12, owner="Job/ml/train-b"),
            running("ml/notebook-c", "cce-node-1", [2], 8),
            running("ml/small", "spare", [0], 4),
            running("kube-system/probe", "b", [0], 8),
            pending("web/infer-1", 2, 8),
            pending("web/infer-2", 2, 8),
        ],
    )


def test_a_pod_whose_budget_allows_none_is_never_evicted() -> None:
    free = plan(cce())
    assert [p.evict for p in free.plans] == [("ml/train-a",)]
    for value in ("train:0", "train,other:0"):
        cluster = cce(annotations={BUDGET: value})
        report = plan(cluster)
        check_report(cluster, report)  # the checker refuses a budget-0 pod on its own
        evicted = {name for p in report.plans for name in p.evict}
        assert "ml/train-a" not in evicted
        assert evicted == {"ml/train-b"}  # the other way to the same rescue
    allowing = cce(annotations={BUDGET: "train:1"})
    assert [p.evict for p in plan(allowing).plans] == [("ml/train-a",)]


def two_on_one_card(a: str | None, b: str | None) -> Cluster:
    """t/p needs the 16 GiB card that t/a and t/b share; the only plan evicts both (they
    land on c's 8 GiB cards, where t/p cannot)."""

    def budget(value: str | None) -> dict[str, Any]:
        return {"annotations": {BUDGET: value}} if value else {}

    return build(
        [node("a", 16), node("c", 8, 8, 8)],
        [
            running("t/a", "a", [0], 8, owner="ReplicaSet/t/w", **budget(a)),
            running("t/b", "a", [0], 8, owner="ReplicaSet/t/w", **budget(b)),
            pending("t/p", 1, 16),
        ],
    )


@pytest.mark.parametrize(
    ("a", "b", "planned"),
    [
        (None, None, True),
        ("web:2", "web:2", True),
        ("web:1", "other:1", True),  # two budgets, one eviction each
        ("web:1", "web:1", False),  # one budget of 1 cannot pay for both
    ],
)
def test_a_plan_never_evicts_more_pods_under_a_budget_than_it_allows(
    a: str | None, b: str | None, planned: bool
) -> None:
    cluster = two_on_one_card(a, b)
    report = plan(cluster)
    check_report(cluster, report)
    if planned:
        assert [(p.rescues, sorted(p.evict)) for p in report.plans] == [(("t/p",), ["t/a", "t/b"])]
    else:
        assert report.plans == ()
        assert [u.pod for u in report.unresolved] == ["t/p"]


def test_the_checker_catches_a_plan_over_budget() -> None:
    """The checker's budget rule bites: the plan made for two budgets of 2 fails it once
    the pods share a budget of 1."""
    report = plan(two_on_one_card("web:2", "web:2"))
    with pytest.raises(AssertionError, match="evicts 2 pods under t/web"):
        check_report(two_on_one_card("web:1", "web:1"), report)


# -- scale-down ---------------------------------------------------------------------------


def idle_pair(*budgets: str | None) -> Cluster:
    """n1 (one 2 GiB pod per budget given, on 32 GiB) would go, its pods moving to n2."""
    pods = [
        running(f"a/x{i}", "n1", [i], 2, **({"annotations": {BUDGET: b}} if b else {}))
        for i, b in enumerate(budgets)
    ]
    return build([node("n1", 16, 16), node("n2", 16, 16)], [*pods, running("a/y", "n2", [0], 12)])


def held(cluster: Cluster) -> list[tuple[str, str, str]]:
    return [(h.node, h.reason, h.detail) for h in scale_down_advice(cluster).held]


def test_a_gpu_pod_whose_budget_allows_none_holds_its_node() -> None:
    assert [s.node for s in scale_down(idle_pair("web:1"))] == ["n1"]
    cluster = idle_pair("web:0")
    assert scale_down(cluster) == ()
    assert held(cluster) == [
        ("n1", "gpu-pod-not-movable", "a/x0: disruption budget web allows 0 disruptions")
    ]


def test_more_gpu_pods_under_a_budget_than_it_allows_hold_the_node() -> None:
    assert [s.node for s in scale_down(idle_pair("web:2", "web:2"))] == ["n1"]
    assert [s.node for s in scale_down(idle_pair("web:1", "db:1"))] == ["n1"]
    cluster = idle_pair("web:1", "web:1")
    assert scale_down(cluster) == ()
    [(name, reason, detail)] = held(cluster)
    assert (name, reason) == ("n1", "gpu-pod-not-movable")
    assert detail == "a/x0: disruption budget web allows 1, 2 pods on the node (and 1 more GPU pod)"


def test_a_budget_is_shared_by_the_removals_of_one_advice() -> None:
    """Two idle nodes each with one pod under a budget of 1: the first removal spends it,
    so the second node stays (the autoscaler counts a budget across its removal loop)."""
    cluster = build(
        [node("n1", 16), node("n2", 16), node("big", 16, 16, 16, 16)],
        [
            running("a/x1", "n1", [0], 1, annotations={BUDGET: "web:1"}),
            running("a/x2", "n2", [0], 2, annotations={BUDGET: "web:1"}),
            running("a/y", "big", [0], 12),
        ],
    )
    assert [s.node for s in scale_down(cluster)] == ["n1"]
    assert {name: (reason, detail) for name, reason, detail in held(cluster)}["n2"] == (
        "gpu-pod-not-movable",
        "a/x2: disruption budget web allows 1, 1 pod on the node and 1 moved by earlier removals",
    )
    budget_of_two = build(
        [node("n1", 16), node("n2", 16), node("big", 16, 16, 16, 16)],
        [
            running("a/x1", "n1", [0], 1, annotations={BUDGET: "web:2"}),
            running("a/x2", "n2", [0], 2, annotations={BUDGET: "web:2"}),
            running("a/y", "big", [0], 12),
        ],
    )
    assert [s.node for s in scale_down(budget_of_two)] == ["n1", "n2"]

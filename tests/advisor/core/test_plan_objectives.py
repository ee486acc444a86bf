"""The greedy's second run (most GPUs first) and how `plan` picks between its runs."""

from __future__ import annotations

from typing import Any

from advisor.core.model import Cluster
from advisor.core.plan import PlanOptions, plan
from tests.advisor.core.test_plan_checker import GiB, build, check_report, node

# (name, node, cards, gpus, GiB, core %, priority, do-not-disrupt)
PodRow = tuple[str, str | None, list[int] | None, int, int, int, int, bool]
PODS: list[PodRow] = [
    ("web/p0", "n0", [0], 1, 4, 30, 10, False),
    ("kube-system/p2", "n0", [0], 1, 8, 10, 0, False),
    ("ml/p3", "n3", [3], 1, 8, 0, 0, False),
    ("ml/p4", "n2", [0], 1, 2, 0, 0, False),
    ("web/p6", "n3", [0], 1, 8, 0, 10, False),
    ("ml/p7", "n0", [1], 1, 2, 0, 10, False),
    ("ml/p8", "n0", [2], 1, 8, 0, 10, False),
    ("ml/p9", "n1", [0], 1, 8, 10, 0, False),
    ("ml/p10", "n0", [3], 1, 6, 10, 0, False),
    ("kube-system/p11", "n2", [0], 1, 6, 0, 0, False),
    ("ml/p12", "n3", [0, 3], 2, 8, 0, 10, True),
    ("kube-system/p13", "n3", [1], 1, 4, 0, 0, False),
    ("web/p15", "n1", [3], 1, 2, 0, 0, False),
    ("kube-system/p16", "n1", [1], 1, 4, 0, 10, False),
    ("web/p100", None, None, 1, 16, 30, 0, True),
    ("ml/p101", None, None, 2, 24, 0, 10, False),
    ("ml/p102", None, None, 1, 16, 0, 0, True),
    ("web/p103", None, None, 1, 12, 0, 0, False),
]


def _pod(row: PodRow) -> dict[str, Any]:
    name, on, cards, gpus, gib, core, priority, protect = row
    pod: dict[str, Any] = {
        "name": name,
        "request": {"gpus": gpus, "memory_mib": gib * GiB, "core_percent": core},
        "priority": priority,
    }
    if on is not None:
        pod.update(node=on, cards=cards)
    if protect:
        pod["annotations"] = {"xgpu.io/do-not-disrupt": "true"}
    return pod


def cheap_first_spends_the_room() -> Cluster:
    """Found by searching random fragmented clusters: the cheapest plan first (one eviction
    for the 16 GiB core pod) leaves no room for the second 16 GiB pod; committing the most
    valuable simulated plan first rescues all three pods that can run."""
    return build(
        [
            node("n0", 16, 16, 16, 8),
            node("n1", 16, 8, 8, 8),
            node("n2", 16),
            node("n3", 16, 8, 8, 16),
        ],
        [_pod(row) for row in PODS],
        policy={"node": "spread", "card": "spread"},
        max_vgpus_per_card=4,
    )


def test_only_the_first_run_when_no_further_work_is_allowed() -> None:
    cluster = cheap_first_spends_the_room()
    report = plan(cluster, PlanOptions(portfolio_evaluations=0))
    check_report(cluster, report)
    assert sorted(n for p in report.plans for n in p.rescues) == ["ml/p101", "web/p100"]
    assert report.rescued_mib == 40 * GiB


def test_the_run_that_rescues_most_wins_and_every_plan_holds() -> None:
    cluster = cheap_first_spends_the_room()
    report = plan(cluster)
    check_report(cluster, report)
    assert sorted(n for p in report.plans for n in p.rescues) == ["ml/p101", "ml/p102", "web/p100"]
    assert report.rescued_mib == 56 * GiB
    assert report.evictions == 5
    assert report == plan(cluster)  # still deterministic


def test_a_tie_keeps_the_first_run() -> None:
    """Both runs rescue the same here; the first (fewest evictions per GPU) run's plans are
    reported, with the work of both counted."""
    cluster = build(
        [node("a", 16), node("s", 16)],
        [
            {
                "name": "t/v",
                "node": "a",
                "cards": [0],
                "request": {"gpus": 1, "memory_mib": 8 * GiB},
            },
            {
                "name": "t/r",
                "node": "s",
                "cards": [0],
                "request": {"gpus": 1, "memory_mib": 4 * GiB},
            },
            {"name": "t/p", "request": {"gpus": 1, "memory_mib": 16 * GiB}},
        ],
    )
    first = plan(cluster, PlanOptions(portfolio_evaluations=0))
    both = plan(cluster)
    check_report(cluster, both)
    assert both.plans == first.plans
    assert both.evaluations > first.evaluations

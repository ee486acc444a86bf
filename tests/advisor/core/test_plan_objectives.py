"""The greedy's further runs (most GPUs first; fewest large holes used up) and how `plan`
picks between its runs."""

from __future__ import annotations

from typing import Any

from advisor.core.model import Cluster
from advisor.core.plan import PlanOptions, plan
from tests.advisor.core.test_plan_checker import (
    GiB,
    build,
    check_report,
    node,
    pending,
    running,
)

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


def cheap_plans_fill_the_large_hole() -> Cluster:
    """Found by searching random fragmented clusters: the cheapest plan for the 6 GiB pod
    (one small eviction, ml/p29) puts the evicted pod in the room the 12 GiB pod's plan
    needs for its own evicted pods, which must then move ml/p29 a second time; the third
    run ("holes": cost plus large holes used up per GPU) rescues the 6 GiB pod by moving a
    5 GiB pod elsewhere, and then the 12 GiB one with two evictions: the same rescue with
    one eviction fewer."""
    placed = [
        ("ml/p0", "n0", 0, 4),
        ("ml/p2", "n0", 0, 8),
        ("ml/p3", "n1", 0, 6),
        ("ml/p6", "n0", 1, 6),
        ("ml/p8", "n1", 1, 8),
        ("ml/p11", "n1", 1, 8),
        ("ml/p12", "n0", 2, 4),
        ("ml/p13", "n0", 2, 5),
        ("ml/p14", "n0", 3, 5),
        ("ml/p15", "n1", 2, 6),
        ("ml/p17", "n1", 2, 4),
        ("ml/p29", "n0", 2, 2),
        ("ml/p38", "n1", 2, 2),
    ]
    waiting = [("ml/p100", 6), ("ml/p101", 12), ("ml/p102", 10), ("ml/p103", 8)]
    waiting += [("ml/p104", 6), ("ml/p105", 16)]
    return build(
        [node("n0", 16, 16, 16, 16), node("n1", 16, 16, 16)],
        [
            *(running(name, on, [card], gib) for name, on, card, gib in placed),
            *(pending(name, 1, gib) for name, gib in waiting),
        ],
        policy={"node": "spread", "card": "binpack"},
        max_vgpus_per_card=4,
    )


def test_the_holes_run_keeps_the_large_hole_for_the_bigger_pod() -> None:
    cluster = cheap_plans_fill_the_large_hole()
    two_runs = plan(cluster, PlanOptions(portfolio_evaluations=20))  # ratio, then value
    check_report(cluster, two_runs)
    assert [p.rescues for p in two_runs.plans] == [("ml/p104",), ("ml/p101",)]
    assert [p.evict for p in two_runs.plans] == [("ml/p29",), ("ml/p2", "ml/p17", "ml/p29")]
    report = plan(cluster)
    check_report(cluster, report)
    assert [p.rescues for p in report.plans] == [("ml/p104",), ("ml/p101",)]
    assert [p.evict for p in report.plans] == [("ml/p14",), ("ml/p2", "ml/p17")]
    assert report.rescued_mib == two_runs.rescued_mib == 18 * GiB
    assert (report.evictions, two_runs.evictions) == (3, 4)  # equal rescue: the cheaper wins
    assert report == plan(cluster)  # deterministic

"""Why scale-down keeps an idle node: one reason per node below the threshold, naming the
pod or node behind it, as the cluster-autoscaler gives each unremovable node one."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.model import Cluster
from advisor.core.scaling.down import HELD_REASONS, scale_down, scale_down_advice
from advisor.output.scaling import held_node_json
from tests.advisor.core.scaledown_replay import replay_steps
from tests.advisor.core.scenario_dicts import GiB, build
from tests.advisor.core.test_plan_checker import node, running


def held_of(cluster: Cluster, threshold: float = 0.3) -> list[tuple[str, float, str, str]]:
    advice = scale_down_advice(cluster, threshold)
    # the nodes that go are judged on their own: each replays as the scheduler would place it
    replay_steps(cluster, advice.steps, threshold)
    assert not {s.node for s in advice.steps} & {h.node for h in advice.held}
    return [(h.node, h.utilisation, h.reason, h.detail) for h in advice.held]


def pinned_pair(name: str, **extra: Any) -> Cluster:
    """n1 (4 of 32 GiB used by `name`) would go, its pod moving to n2, were the pod movable."""
    return build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running(name, "n1", [0], 4, **extra), running("a/y", "n2", [0], 12)],
    )


@pytest.mark.parametrize(
    ("name", "annotations", "why"),
    [
        ("kube-system/probe", {}, "kube-system pod"),
        ("a/x", {"xgpu.io/do-not-disrupt": "true"}, "xgpu.io/do-not-disrupt: true"),
        (
            "a/x",
            {"cluster-autoscaler.kubernetes.io/safe-to-evict": "False"},
            "cluster-autoscaler.kubernetes.io/safe-to-evict: false",
        ),
    ],
)
def test_an_unmovable_gpu_pod_is_named(name: str, annotations: dict[str, str], why: str) -> None:
    cluster = pinned_pair(name, annotations=annotations)
    assert held_of(cluster) == [("n1", 0.125, "gpu-pod-not-movable", f"{name}: {why}")]
    # The same pod movable: n1 goes and nothing is held.
    assert held_of(pinned_pair("a/x")) == []
    assert [s.node for s in scale_down(pinned_pair("a/x"))] == ["n1"]


def test_the_first_unmovable_pod_by_name_and_a_count_of_the_rest() -> None:
    cluster = build(
        [node("n1", 16, 16, 16, 16), node("n2", 16, 16)],
        [
            running("kube-system/b", "n1", [0], 2),
            running("kube-system/a", "n1", [1], 2),
            running("kube-system/c", "n1", [2], 2),
            running("a/y", "n2", [0], 12),
        ],
    )
    [(_, _, reason, detail)] = held_of(cluster)
    assert (reason, detail) == (
        "gpu-pod-not-movable",
        "kube-system/a: kube-system pod (and 2 more GPU pods)",
    )


def test_a_blocking_other_pod_is_named_with_its_reason() -> None:
    n1 = node("n1", 16, 16)
    n1["other_pods"] = [
        {"name": "web/api"},
        {"name": "web/cache", "blocks": "local storage: volume data"},
    ]
    cluster = build(
        [n1, node("n2", 16, 16)], [running("a/x", "n1", [0], 4), running("a/y", "n2", [0], 12)]
    )
    assert held_of(cluster) == [
        ("n1", 0.125, "blocked-by-pod", "web/cache: local storage: volume data")
    ]


def test_an_unmovable_gpu_pod_comes_before_a_blocking_other_pod() -> None:
    n1 = node("n1", 16, 16)
    n1["other_pods"] = [{"name": "web/bare", "blocks": "not replicated"}]
    cluster = build(
        [n1, node("n2", 16, 16)],
        [running("kube-system/x", "n1", [0], 4), running("a/y", "n2", [0], 12)],
    )
    assert [h[2] for h in held_of(cluster)] == ["gpu-pod-not-movable"]


def test_a_gpu_pod_with_no_place_left_is_named() -> None:
    """n1's 8 GiB pod (25% of n1) cannot go to n2, whose one card has 6 GiB free."""
    cluster = build(
        [node("n1", 16, 16), node("n2", 16)],
        [running("a/x", "n1", [0], 8), running("a/y", "n2", [0], 10)],
    )
    assert held_of(cluster) == [
        ("n1", 0.25, "pods-do-not-fit", "a/x (1 × 8192 MiB) finds no place on the other nodes")
    ]


def test_a_pending_pod_that_would_lose_its_place_is_named() -> None:
    cluster = build(
        [node("n1", 16), node("n2", 16)],
        [
            running("a/y", "n2", [0], 12),
            {"name": "p/w", "request": {"gpus": 1, "memory_mib": 16 * GiB}},
        ],
    )
    assert held_of(cluster) == [
        ("n1", 0.0, "pending-would-stop-fitting", "Pending p/w would no longer be scheduled")
    ]


def test_an_earlier_removal_can_lift_a_node_over_the_threshold() -> None:
    """n1's 2 GiB pod can only go to n2 (n3 is full): n2 rises from 25% to 37.5%."""
    cluster = build(
        [node("n1", 16), node("n2", 16), node("n3", 16)],
        [running("a/1", "n1", [0], 2), running("a/2", "n2", [0], 4), running("a/3", "n3", [0], 16)],
    )
    advice = scale_down_advice(cluster)
    assert [s.node for s in advice.steps] == ["n1"]
    assert [held_node_json(h) for h in advice.held] == [
        {
            "node": "n2",
            "utilisation": 0.25,
            "reason": "utilisation-rose",
            "detail": "removing n1 moves pods onto it: 37.5% then, not below the 30% threshold",
        }
    ]


def test_held_nodes_come_least_utilised_first() -> None:
    cluster = build(
        [node("n3", 16), node("n1", 16), node("n2", 16), node("big", 16, 16)],
        [
            running("kube-system/c", "n3", [0], 4),
            running("kube-system/a", "n1", [0], 1),
            running("kube-system/b", "n2", [0], 1),
            running("a/y", "big", [0, 1], 24),
        ],
    )
    held = scale_down_advice(cluster).held
    assert [(h.node, h.utilisation) for h in held] == [("n1", 0.0625), ("n2", 0.0625), ("n3", 0.25)]
    assert {h.reason for h in held} <= set(HELD_REASONS)

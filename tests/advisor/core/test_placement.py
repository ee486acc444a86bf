"""Placement: card and node policies, eligibility rules, queue order (docs/design.md §1–§2)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Placement
from tests.advisor.core.scenario_dicts import GiB, build, node, running


def pending(name: str, gpus: int, gib: int, core: int = 0, priority: int = 0) -> dict[str, Any]:
    request = {"gpus": gpus, "memory_mib": gib * GiB, "core_percent": core}
    return {"name": name, "request": request, "priority": priority}


def placements(cluster: Cluster) -> dict[str, Placement | None]:
    return {d.pod.name: d.placement for d in diagnose(cluster).pods}


def cce_example(card_policy: str) -> Cluster:
    """CCE's docs: cards with 4, 4 and 8 GiB free; two replicas of 2 cards x 4 GiB."""
    return build(
        [node("n1", 16, 16, 16)],
        [
            running("ml/a", "n1", [0], 12),
            running("ml/b", "n1", [1], 12),
            running("ml/c", "n1", [2], 8),
            pending("web/r1", 2, 8),
            pending("web/r2", 2, 8),
        ],
        policy={"node": "binpack", "card": card_policy},
    )


def test_cce_example_card_binpack_strands_the_second_replica() -> None:
    result = diagnose(cce_example("binpack"))
    first, second = result.pods
    assert first.placement == Placement("n1", (0, 1))
    assert second.cause == "fragmentation"
    assert second.node_reasons == (
        (
            "n1",
            (
                "too-few-cards: 1 of 2 cards eligible",
                "card-memory: cards 0, 1 have less than 4096 MiB free",
            ),
        ),
    )
    assert second.node_summary == "0/1 nodes are unavailable: 1 too-few-cards."


def test_cce_example_card_spread_places_both() -> None:
    result = diagnose(cce_example("spread"))
    assert [d.cause for d in result.pods] == ["schedulable", "schedulable"]
    assert result.pods[0].placement == Placement("n1", (0, 2))  # most free: card 2, then 0 by index
    assert result.pods[1].placement == Placement("n1", (1, 2))


@pytest.mark.parametrize(("policy", "expected"), [("binpack", "busy"), ("spread", "idle")])
def test_node_policy_by_mean_allotted_fraction(policy: str, expected: str) -> None:
    cluster = build(
        [node("idle", 16, 16), node("busy", 16, 16)],
        [running("x/a", "busy", [0], 8), pending("x/p", 1, 4)],
        policy={"node": policy, "card": "binpack"},
    )
    assert placements(cluster)["x/p"] == Placement(expected, (0,))


def test_node_binpack_scores_after_placement_on_healthy_cards_only() -> None:
    # small: 1 healthy 8 GiB card, 4 GiB pod -> 50 %; big: two 16 GiB cards -> 12.5 %.
    cluster = build(
        [node("big", 16, 16), node("small", 8, 8, unhealthy=(1,))],
        [pending("x/p", 1, 4)],
    )
    assert placements(cluster)["x/p"] == Placement("small", (0,))


def test_node_ties_break_by_name_whatever_the_listing_order() -> None:
    for order in (["b", "a", "c"], ["c", "b", "a"]):
        cluster = build([node(n, 16) for n in order], [pending("x/p", 1, 4)])
        assert placements(cluster)["x/p"] == Placement("a", (0,))


def test_card_binpack_takes_least_free_and_spread_most_free() -> None:
    nodes = [node("n1", 16, 16, 16, 16)]
    pods = [running("x/a", "n1", [1], 8), running("x/b", "n1", [3], 4), pending("x/p", 1, 2)]
    assert placements(build(nodes, pods))["x/p"] == Placement("n1", (1,))
    spread = build(nodes, pods, policy={"card": "spread"})
    assert placements(spread)["x/p"] == Placement("n1", (0,))


def test_card_ties_break_by_index() -> None:
    cluster = build([node("n1", 16, 16, 16)], [pending("x/p", 2, 8)])
    assert placements(cluster)["x/p"] == Placement("n1", (0, 1))


def test_unhealthy_cards_host_nothing() -> None:
    cluster = build(
        [node("n1", 16, 16, unhealthy=(0,))], [pending("x/p", 1, 4), pending("x/q", 2, 4)]
    )
    result = placements(cluster)
    assert result["x/p"] == Placement("n1", (1,))
    assert result["x/q"] is None


def test_a_card_hosts_one_mode_only() -> None:
    cluster = build(
        [node("n1", 16, 16)],
        [
            running("x/core", "n1", [0], 4, core=20),
            pending("x/mem", 1, 2),
            pending("x/core2", 1, 2, core=10),
        ],
    )
    result = placements(cluster)
    assert result["x/mem"] == Placement("n1", (1,))  # card 0 is in memory+core isolation
    assert result["x/core2"] == Placement("n1", (0,))


def test_core_isolation_needs_free_core() -> None:
    cluster = build(
        [node("n1", 16, 16)],
        [running("x/a", "n1", [0], 2, core=90), pending("x/p", 1, 2, core=20)],
    )
    assert placements(cluster)["x/p"] == Placement("n1", (1,))


def test_vgpu_limit_per_card() -> None:
    pods = [running(f"x/r{i}", "n1", [0], 1) for i in range(3)] + [pending("x/p", 1, 1)]
    cluster = build([node("n1", 16, 16)], pods, max_vgpus_per_card=3)
    assert placements(cluster)["x/p"] == Placement("n1", (1,))


def test_queue_order_priority_first_then_creation() -> None:
    cluster = build(
        [node("n1", 16)],
        [pending("x/early", 1, 16), pending("x/late-high", 1, 16, priority=10)],
    )
    result = diagnose(cluster)
    assert [d.pod.name for d in result.pods] == ["x/late-high", "x/early"]
    assert result.pods[0].placement == Placement("n1", (0,))
    assert result.pods[1].cause == "capacity"


def test_each_pending_pod_sees_the_placements_before_it() -> None:
    cluster = build([node("n1", 16)], [pending("x/a", 1, 10), pending("x/b", 1, 10)])
    result = diagnose(cluster)
    assert [d.cause for d in result.pods] == ["schedulable", "capacity"]  # 6 GiB left


def test_default_limit_is_20_vgpus_per_card() -> None:
    pods = [
        {"name": f"x/r{i}", "node": "n1", "cards": [0], "request": {"gpus": 1, "memory_mib": 128}}
        for i in range(20)
    ]
    cluster = build([node("n1", 16, 16)], [*pods, pending("x/p", 1, 1)])
    assert cluster.max_vgpus_per_card == 20
    assert placements(cluster)["x/p"] == Placement("n1", (1,))  # card 0 is full at 20 vGPUs
    one_more = build([node("n1", 16)], [*pods, pending("x/p", 1, 1)])
    (verdict,) = diagnose(one_more).pods
    assert verdict.cause == "fragmentation"
    assert verdict.node_reasons == (("n1", ("vgpu-limit: card 0 has 20 vGPUs (the limit)",)),)

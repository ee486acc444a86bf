"""Causes, per-node reasons and their counts (docs/design.md §3)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.diagnose import REASONS, diagnose
from advisor.core.diagnosis import PodDiagnosis
from advisor.core.model import Cluster
from advisor.scenario import load_scenario
from tests.advisor.core.scenario_dicts import GiB, build, node, running
from tests.realparts import DEMO


def pending(name: str, gpus: int, mib: int, core: int = 0) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "memory_mib": mib, "core_percent": core}}


def only(cluster: Cluster) -> PodDiagnosis:
    (result,) = diagnose(cluster).pods
    return result


@pytest.mark.parametrize(
    ("gpus", "mib", "core", "fragment"),
    [
        (2, 1000, 0, "not a whole multiple of 128 MiB per card"),
        (1, 64, 0, "outside 1..16384 units"),
        (1, 16385 * 128, 0, "outside 1..16384 units"),
        (3, 4096, 0, "not a whole multiple of 128 MiB per card"),
        (2, 4096, 15, "not a whole multiple of 5% per card"),
        (1, 4096, 7, "not a whole multiple of 5% per card"),
        (1, 4096, 105, "above 100%"),
    ],
)
def test_invalid_requests_say_which_rule(gpus: int, mib: int, core: int, fragment: str) -> None:
    result = only(build([node("n1", 16)], [pending("x/p", gpus, mib, core)]))
    assert result.cause == "invalid"
    assert fragment in result.message
    assert result.placement is None


def test_unsatisfiable_counts_unhealthy_cards_as_repaired() -> None:
    nodes = [node("n1", 16, 16, unhealthy=(1,)), node("n2", 8)]
    assert only(build(nodes, [pending("x/p", 3, 3 * 8 * GiB)])).cause == "unsatisfiable"
    assert only(build(nodes, [pending("x/p", 1, 32 * GiB)])).cause == "unsatisfiable"
    # Two 16 GiB cards exist on n1 (one broken): not unsatisfiable, just no room now.
    assert only(build(nodes, [pending("x/p", 2, 2 * 16 * GiB)])).cause == "capacity"


def test_fragmentation_when_node_free_total_suffices_but_split_wrongly() -> None:
    result = only(
        build(
            [node("n1", 16, 16)],
            [
                running("x/a", "n1", [0], 12),
                running("x/b", "n1", [1], 12),
                pending("x/p", 1, 8 * GiB),
            ],
        )
    )
    assert result.cause == "fragmentation"
    assert "n1 has 8192 MiB free over 2 healthy cards" in result.message
    assert result.reason_counts == (("card-memory", 1),)


def test_fragmentation_blocked_by_mode() -> None:
    result = only(
        build([node("n1", 16)], [running("x/a", "n1", [0], 4, core=10), pending("x/p", 1, 4 * GiB)])
    )
    assert result.cause == "fragmentation"
    assert result.node_reasons[0][1][0].startswith("mode-conflict: card 0 host")


def test_fragmentation_blocked_by_vgpu_limit() -> None:
    pods = [running(f"x/r{i}", "n1", [0], 1) for i in range(2)] + [pending("x/p", 1, GiB)]
    result = only(build([node("n1", 16)], pods, max_vgpus_per_card=2))
    assert result.cause == "fragmentation"
    assert result.node_reasons == (("n1", ("vgpu-limit: card 0 has 2 vGPUs (the limit)",)),)


def test_fragmentation_needs_core_in_total_too() -> None:
    pods = [running("x/a", "n1", [0], 2, core=60), running("x/b", "n1", [1], 2, core=60)]
    frag = only(build([node("n1", 16, 16)], [*pods, pending("x/p", 1, GiB, core=80)]))
    assert frag.cause == "fragmentation"  # 80 % free in total, 40 % per card
    assert frag.node_reasons[0][1] == ("card-core: cards 0, 1 have less than 80% core free",)
    cap = only(build([node("n1", 16, 16)], [*pods, pending("x/p", 2, 2 * GiB, core=100)]))
    assert cap.cause == "capacity"  # 80 % free in total < 100 %


def test_capacity_with_cluster_free_sufficient() -> None:
    cluster = build(
        [node("n1", 16), node("n2", 16)],
        [running("x/a", "n1", [0], 8), running("x/b", "n2", [0], 8), pending("x/p", 1, 12 * GiB)],
    )
    result = only(cluster)
    assert result.cause == "capacity"
    assert result.cluster_free_sufficient is True
    assert (
        "16384 MiB free in all on the 2 healthy cards big enough for it (enough if consolidated)"
        in result.message
    )


def test_consolidation_counts_only_cards_that_could_hold_a_slice() -> None:
    """n1's two empty 16 GiB cards can never hold a 20 GiB slice; n2's and n3's 40 GiB cards
    have 15 GiB free each. All the free memory (62 GiB) would cover the pod, but only the
    30 GiB on the big cards can ever be rearranged into room for it: enough if consolidated,
    counted on those 2 cards, and n1 is no fragmentation of it."""
    cluster = build(
        [node("n1", 16, 16), node("n2", 40), node("n3", 40)],
        [
            running("x/a", "n2", [0], 25),
            running("x/b", "n3", [0], 25),
            pending("x/p", 1, 20 * GiB),
        ],
    )
    result = only(cluster)
    assert (result.cause, result.cluster_free_sufficient) == ("capacity", True)
    assert result.message.endswith(
        "the cluster has 30720 MiB free in all on the 2 healthy cards big enough for it "
        "(enough if consolidated)"
    )


def test_free_memory_on_cards_too_small_is_not_enough() -> None:
    """ml/finetune-0's case by hand: n1's 16 GiB cards have 32 GiB free, n2's 40 GiB card
    15 GiB; the 20 GiB pod fits only on n2's card, where 15 GiB is not enough. Before, the
    small cards' free memory called this fragmentation on n1 (rebalance, do not add nodes)."""
    cluster = build(
        [node("n1", 16, 16), node("n2", 40)],
        [running("x/a", "n2", [0], 25), pending("x/p", 1, 20 * GiB)],
    )
    result = only(cluster)
    assert (result.cause, result.cluster_free_sufficient) == ("capacity", False)
    assert result.message.endswith(
        "the cluster has 15360 MiB free in all on the 1 healthy card big enough for it (not enough)"
    )
    assert result.movable_free_sufficient is True  # the planner still looks for moves


def test_capacity_without_cluster_free_sufficient() -> None:
    cluster = build([node("n1", 16)], [running("x/a", "n1", [0], 10), pending("x/p", 1, 8 * GiB)])
    result = only(cluster)
    assert result.cause == "capacity"
    assert result.cluster_free_sufficient is False


def test_unhealthy_free_memory_is_not_fragmentation() -> None:
    cluster = build(
        [node("n1", 16, 16, unhealthy=(1,))],
        [running("x/a", "n1", [0], 12), pending("x/p", 1, 8 * GiB)],
    )
    result = only(cluster)
    assert result.cause == "capacity"
    assert result.cluster_free_sufficient is False
    # One card each: ties go in check order, unhealthy first.
    assert result.node_reasons[0][1] == (
        "unhealthy: card 1 is unhealthy",
        "card-memory: card 0 has less than 8192 MiB free",
    )


def test_too_few_cards_on_the_node() -> None:
    result = only(build([node("n1", 16), node("n2", 16, 16)], [pending("x/p", 2, 2 * 32 * GiB)]))
    assert result.cause == "unsatisfiable"
    result = only(
        build(
            [node("n1", 16), node("n2", 16, 16, unhealthy=(1,))], [pending("x/p", 2, 2 * 8 * GiB)]
        )
    )
    assert result.cause == "capacity"
    assert dict(result.node_reasons)["n1"] == ("too-few-cards: node has 1 card, 2 needed",)
    assert result.node_summary == "0/2 nodes are unavailable: 2 too-few-cards."


def test_reason_counts_like_the_autoscaler() -> None:
    cluster = build(
        [node("a", 16), node("b", 16), node("c", 16), node("d", 16, unhealthy=(0,))],
        [
            running("x/a", "a", [0], 12),
            running("x/b", "b", [0], 12),
            running("x/c", "c", [0], 2, core=10),
            pending("x/p", 1, 16 * GiB),
        ],
    )
    result = only(cluster)
    assert (
        result.node_summary
        == "0/4 nodes are unavailable: 1 mode-conflict, 1 unhealthy, 2 card-memory."
    )
    assert {r for r, _ in result.reason_counts} <= set(REASONS)


def test_node_detail_limit_keeps_counts_for_all_nodes() -> None:
    nodes = [node(f"n{i:02d}", 16) for i in range(30)]
    pods = [running(f"x/r{i}", f"n{i:02d}", [0], 16) for i in range(30)] + [pending("x/p", 1, GiB)]
    cluster = build(nodes, pods)
    limited = diagnose(cluster, node_detail_limit=5).pods[0]
    assert len(limited.node_reasons) == 5
    assert limited.nodes_omitted == 25
    assert limited.node_summary == "0/30 nodes are unavailable: 30 card-memory."
    full = diagnose(cluster, node_detail_limit=None).pods[0]
    assert len(full.node_reasons) == 30
    assert full.nodes_omitted == 0


def test_summary_counts_every_cause() -> None:
    # n1 allows 4 cpus; x/a takes 3. x/ok asks no cpu (not checked) and takes 2 GiB of
    # card 0 (4 GiB free); x/cpu's 2 GiB would fit card 0 too, but 1 cpu is left of the 2
    # it asks: node-resources.
    n1 = {**node("n1", 16, 16), "allocatable": {"cpu": "4"}}
    cluster = build(
        [n1],
        [
            {**running("x/a", "n1", [0], 12), "resources": {"cpu": "3"}},
            running("x/b", "n1", [1], 12),
            pending("x/ok", 1, 2 * GiB),
            {**pending("x/cpu", 1, 2 * GiB), "resources": {"cpu": "2"}},
            pending("x/frag", 1, 5 * GiB),
            pending("x/cap", 1, 12 * GiB),
            pending("x/unsat", 4, 4 * GiB),
            pending("x/bad", 1, 100),
        ],
    )
    summary = diagnose(cluster).summary
    assert summary == {
        "pending": 6,
        "schedulable": 1,
        "node-resources": 1,
        "fragmentation": 1,
        "capacity": 1,
        "unsatisfiable": 1,
        "invalid": 1,
    }


def test_demo_finetune_is_not_enough_on_the_cards_that_could_hold_it() -> None:
    """ml/finetune-0 asks 2 x 20480 MiB: the T4s (16 GiB) never count; the A100 and V100
    cards that could hold a slice have 39,936 MiB free of the 40,960 needed."""
    diagnosis = diagnose(load_scenario(DEMO))
    (finetune,) = [d for d in diagnosis.pods if d.pod.name == "ml/finetune-0"]
    assert (finetune.cause, finetune.cluster_free_sufficient) == ("capacity", False)
    assert "39936 MiB free in all on the 5 healthy cards big enough for it (not enough)" in (
        finetune.message
    )

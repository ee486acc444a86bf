"""The full-repack optimum (`benchmarks.plan_ceiling`) on clusters small enough to solve by
hand, and its scope checks."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from advisor.core.model import Cluster
from advisor.scenario import scenario_from_data
from benchmarks.plan_ceiling import full_repack_optimum, maximal_patterns, node_configurations

GIB = 1024


def cluster(nodes: dict[str, int], pods: list[dict[str, Any]], **extra: Any) -> Cluster:
    """Nodes of 16 GiB cards (name -> card count) and pods in the scenario format."""
    data: dict[str, Any] = {
        "policy": {"node": "binpack", "card": "binpack"},
        "nodes": [
            {
                "name": name,
                "cards": [{"index": i, "memory_mib": 16 * GIB} for i in range(count)],
            }
            for name, count in nodes.items()
        ],
        "pods": pods,
        **extra,
    }
    return scenario_from_data(data, "test.yaml")


def pod(name: str, gib: int, gpus: int = 1, node: str | None = None, cards: Any = None) -> Any:
    entry: dict[str, Any] = {
        "name": f"ml/{name}",
        "request": {"gpus": gpus, "memory_mib": gib * GIB},
    }
    if node is not None:
        entry |= {"node": node, "cards": cards}
    return entry


def test_two_half_cards_merge_to_free_a_card_for_the_single_but_not_the_pair() -> None:
    # One node, two 16 GiB cards, each half used (8 GiB). Repacked, both halves share card 0
    # and card 1 is free: the 16 GiB single fits; the 2-card pod needs both cards, which the
    # 8 GiB pods never leave free. Optimum 16 of 16 + 32 GiB Pending = 1/3.
    c = cluster(
        {"n1": 2},
        [
            pod("a", 8, node="n1", cards=[0]),
            pod("b", 8, node="n1", cards=[1]),
            pod("single", 16),
            pod("pair", 32, gpus=2),
        ],
    )
    best = full_repack_optimum(c)
    assert best.status == "optimal"
    assert (best.rescued_mib, best.pending_mib) == (16 * GIB, 48 * GIB)
    assert best.share == pytest.approx(1 / 3)


def test_a_multi_card_pod_takes_a_whole_node_once_the_running_pods_share_one() -> None:
    # Two nodes of two cards, a 16 GiB pod running on card 0 of each: the 2-card pod finds
    # no node with two free cards. Repacked, both running pods take n1's cards and the pair
    # takes n2: 32 of 32 GiB Pending placed.
    c = cluster(
        {"n1": 2, "n2": 2},
        [
            pod("a", 16, node="n1", cards=[0]),
            pod("b", 16, node="n2", cards=[0]),
            pod("pair", 32, gpus=2),
        ],
    )
    best = full_repack_optimum(c)
    assert (best.rescued_mib, best.pending_mib) == (32 * GIB, 32 * GIB)


def test_a_pod_the_current_cycle_places_counts_as_running_not_pending() -> None:
    # n1's two cards are free: the pair is placed this cycle (no plan needed), so nothing
    # is Pending and the optimum has nothing to rescue.
    c = cluster({"n1": 2}, [pod("pair", 32, gpus=2)])
    assert full_repack_optimum(c).pending_mib == 0


def test_the_vgpu_count_per_card_limits_the_patterns() -> None:
    # Two 16 GiB cards with a 1 GiB pod each; a 16 GiB pod waits for an empty card. Merging
    # the two small pods onto one card frees the other, but only where a card has 2 vGPU
    # slots: with 1 slot per card nothing can be rescued, with 2 the 16 GiB pod is.
    pods = [pod("a", 1, node="n1", cards=[0]), pod("b", 1, node="n1", cards=[1]), pod("p", 16)]
    assert full_repack_optimum(cluster({"n1": 2}, pods, max_vgpus_per_card=1)).rescued_mib == 0
    two = full_repack_optimum(cluster({"n1": 2}, pods, max_vgpus_per_card=2))
    assert two.rescued_mib == 16 * GIB


def test_maximal_patterns_are_every_fill_nothing_more_fits_into() -> None:
    # Sizes 10 and 6 in a card of 16 with 20 slots: {10, 6}, {6, 6} (12: a 10 no longer
    # fits, a 6 no longer fits). {10} alone is not maximal (a 6 fits), nor {6} nor {}.
    found = maximal_patterns([10, 6], 16, 20)
    assert sorted(sorted(p.elements()) for p in found) == [[6, 6], [6, 10]]
    # One slot: every single size is maximal.
    assert sorted(sorted(p.elements()) for p in maximal_patterns([10, 6], 16, 1)) == [[6], [10]]


def test_node_configurations_count_whole_cards() -> None:
    # (8-card, 4-card, 2-card pods) a node of 4 cards can host at once.
    assert sorted(node_configurations(4)) == [
        (0, 0, 0),
        (0, 0, 1),
        (0, 0, 2),
        (0, 1, 0),
    ]
    assert Counter(sum(c) > 0 for c in node_configurations(8))[True] == 9


def test_out_of_scope_clusters_are_refused_with_a_reason() -> None:
    mixed = cluster({"n1": 1}, [pod("a", 1)])
    mixed_nodes = (
        mixed.nodes[0],
        mixed.nodes[0].__class__(
            name="n2",
            cards=(mixed.nodes[0].cards[0].__class__(index=0, memory_mib=32 * GIB),),
        ),
    )
    with pytest.raises(ValueError, match="one card memory"):
        full_repack_optimum(mixed.__class__(**{**_fields(mixed), "nodes": mixed_nodes}))
    split = cluster({"n1": 2}, [pod("half-cards", 16, gpus=2)])
    with pytest.raises(ValueError, match="whole-card"):
        full_repack_optimum(split)


def _fields(c: Cluster) -> dict[str, Any]:
    return {name: getattr(c, name) for name in c.__dataclass_fields__}

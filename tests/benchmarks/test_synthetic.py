"""The synthetic benchmark cluster is a valid scenario, the same every time."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace

import pytest

from advisor.core.model import Cluster, Mode, request_problem
from advisor.scenario import parse_text, scenario_from_data, scenario_to_data
from benchmarks.synthetic import CARDS_PER_NODE, SyntheticSpec, synthetic_cluster

SMALL = SyntheticSpec(
    nodes=60, running=420, pending=120, seed=11, unhealthy_share=0.05, mixed_node_share=0.2
)


@pytest.fixture(scope="module")
def small() -> Cluster:
    return synthetic_cluster(SMALL)


def card_tally(cluster: Cluster) -> dict[tuple[str, int], list[tuple[int, int, Mode]]]:
    """Per card, what each running pod on it takes: (MiB, core %, mode)."""
    tally: dict[tuple[str, int], list[tuple[int, int, Mode]]] = defaultdict(list)
    for pod in cluster.running:
        assert pod.placement is not None
        r = pod.request
        for index in pod.placement.cards:
            tally[(pod.placement.node, index)].append(
                (r.memory_mib // r.gpus, r.core_percent // r.gpus, r.mode)
            )
    return tally


def assert_valid(cluster: Cluster) -> None:
    cards = {(n.name, c.index): c for n in cluster.nodes for c in n.cards}
    for pod in cluster.running:
        assert pod.placement is not None
        assert request_problem(pod.request) is None, pod
        assert len(set(pod.placement.cards)) == pod.request.gpus, pod
    for key, vgpus in card_tally(cluster).items():
        card = cards[key]
        assert card.healthy, f"running pod on unhealthy card {key}"
        assert sum(m for m, _, _ in vgpus) <= card.memory_mib, f"{key} over-allotted"
        assert sum(c for _, c, _ in vgpus) <= 100, f"{key} core over-allotted"
        assert len({mode for _, _, mode in vgpus}) == 1, f"{key} mixes modes"
        assert len(vgpus) <= cluster.max_vgpus_per_card, f"{key} over the vGPU limit"


def test_has_the_asked_size(small: Cluster) -> None:
    assert len(small.nodes) == SMALL.nodes
    assert all([c.index for c in n.cards] == list(range(CARDS_PER_NODE)) for n in small.nodes)
    assert len(small.running) == SMALL.running
    assert len(small.pending) == SMALL.pending
    assert len({n.name for n in small.nodes}) == SMALL.nodes
    assert len({p.name for p in small.pods}) == len(small.pods)


def test_no_card_is_over_allotted_or_mixed(small: Cluster) -> None:
    assert_valid(small)


def test_round_trips_through_the_scenario_format(small: Cluster) -> None:
    # scenario_from_data re-checks every running pod (room, modes, vGPU limit) on the way in.
    assert scenario_from_data(scenario_to_data(small), "synthetic") == small
    text = json.dumps(scenario_to_data(small))
    assert scenario_from_data(parse_text(text, "synthetic.json"), "synthetic.json") == small


def test_same_spec_same_cluster_other_seed_other_cluster(small: Cluster) -> None:
    again = synthetic_cluster(SMALL)
    assert again == small
    assert scenario_to_data(again) == scenario_to_data(small)
    other = synthetic_cluster(replace(SMALL, seed=12))
    assert other != small


def test_mixes_what_the_benchmark_needs(small: Cluster) -> None:
    sizes = {c.memory_mib for n in small.nodes for c in n.cards}
    assert len(sizes) >= 4
    assert any(len({c.memory_mib for c in n.cards}) > 1 for n in small.nodes)
    assert any(not c.healthy for n in small.nodes for c in n.cards)
    assert {p.request.mode for p in small.running} == {Mode.MEMORY, Mode.MEMORY_CORE}
    assert {p.request.gpus for p in small.running} == {1, 2, 4, 8}
    assert len({p.priority for p in small.pending}) > 1
    largest = max(sizes)
    assert any(request_problem(p.request) for p in small.pending)
    assert any(p.request.memory_mib // p.request.gpus > largest for p in small.pending)


def test_the_benchmark_size_builds_validly() -> None:
    spec = SyntheticSpec()
    cluster = synthetic_cluster(spec)
    assert (len(cluster.nodes), len(cluster.running), len(cluster.pending)) == (
        5_000,
        30_000,
        2_000,
    )
    assert_valid(cluster)


def test_a_low_vgpu_limit_is_respected() -> None:
    spec = SyntheticSpec(nodes=20, running=120, pending=10, seed=5, max_vgpus_per_card=2)
    cluster = synthetic_cluster(spec)
    assert cluster.max_vgpus_per_card == 2
    assert_valid(cluster)
    assert max(len(v) for v in card_tally(cluster).values()) == 2

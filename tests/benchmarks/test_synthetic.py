"""The synthetic benchmark cluster is a valid scenario, the same every time."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Mode
from advisor.core.profiles import profile_for
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
        assert profile_for("cce").request_problem(pod.request) is None, pod
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
    assert any(profile_for("cce").request_problem(p.request) for p in small.pending)
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


# -- the whole-node variant (allocatable, labels, taints, requests, selectors) ---------------

WHOLE = replace(SMALL, nodes=300, running=1_800, pending=300, whole_node=True)


@pytest.fixture(scope="module")
def whole() -> Cluster:
    return synthetic_cluster(WHOLE)


def test_whole_node_moves_no_card_and_no_pod(whole: Cluster) -> None:
    plain = synthetic_cluster(replace(WHOLE, whole_node=False))
    assert [(n.name, n.cards) for n in whole.nodes] == [(n.name, n.cards) for n in plain.nodes]
    assert [(p.name, p.request, p.placement, p.priority) for p in whole.pods] == [
        (p.name, p.request, p.placement, p.priority) for p in plain.pods
    ]
    assert_valid(whole)


def test_whole_node_running_pods_fit_their_nodes(whole: Cluster) -> None:
    """Checked here, not by the core: the requests on each node stay within allocatable,
    and each running pod's selector and tolerations admit its node."""
    by_name = {n.name: n for n in whole.nodes}
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for pod in whole.running:
        assert pod.placement is not None
        node = by_name[pod.placement.node]
        labels = dict(node.labels)
        assert all(labels.get(k) == v for k, v in pod.constraints.node_selector), pod.name
        for taint in node.taints:
            if taint.effect != "PreferNoSchedule":
                assert any(t.tolerates(taint) for t in pod.constraints.tolerations), pod.name
        for j, value in enumerate((1, pod.resources.cpu_milli, pod.resources.memory_bytes)):
            used[node.name][j] += value
    for node in whole.nodes:
        for other in node.other_pods or ():
            used[node.name][0] += 1
            used[node.name][1] += other.resources.cpu_milli
            used[node.name][2] += other.resources.memory_bytes
        a = node.allocatable
        limits = (a.pods, a.cpu_milli, a.memory_bytes)
        assert all(
            limit is not None and u <= limit
            for u, limit in zip(used[node.name], limits, strict=True)
        ), node.name


def test_whole_node_exercises_every_filter(whole: Cluster) -> None:
    assert any(n.unschedulable for n in whole.nodes)
    assert {t.effect for n in whole.nodes for t in n.taints} == {"NoSchedule", "PreferNoSchedule"}
    assert any(n.other_pods for n in whole.nodes)
    assert any(p.constraints.required for p in whole.pending)
    diagnosis = diagnose(whole, node_detail_limit=0)
    causes = {d.cause for d in diagnosis.pods}
    assert {"schedulable", "node-resources", "unsatisfiable"} <= causes
    reasons = {r for d in diagnosis.pods for r, _ in d.reason_counts}
    assert "node(s) didn't match Pod's node affinity/selector" in reasons
    assert "node(s) were unschedulable" in reasons
    assert any(r.startswith("node(s) had untolerated taint {dedicated: training}") for r in reasons)
    assert "Insufficient cpu" in reasons


def test_whole_node_round_trips_and_repeats(whole: Cluster) -> None:
    data = scenario_to_data(whole)
    again = scenario_from_data(data, "synthetic")
    assert again == whole
    assert scenario_to_data(again) == data  # labels too (not part of a node's equality)
    assert synthetic_cluster(WHOLE) == whole
    assert scenario_to_data(synthetic_cluster(WHOLE)) == scenario_to_data(whole)

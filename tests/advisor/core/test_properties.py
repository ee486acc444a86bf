"""Invariants of the scheduler core on random clusters (hypothesis)."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import Diagnosis
from advisor.core.model import Card, Cluster, Node, Pod, Policy, Request
from tests.fastloop import examples

SIZES = (4096, 8192, 16384)


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        cards = tuple(
            Card(
                j, draw(st.sampled_from(SIZES)), healthy=draw(st.booleans()) or draw(st.booleans())
            )
            for j in range(draw(st.integers(1, 4)))
        )
        nodes.append(Node(f"node-{i}", cards))
    pods = []
    for i in range(draw(st.integers(1, 14))):
        gpus = draw(st.integers(1, 3))
        per_card = draw(st.sampled_from((512, 1024, 2048, 4096, 6144)))
        core = draw(st.sampled_from((0, 0, 10, 25, 50)))
        request = Request(gpus, gpus * per_card, gpus * core)
        pods.append(Pod(f"ns/p{i}", request, priority=draw(st.integers(0, 2))))
    policy = Policy(
        draw(st.sampled_from(("binpack", "spread"))), draw(st.sampled_from(("binpack", "spread")))
    )
    limit = draw(st.integers(1, 4))
    return Cluster(tuple(nodes), tuple(pods), policy, limit)


def card_load(cluster: Cluster, result: Diagnosis) -> dict[tuple[str, int], list[Request]]:
    load: dict[tuple[str, int], list[Request]] = defaultdict(list)
    for d in result.pods:
        if d.placement is not None:
            for index in d.placement.cards:
                load[(d.placement.node, index)].append(d.pod.request)
    return load


@settings(max_examples=examples(200), deadline=None)
@given(clusters())
def test_no_card_over_allotted_unhealthy_or_mixed(cluster: Cluster) -> None:
    result = diagnose(cluster)
    cards = {(n.name, c.index): c for n in cluster.nodes for c in n.cards}
    for key, requests in card_load(cluster, result).items():
        card = cards[key]
        assert card.healthy
        assert sum(r.card_memory_mib for r in requests) <= card.memory_mib
        assert sum(r.card_core_percent for r in requests) <= 100
        assert len(requests) <= cluster.max_vgpus_per_card
        assert len({r.mode for r in requests}) == 1


@settings(max_examples=examples(200), deadline=None)
@given(clusters())
def test_schedulable_iff_placed_on_distinct_cards_of_one_node(cluster: Cluster) -> None:
    for d in diagnose(cluster).pods:
        assert (d.cause == "schedulable") == (d.placement is not None)
        if d.placement is not None:
            assert len(set(d.placement.cards)) == d.pod.request.gpus


@settings(max_examples=examples(150), deadline=None)
@given(clusters(), st.randoms(use_true_random=False))
def test_independent_of_node_listing_order(cluster: Cluster, rng: object) -> None:
    nodes = list(cluster.nodes)
    rng.shuffle(nodes)  # type: ignore[attr-defined]
    shuffled = Cluster(tuple(nodes), cluster.pods, cluster.policy, cluster.max_vgpus_per_card)
    a, b = diagnose(cluster), diagnose(shuffled)
    assert [(d.pod.name, d.cause, d.placement, d.reason_counts) for d in a.pods] == [
        (d.pod.name, d.cause, d.placement, d.reason_counts) for d in b.pods
    ]


@settings(max_examples=examples(100), deadline=None)
@given(clusters())
def test_deterministic_and_pure(cluster: Cluster) -> None:
    before = repr(cluster)
    assert diagnose(cluster) == diagnose(cluster)
    assert repr(cluster) == before


@settings(max_examples=examples(100), deadline=None)
@given(clusters())
def test_a_placed_pod_stays_placed_when_bound(cluster: Cluster) -> None:
    """Binding the cycle's placements and diagnosing again leaves the rest Pending alike."""
    result = diagnose(cluster)
    placed = {d.pod.name: d.placement for d in result.pods if d.placement is not None}
    bound = Cluster(
        cluster.nodes,
        tuple(Pod(p.name, p.request, placed.get(p.name), p.priority) for p in cluster.pods),
        cluster.policy,
        cluster.max_vgpus_per_card,
    )
    again = diagnose(bound)
    assert {d.pod.name for d in again.pods} == {
        d.pod.name for d in result.pods if d.placement is None
    }
    assert all(d.placement is None for d in again.pods)

"""The core's diagnosis equals the plain-Python reference scheduler's, pod for pod.

The reference (benchmarks/reference.py) shares no code with the core; the same answers from
both — placement, cause, cluster_free_sufficient, per-node reason counts — under every
policy, on clusters with running pods, mixed card sizes, broken cards, both isolation modes,
a low vGPU limit and many exact ties, cross-check the core's arrays and shortcuts.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import POLICIES, Card, Cluster, Node, Pod, Policy, PolicyName, Request
from benchmarks.reference import reference_diagnose
from benchmarks.synthetic import SyntheticSpec, synthetic_cluster

ALL_POLICIES = [Policy(node, card) for node in POLICIES for card in POLICIES]
SEEDS = (1, 2, 3)


def with_policy(cluster: Cluster, policy: Policy) -> Cluster:
    return Cluster(cluster.nodes, cluster.pods, policy, cluster.max_vgpus_per_card)


def synthetic(seed: int, policy: Policy) -> Cluster:
    spec = SyntheticSpec(
        nodes=40,
        running=200,
        pending=300,
        seed=seed,
        policy=policy,
        unhealthy_share=0.05,
        mixed_node_share=0.2,
        max_vgpus_per_card=4,
    )
    return synthetic_cluster(spec)


def trace_like(seed: int, policy: Policy) -> Cluster:
    """openb's shape: whole cards of 1000 units, every pod Pending in arrival order, and
    nodes listed out of name order, so exact ties must fall to the name."""
    rng = random.Random(seed)
    card = 1000 * 128
    nodes = [
        Node(f"node-{i:03d}", tuple(Card(j, card) for j in range(rng.choice((2, 4, 8)))))
        for i in range(30)
    ]
    rng.shuffle(nodes)
    pods = []
    for i in range(400):
        gpus = rng.choices((1, 2, 4, 8), weights=(85, 5, 5, 5))[0]
        milli = rng.choice((100, 250, 460, 500, 650, 810, 1000)) if gpus == 1 else 1000
        pods.append(Pod(f"openb/pod-{i:04d}", Request(gpus, gpus * milli * 128)))
    return Cluster(tuple(nodes), tuple(pods), policy)


def core_answers(cluster: Cluster) -> list[tuple[object, ...]]:
    return [
        (d.pod.name, d.cause, d.placement, d.cluster_free_sufficient, d.reason_counts)
        for d in diagnose(cluster, node_detail_limit=0).pods
    ]


def reference_answers(cluster: Cluster) -> list[tuple[object, ...]]:
    return [
        (v.pod.name, v.cause, v.placement, v.cluster_free_sufficient, v.reason_counts)
        for v in reference_diagnose(cluster)
    ]


def assert_same(cluster: Cluster) -> None:
    core, reference = core_answers(cluster), reference_answers(cluster)
    assert len(core) == len(reference) == len(cluster.pending)
    for mine, theirs in zip(core, reference, strict=True):
        assert mine == theirs, f"core {mine} != reference {theirs}"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: f"{p.node}-{p.card}")
def test_synthetic_cluster_matches_reference(seed: int, policy: Policy) -> None:
    assert_same(synthetic(seed, policy))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: f"{p.node}-{p.card}")
def test_trace_like_cluster_matches_reference(seed: int, policy: Policy) -> None:
    assert_same(trace_like(seed, policy))


@pytest.mark.parametrize("node_policy", POLICIES)
def test_the_crosscheck_covers_every_cause_and_reason(node_policy: PolicyName) -> None:
    """Guard against a cross-check that agrees only because little happens."""
    causes: Counter[str] = Counter()
    reasons: set[str] = set()
    for seed in SEEDS:
        for verdict in reference_diagnose(synthetic(seed, Policy(node_policy, "binpack"))):
            causes[verdict.cause] += 1
            reasons |= {reason for reason, _ in verdict.reason_counts}
    assert set(causes) == {"schedulable", "fragmentation", "capacity", "unsatisfiable", "invalid"}
    assert reasons >= {"too-few-cards", "card-memory", "card-core", "mode-conflict", "vgpu-limit"}

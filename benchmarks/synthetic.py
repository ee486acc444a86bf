"""A deterministic synthetic cluster for the diagnose benchmarks (and the cross-check test).

Nodes of eight cards of five sizes (a few nodes mix two sizes, a few cards are broken),
running pods placed validly at random — one isolation mode per card, the vGPU limit, never
over-allotted — and Pending pods of every kind: ones that fit, fragmented ones, ones no node
could ever hold, a few invalid requests. The same `SyntheticSpec` always yields the same
cluster (one `random.Random(seed)` drives every choice, in a fixed order). With
`whole_node`, `benchmarks.synthetic_nodes` adds allocatable, labels, taints, cordons,
requests, selectors and tolerations on top, moving nothing.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.core.model import (
    DEFAULT_MAX_VGPUS,
    Card,
    Cluster,
    Mode,
    Node,
    Placement,
    Pod,
    Policy,
    Request,
)
from benchmarks.synthetic_nodes import with_whole_node

GIB = 1024
CARDS_PER_NODE = 8
RUNNING_PER_NODE = 6  # 30,000 running pods on 5,000 nodes
# (model, MiB, weight): T4 .. A100-80GB, the mix of a shared inference/training fleet.
CARD_MODELS: tuple[tuple[str, int, int], ...] = (
    ("Tesla T4", 16 * GIB, 25),
    ("A10", 24 * GIB, 20),
    ("V100-SXM2-32GB", 32 * GIB, 20),
    ("A100-PCIE-40GB", 40 * GIB, 20),
    ("A100-SXM4-80GB", 80 * GIB, 15),
)
# Per-card memory of a pod in GiB, with weights: mostly small inference slices.
CARD_GIB: tuple[tuple[int, int], ...] = (
    (1, 4),
    (2, 6),
    (4, 10),
    (8, 15),
    (12, 10),
    (16, 15),
    (24, 12),
    (32, 12),
    (40, 10),
    (80, 6),
)
CORE_PER_CARD = (10, 20, 25, 30, 40, 50, 100)
RUNNING_GPUS = ((1, 70), (2, 14), (4, 10), (8, 6))
PENDING_GPUS = ((1, 55), (2, 15), (4, 15), (8, 15))
PLACEMENT_TRIES = 40  # random nodes tried per drawn shape before drawing another


@dataclass(frozen=True, slots=True)
class SyntheticSpec:
    nodes: int = 5_000
    running: int = 5_000 * RUNNING_PER_NODE
    pending: int = 2_000
    seed: int = 20_231_115
    policy: Policy = field(default_factory=Policy)
    unhealthy_share: float = 0.005  # of all cards
    mixed_node_share: float = 0.02  # nodes carrying two card sizes
    core_share: float = 0.3  # pods asking memory+core isolation
    special_share: float = 0.01  # each of: invalid, never satisfiable (Pending only)
    max_vgpus_per_card: int = DEFAULT_MAX_VGPUS
    # Every node and pod also carries what kube-scheduler's other filters read
    # (benchmarks.synthetic_nodes); the cards and placements stay the same.
    whole_node: bool = False

    @staticmethod
    def scaled(
        nodes: int, pending: int, seed: int = 20_231_115, whole_node: bool = False
    ) -> SyntheticSpec:
        """`nodes` nodes at the benchmark's density (six running pods per node)."""
        return SyntheticSpec(nodes, nodes * RUNNING_PER_NODE, pending, seed, whole_node=whole_node)


class _Occupancy:
    """Plain per-card counters the generator places against (flat lists, card k of node i
    at i * CARDS_PER_NODE + k)."""

    def __init__(self, nodes: Sequence[Node], limit: int) -> None:
        cards = [c for n in nodes for c in n.cards]
        self.limit = limit
        self.healthy = [c.healthy for c in cards]
        self.free_memory = [c.memory_mib for c in cards]
        self.free_core = [100] * len(cards)
        self.vgpus = [0] * len(cards)
        self.mode = [int(Mode.UNUSED)] * len(cards)

    def eligible(self, node: int, request: Request) -> list[int]:
        m, c, k = request.card_memory_mib, request.card_core_percent, int(request.mode)
        first = node * CARDS_PER_NODE
        return [
            j
            for j in range(CARDS_PER_NODE)
            if self.healthy[first + j]
            and self.free_memory[first + j] >= m
            and self.vgpus[first + j] < self.limit
            and self.mode[first + j] in (int(Mode.UNUSED), k)
            and (k != int(Mode.MEMORY_CORE) or self.free_core[first + j] >= c)
        ]

    def bind(self, node: int, cards: Sequence[int], request: Request) -> None:
        for j in cards:
            k = node * CARDS_PER_NODE + j
            self.free_memory[k] -= request.card_memory_mib
            self.free_core[k] -= request.card_core_percent
            self.vgpus[k] += 1
            self.mode[k] = int(request.mode)


def _weighted(rng: random.Random, table: Sequence[tuple[int, int]]) -> int:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def _slug(model: str) -> str:
    return model.lower().replace(" ", "-")


def _make_nodes(rng: random.Random, spec: SyntheticSpec) -> tuple[Node, ...]:
    weights = [w for _, _, w in CARD_MODELS]
    nodes = []
    for i in range(spec.nodes):
        model, mib, _ = rng.choices(CARD_MODELS, weights=weights)[0]
        sizes = [(model, mib)] * CARDS_PER_NODE
        if rng.random() < spec.mixed_node_share:
            other, other_mib, _ = rng.choice(CARD_MODELS)
            sizes[CARDS_PER_NODE // 2 :] = [(other, other_mib)] * (CARDS_PER_NODE // 2)
        cards = tuple(
            Card(j, size, name, healthy=rng.random() >= spec.unhealthy_share)
            for j, (name, size) in enumerate(sizes)
        )
        # Names group by model, so name order (the tie-break) differs from list order.
        nodes.append(Node(f"{_slug(model)}-{i:05d}", cards))
    return tuple(nodes)


def _draw_request(
    rng: random.Random, spec: SyntheticSpec, gpus_table: Sequence[tuple[int, int]]
) -> Request:
    gpus = _weighted(rng, gpus_table)
    card_mib = _weighted(rng, CARD_GIB) * GIB
    core = rng.choice(CORE_PER_CARD) * gpus if rng.random() < spec.core_share else 0
    return Request(gpus, card_mib * gpus, core)


def _place_running(
    rng: random.Random, spec: SyntheticSpec, nodes: Sequence[Node], occupancy: _Occupancy
) -> list[Pod]:
    pods: list[Pod] = []
    failures = 0
    while len(pods) < spec.running:
        request = _draw_request(rng, spec, RUNNING_GPUS)
        for _ in range(PLACEMENT_TRIES):
            node = rng.randrange(len(nodes))
            eligible = occupancy.eligible(node, request)
            if len(eligible) >= request.gpus:
                cards = tuple(sorted(rng.sample(eligible, request.gpus)))
                occupancy.bind(node, cards, request)
                name = f"team-{len(pods) % 17:02d}/run-{len(pods):06d}"
                pods.append(Pod(name, request, Placement(nodes[node].name, cards)))
                break
        else:
            failures += 1
            if failures > spec.running + 1_000:
                raise ValueError(f"cannot place {spec.running} running pods on {len(nodes)} nodes")
    return pods


def _pending_pod(rng: random.Random, spec: SyntheticSpec, number: int) -> Pod:
    roll = rng.random()
    if roll < spec.special_share:  # breaks §1: memory not a whole number of 128 MiB per card
        request = Request(2, 2 * 1000, 0)
    elif roll < 2 * spec.special_share:  # larger than any card
        request = Request(1, 96 * GIB, 0)
    else:
        request = _draw_request(rng, spec, PENDING_GPUS)
    priority = rng.choices((0, 100, 1000), weights=(75, 20, 5))[0]
    return Pod(f"team-{number % 17:02d}/wait-{number:06d}", request, priority=priority)


def synthetic_cluster(spec: SyntheticSpec | None = None) -> Cluster:
    spec = spec or SyntheticSpec()
    rng = random.Random(spec.seed)
    nodes = _make_nodes(rng, spec)
    running = _place_running(rng, spec, nodes, _Occupancy(nodes, spec.max_vgpus_per_card))
    pending = [_pending_pod(rng, spec, i) for i in range(spec.pending)]
    cluster = Cluster(nodes, (*running, *pending), spec.policy, spec.max_vgpus_per_card)
    return with_whole_node(cluster, spec.seed + 1) if spec.whole_node else cluster

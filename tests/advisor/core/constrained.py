"""Small clusters whose nodes carry allocatable, labels, taints and cordons and whose pods
carry cpu and memory requests, selectors, affinity and tolerations: hand-built ones for the
core tests, and random ones for the property tests."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.model import (
    Card,
    Cluster,
    Node,
    OtherPod,
    Placement,
    Pod,
    Policy,
    Request,
)
from advisor.core.nodefilters import (
    NO_CONSTRAINTS,
    NOT_KNOWN,
    Allocatable,
    NodeConstraints,
    Requirement,
    Resources,
    Taint,
    Term,
    Toleration,
)

GiB = 1024  # MiB
GIB_BYTES = 2**30
CORE = 1000  # millicores


def gpu_node(
    name: str,
    *sizes_gib: int,
    cpu: int | None = None,
    pods: int | None = None,
    labels: Mapping[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    others: tuple[OtherPod, ...] | None = None,
    cordoned: bool = False,
) -> Node:
    """A node with cards of `sizes_gib`; `cpu` in cores (None: not known)."""
    return Node(
        name,
        tuple(Card(i, s * GiB) for i, s in enumerate(sizes_gib)),
        others,
        Allocatable(None if cpu is None else cpu * CORE, None, pods),
        MappingProxyType(dict(labels or {})),
        taints,
        cordoned,
    )


def other(name: str, cpu_milli: int = 0, memory_gib: int = 0) -> OtherPod:
    return OtherPod(name, None, Resources(cpu_milli, memory_gib * GIB_BYTES))


def gpu_pod(
    name: str,
    gib: int,
    on: str | None = None,
    cards: tuple[int, ...] = (0,),
    cpu_milli: int = 0,
    constraints: NodeConstraints = NO_CONSTRAINTS,
    annotations: Mapping[str, str] | None = None,
) -> Pod:
    """A pod of `len(cards)` GPUs and `gib` GiB in all, running on `on` (Pending: None)."""
    placement = None if on is None else Placement(on, cards)
    return Pod(
        name,
        Request(len(cards), gib * GiB),
        placement,
        annotations=MappingProxyType(dict(annotations or {})),
        resources=Resources(cpu_milli, 0),
        constraints=constraints,
    )


def selecting(**labels: str) -> NodeConstraints:
    return NodeConstraints(node_selector=tuple(sorted(labels.items())))


def tolerating(key: str) -> NodeConstraints:
    return NodeConstraints(tolerations=(Toleration(key, "Exists"),))


def strip_node_fields(cluster: Cluster) -> Cluster:
    """The same cluster seen by a GPU-only model: no allocatable, labels, taints, cordons,
    no cpu or memory requests, no node constraints."""
    nodes = tuple(
        replace(
            n,
            allocatable=NOT_KNOWN,
            labels=MappingProxyType({}),
            taints=(),
            unschedulable=False,
            other_pods=None
            if n.other_pods is None
            else tuple(replace(o, resources=Resources()) for o in n.other_pods),
        )
        for n in cluster.nodes
    )
    pods = tuple(
        replace(p, resources=Resources(), constraints=NO_CONSTRAINTS) for p in cluster.pods
    )
    return replace(cluster, nodes=nodes, pods=pods)


# -- random clusters ---------------------------------------------------------------------

POOLS = ("a", "b")
DEDICATED = Taint("dedicated", "NoSchedule", "gpu")


def _random_constraints(rng: random.Random) -> NodeConstraints:
    selector: tuple[tuple[str, str], ...] = ()
    required: tuple[Term, ...] | None = None
    roll = rng.random()
    if roll < 0.2:
        selector = (("pool", rng.choice(POOLS)),)
    elif roll < 0.3:
        required = (Term((Requirement("pool", "NotIn", (rng.choice(POOLS),)),)),)
    elif roll < 0.4:
        required = (
            Term((Requirement("rank", "Gt", (str(rng.randint(0, 2)),)),)),
            Term((Requirement("pool", "In", ("b",)),)),
        )
    tolerations: tuple[Toleration, ...] = (
        (Toleration("dedicated", "Exists"),) if rng.random() < 0.4 else ()
    )
    if rng.random() < 0.05:
        tolerations += (Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),)
    return NodeConstraints(selector, required, tolerations)


def _random_node(rng: random.Random, i: int) -> Node:
    labels = {"pool": rng.choice(POOLS), "rank": str(rng.randint(0, 3))}
    taints: tuple[Taint, ...] = ()
    if rng.random() < 0.3:
        taints = (DEDICATED,)
    elif rng.random() < 0.15:
        taints = (Taint("spot", "PreferNoSchedule", "yes"),)
    others = tuple(
        OtherPod(
            f"web/o{i}-{j}",
            None,
            Resources(rng.choice([0, 500, 2000]), rng.choice([0, 1, 4]) * GIB_BYTES),
        )
        for j in range(rng.choice([0, 0, 1, 2]))
    )
    return Node(
        f"n{i}",
        tuple(Card(c, rng.choice([8, 16]) * GiB) for c in range(rng.randint(1, 4))),
        others if others or rng.random() < 0.5 else None,
        Allocatable(
            rng.choice([None, 4 * CORE, 8 * CORE, 16 * CORE]),
            rng.choice([None, 16 * GIB_BYTES, 64 * GIB_BYTES]),
            rng.choice([None, 3, 5, 110]),
        ),
        MappingProxyType(labels),
        taints,
        rng.random() < 0.1,
    )


@st.composite
def constrained_clusters(draw: st.DrawFn) -> Cluster:
    """Pods arrive onto a small constrained cluster (placed by one scheduling cycle, so
    every running pod passes every filter), some leave, then bigger ones wait."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    policy = Policy(rng.choice(["binpack", "spread"]), rng.choice(["binpack", "spread"]))
    nodes = tuple(_random_node(rng, i) for i in range(rng.randint(2, 4)))

    def pod(i: int, sizes: list[int]) -> Pod:
        gpus = rng.choice([1, 1, 1, 1, 2])
        core = rng.choice([0, 0, 0, 0, 10, 30]) * gpus
        namespace = rng.choice(["ml", "ml", "web", "kube-system"])
        annotations = {"xgpu.io/do-not-disrupt": "true"} if rng.random() < 0.1 else {}
        return Pod(
            f"{namespace}/p{i}",
            Request(gpus, gpus * rng.choice(sizes) * GiB, core),
            priority=rng.choice([0, 0, 10]),
            annotations=MappingProxyType(annotations),
            resources=Resources(
                rng.choice([0, 0, 500, 1000, 3000]), rng.choice([0, 0, 2, 8]) * GIB_BYTES
            ),
            constraints=_random_constraints(rng),
        )

    first = [pod(i, [2, 4, 4, 6, 8]) for i in range(rng.randint(10, 30))]
    start = Cluster(nodes, tuple(first), policy, max_vgpus_per_card=4)
    placed = {d.pod.name: d.placement for d in diagnose(start, node_detail_limit=0).pods}
    stay = [
        replace(p, placement=placed[p.name])
        for p in first
        if placed.get(p.name) is not None and rng.random() > 0.3
    ]
    late = [pod(100 + i, [6, 8, 12, 16]) for i in range(rng.randint(1, 6))]
    return Cluster(nodes, (*stay, *late), policy, max_vgpus_per_card=4)

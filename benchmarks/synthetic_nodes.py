"""The rest of the node for the synthetic cluster: allocatable, labels, taints, cordons,
requests, selectors, affinity and tolerations on every node and pod (docs/design.md §9.1).

`with_whole_node(cluster, seed)` decorates a GPU-only synthetic cluster without moving a
single card or pod, so the two variants differ only by what kube-scheduler's other filters
see. Node pools follow the card model (the first card's). Pools, in short:

- every pool is labelled `nodepool=<model>` and a zone; the A100-80GB pool is tainted
  `dedicated=training:NoSchedule` (only pods that tolerate it go there), the V100 pool carries
  a PreferNoSchedule taint (which never filters); a few nodes are cordoned;
- running pods ask cpu and memory in proportion to their GPUs and select their node's pool
  (with the toleration it needs), always within the node's allocatable;
- some nodes are nearly exhausted by a CPU-only batch pod, so Pending pods whose GPUs would fit
  there are `node-resources`;
- Pending pods mostly select a pool (some with a zone affinity, some tolerating everything);
  a few select a pool that no node has (unsatisfiable: the static filters reject every node).

A separate `random.Random` drives these choices, in a fixed order: the same seed, the same
decoration.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import replace
from types import MappingProxyType

from advisor.core.model import Cluster, Node, OtherPod, Pod
from advisor.core.nodefilters import (
    Allocatable,
    NodeConstraints,
    Requirement,
    Resources,
    Taint,
    Term,
    Toleration,
)

GIB_BYTES = 2**30
CORE = 1000  # millicores
ZONES = ("zone-a", "zone-b", "zone-c")
POOL_LABEL = "nodepool"
ZONE_LABEL = "topology.kubernetes.io/zone"
# pool (card model, as the node names spell it) -> (cores, memory GiB) of each node
POOL_SIZES: dict[str, tuple[int, int]] = {
    "tesla-t4": (32, 192),
    "a10": (48, 256),
    "v100-sxm2-32gb": (64, 512),
    "a100-pcie-40gb": (96, 768),
    "a100-sxm4-80gb": (128, 1024),
}
TRAINING = Taint("dedicated", "NoSchedule", "training")
TAINTS: dict[str, tuple[Taint, ...]] = {
    "a100-sxm4-80gb": (TRAINING,),
    "v100-sxm2-32gb": (Taint("nvidia.com/gpu", "PreferNoSchedule", "present"),),
}
TOLERATE_TRAINING = Toleration("dedicated", "Equal", "training", "NoSchedule")
TOLERATE_ALL = Toleration(operator="Exists")
MAX_PODS = 110
CORDONED_SHARE = 0.01
EXHAUSTED_SHARE = 0.08  # nodes a batch pod leaves one core and 4 GiB of
SYSTEM_RESERVE = Resources(2 * CORE, 8 * GIB_BYTES)  # left free of running pods' requests
MISSING_POOL = "h100-sxm5-80gb"  # selected by a few Pending pods, held by no node


def pool_of(node: Node) -> str:
    return node.name.rsplit("-", 1)[0]  # names are "<model slug>-<number>"


def with_whole_node(cluster: Cluster, seed: int) -> Cluster:
    rng = random.Random(seed)
    nodes = [_node(rng, n, i) for i, n in enumerate(cluster.nodes)]
    by_name = {n.name: n for n in nodes}
    left = {n.name: _free_of(n) for n in nodes}
    pods: list[Pod] = []
    for pod in cluster.pods:
        if pod.placement is None:
            pods.append(_pending(rng, pod))
        else:
            node = by_name[pod.placement.node]
            pods.append(_running(rng, pod, node, left))
    batch: dict[str, list[OtherPod]] = defaultdict(list)
    for node in nodes:
        cpu, memory = left[node.name]
        if rng.random() < EXHAUSTED_SHARE and cpu > CORE and memory > 4 * GIB_BYTES:
            hog = Resources(cpu - CORE, memory - 4 * GIB_BYTES)
            batch[node.name].append(OtherPod(f"batch/etl-{node.name}", resources=hog))
    nodes = [replace(n, other_pods=tuple(batch[n.name])) for n in nodes]
    return Cluster(tuple(nodes), tuple(pods), cluster.policy, cluster.max_vgpus_per_card)


def _node(rng: random.Random, node: Node, number: int) -> Node:
    pool = pool_of(node)
    cores, gib = POOL_SIZES[pool]
    return replace(
        node,
        allocatable=Allocatable(cores * CORE, gib * GIB_BYTES, MAX_PODS),
        labels=MappingProxyType({POOL_LABEL: pool, ZONE_LABEL: ZONES[number % len(ZONES)]}),
        taints=TAINTS.get(pool, ()),
        unschedulable=rng.random() < CORDONED_SHARE,
    )


def _free_of(node: Node) -> list[int]:
    """cpu and memory a node's running pods may ask in all (its pool's size less a reserve)."""
    cores, gib = POOL_SIZES[pool_of(node)]
    reserve = SYSTEM_RESERVE
    return [cores * CORE - reserve.cpu_milli, gib * GIB_BYTES - reserve.memory_bytes]


def _asks(rng: random.Random, gpus: int) -> Resources:
    cores = rng.choice((1, 2, 4, 6, 8)) * gpus
    return Resources(cores * CORE, cores * rng.choice((4, 8)) * GIB_BYTES)


def _running(rng: random.Random, pod: Pod, node: Node, left: dict[str, list[int]]) -> Pod:
    """A running pod asks what its node still has (or nothing: a best-effort pod) and
    selects the pool it runs in."""
    asks = _asks(rng, pod.request.gpus)
    free = left[node.name]
    if asks.cpu_milli > free[0] or asks.memory_bytes > free[1]:
        asks = Resources()
    free[0] -= asks.cpu_milli
    free[1] -= asks.memory_bytes
    tolerations = (TOLERATE_TRAINING,) if TRAINING in node.taints else ()
    selector = ((POOL_LABEL, pool_of(node)),) if rng.random() < 0.6 else ()
    return replace(pod, resources=asks, constraints=NodeConstraints(selector, None, tolerations))


def _pending(rng: random.Random, pod: Pod) -> Pod:
    roll = rng.random()
    pool = rng.choice(sorted(POOL_SIZES))
    if roll < 0.01:
        constraints = NodeConstraints(((POOL_LABEL, MISSING_POOL),))
    elif roll < 0.05:  # tolerates every taint, cordons included
        constraints = NodeConstraints((), None, (TOLERATE_ALL,))
    elif roll < 0.20:  # anywhere untainted
        constraints = NodeConstraints()
    else:
        tolerations = (TOLERATE_TRAINING,) if pool == "a100-sxm4-80gb" else ()
        required = None
        if rng.random() < 0.3:
            zones = tuple(sorted(rng.sample(ZONES, 2)))
            required = (Term((Requirement(ZONE_LABEL, "In", zones),)),)
        constraints = NodeConstraints(((POOL_LABEL, pool),), required, tolerations)
    return replace(pod, resources=_asks(rng, pod.request.gpus), constraints=constraints)

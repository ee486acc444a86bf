"""Scale-up for MIG pods (docs/design.md §13): a Pending MIG pod of cause `capacity` counts
toward the nodes of an existing shape whose MIG cards, laid out as that shape's cards are now
and all free on a new node, offer instances of its profile.

A new node of a group has the group's MIG configuration (nvidia-mig-parted applies the one
its `nvidia.com/mig.config` label names at boot), so its instances are the template's. The
estimator places the pods on the new nodes as the cycle does (`core.mig_cycle.MigBook`: the
first free instances of the profile, the node by the policy); a MIG layout is never invented
here, so a pod no shape offers its profile to gets the autoscaler's reason, not a new shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import lru_cache

from advisor.core.mig_cycle import MigBook, is_mig, resource_name
from advisor.core.model import Cluster, Pod, queue_order
from advisor.core.occupancy import build_state
from advisor.core.scaling.check import put_back, take_out
from advisor.core.scaling.templates import NOT_TRIGGERED, NodeShape
from advisor.core.state import CardState, Shape
from advisor.core.whatif import place_queue


@lru_cache(maxsize=256)
def offered(shape: NodeShape, profile: str) -> int:
    """Free instances of `profile` a new `shape` node offers (its device plugin's count)."""
    alone = Cluster(nodes=(shape.template("template"),))
    return len(MigBook(alone, CardState(alone)).free(profile)[0])


def hosts(shape: NodeShape, pod: Pod) -> bool:
    """Whether a new `shape` node's cards could take the pod (the other filters aside)."""
    if is_mig(pod):
        return offered(shape, pod.request.mig_profile) >= pod.request.gpus
    return shape.hosts(Shape.of_pod(pod))


def not_offered(pod: Pod, shapes: Sequence[NodeShape]) -> str:
    """The autoscaler's words for a MIG pod whose profile no admitting shape offers enough
    of: each node group's reason, as its simulated scheduler gives it."""
    profile = pod.request.mig_profile
    counts: dict[str, int] = {}
    for shape in shapes:
        word = f"Insufficient {resource_name(shape.mig_strategy, profile)}"
        counts[word] = counts.get(word, 0) + 1
    if not counts:
        return f"{NOT_TRIGGERED}: no node group has MIG cards"
    return f"{NOT_TRIGGERED}: " + ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))


def estimate_with_mig(shape: NodeShape, pods: Sequence[Pod], cluster: Cluster) -> int:
    """Empty `shape` nodes the cycle needs for `pods` (MIG pods among them) in queue order:
    the fewest open nodes on which the whole queue lands, placed as the cycle places it
    (`scaling.up.estimate_nodes` opens nodes one pod at a time; the book of instances is
    rebuilt per count instead). Counts are tried doubling, then bisected (more empty nodes
    of one shape never leave a pod out that fewer held)."""
    queue = queue_order(tuple(pods))
    nodes = tuple(shape.template(f"estimate-{i:04d}") for i in range(len(queue)))
    fresh = dataclasses.replace(cluster, nodes=nodes, pods=())
    bare = build_state(fresh)
    allocatable = bare.allocatable.copy()
    for i in range(len(nodes)):
        take_out(bare, i)

    def lands(opened: int) -> bool:
        state = bare.copy()
        for i in range(opened):
            put_back(state, i, allocatable[i])
        landed = place_queue(state, queue, cluster.policy, MigBook(fresh, state))
        return all(where is not None for where in landed)

    low, high = 0, 1  # `low` nodes fall short, `high` are tried
    while not lands(high):
        if high >= len(nodes):
            raise ValueError(f"{len(queue)} pods do not fit {len(nodes)} empty {shape} nodes")
        low, high = high, min(2 * high, len(nodes))
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if lands(middle) else (middle, high)
    return high


def without_mig(shape: NodeShape) -> NodeShape:
    """`shape` with its MIG cards as plain cards (a new shape copies a template's filters)."""
    return dataclasses.replace(shape, mig=(), mig_strategy="none")

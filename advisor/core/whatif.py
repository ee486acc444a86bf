"""Policy what-if: the same cluster under each node × card policy (binpack, spread).

Two questions per combination, so a team can choose its scheduler policy on evidence:

- *Pending*: with the running pods where they are, how many Pending pods would the policy
  place (and how much GPU memory), and how fragmented is the cluster afterwards?
- *Repack*: placing every pod again from empty, running pods first (priority desc, then
  list order) and then the Pending queue, how many pods land, and at what fragmentation?

Fragmentation uses the same typical shapes (all pods' requests) everywhere, so the figures
compare; stranded memory is judged against the pods each scenario leaves unplaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from advisor.core.diagnose import build_state
from advisor.core.fragmentation import (
    Fragmentation,
    WeightedShape,
    measure,
    summary_json,
    typical_shapes,
    valid_shape,
)
from advisor.core.model import POLICIES, Cluster, Placement, Pod, Policy, queue_order
from advisor.core.state import CardState, Shape

WHATIF_SCHEMA = "xgpu-advisor/whatif/v1"
ALL_POLICIES: tuple[Policy, ...] = tuple(Policy(n, c) for n, c in product(POLICIES, POLICIES))


def place_queue(
    state: CardState, pods: Sequence[Pod], policy: Policy
) -> tuple[Placement | None, ...]:
    """Place `pods` one by one in the order given, each seeing the ones before it.

    Mutates `state` (callers pass a private one). Invalid requests and misfits get None.
    A pod that needs at least what a pod that found no place needed is not looked for: the
    same answer without scanning the cluster, exact because placing only fills cards (less
    free memory and core, more vGPUs, a mode set), so a card that cannot take a shape now
    never can later in the same queue, and a pod of the same mode needing as many cards or
    more, and as much per card or more, has no more cards to choose from. Queues re-placed
    again and again (scale-down's removals) are mostly such repeats.
    """
    failed: list[Shape] = []
    placements: list[Placement | None] = []
    for pod in pods:
        shape = valid_shape(pod)
        if shape is None or any(shape.needs_no_less(f) for f in failed):
            placements.append(None)
            continue
        positions = state.place(shape, policy.node, policy.card)
        if positions is None:
            failed.append(shape)
            placements.append(None)
            continue
        state.apply(positions, shape)
        placements.append(state.placement_of(positions))
    return tuple(placements)


def repack_order(cluster: Cluster) -> tuple[Pod, ...]:
    """Running pods by priority desc then list order, then the Pending queue."""
    return queue_order(cluster.running) + queue_order(cluster.pending)


@dataclass(frozen=True, slots=True)
class Repack:
    pods: int
    placed: int
    placed_mib: int
    running_placed: int
    running_lost: int  # running today, unplaced in the repack
    pending_placed: int
    fragmentation: Fragmentation


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    policy: Policy
    pending_placed: int
    pending_placed_mib: int
    fragmentation: Fragmentation  # after placing the Pending queue
    repack: Repack


@dataclass(frozen=True, slots=True)
class WhatIf:
    cluster_policy: Policy
    running: int
    pending: int
    pending_mib: int
    fragmentation: Fragmentation  # as it runs now
    outcomes: tuple[PolicyOutcome, ...]


def what_if(cluster: Cluster, policies: Sequence[Policy] = ALL_POLICIES) -> WhatIf:
    shapes = typical_shapes(cluster.pods)
    base = build_state(cluster)
    queue = queue_order(cluster.pending)
    outcomes = tuple(_outcome(cluster, base, queue, shapes, policy) for policy in policies)
    return WhatIf(
        cluster_policy=cluster.policy,
        running=len(cluster.running),
        pending=len(queue),
        pending_mib=sum(p.request.memory_mib for p in queue),
        fragmentation=measure(base, shapes, queue),
        outcomes=outcomes,
    )


def _outcome(
    cluster: Cluster,
    base: CardState,
    queue: tuple[Pod, ...],
    shapes: tuple[WeightedShape, ...],
    policy: Policy,
) -> PolicyOutcome:
    state = base.copy()
    placed = place_queue(state, queue, policy)
    left = [pod for pod, where in zip(queue, placed, strict=True) if where is None]
    landed = [pod for pod, where in zip(queue, placed, strict=True) if where is not None]
    return PolicyOutcome(
        policy=policy,
        pending_placed=len(landed),
        pending_placed_mib=sum(p.request.memory_mib for p in landed),
        fragmentation=measure(state, shapes, left),
        repack=_repack(cluster, shapes, policy),
    )


def _repack(cluster: Cluster, shapes: tuple[WeightedShape, ...], policy: Policy) -> Repack:
    empty = dataclasses.replace(cluster, pods=(), policy=policy)
    state = build_state(empty)
    order = repack_order(cluster)
    placed = place_queue(state, order, policy)
    landed = [pod for pod, where in zip(order, placed, strict=True) if where is not None]
    left = [pod for pod, where in zip(order, placed, strict=True) if where is None]
    running_placed = sum(1 for pod in landed if pod.running)
    return Repack(
        pods=len(order),
        placed=len(landed),
        placed_mib=sum(p.request.memory_mib for p in landed),
        running_placed=running_placed,
        running_lost=len(cluster.running) - running_placed,
        pending_placed=len(landed) - running_placed,
        fragmentation=measure(state, shapes, left),
    )


def whatif_json(w: WhatIf) -> dict[str, Any]:
    return {
        "schema": WHATIF_SCHEMA,
        "current": {
            "policy": {"node": w.cluster_policy.node, "card": w.cluster_policy.card},
            "running": w.running,
            "pending": w.pending,
            "pending_mib": w.pending_mib,
            "fragmentation": summary_json(w.fragmentation),
        },
        "policies": [
            {
                "node": o.policy.node,
                "card": o.policy.card,
                "pending_placed": o.pending_placed,
                "pending_placed_mib": o.pending_placed_mib,
                "fragmentation": summary_json(o.fragmentation),
                "repack": {
                    "pods": o.repack.pods,
                    "placed": o.repack.placed,
                    "placed_mib": o.repack.placed_mib,
                    "running_placed": o.repack.running_placed,
                    "running_lost": o.repack.running_lost,
                    "pending_placed": o.repack.pending_placed,
                    "fragmentation": summary_json(o.repack.fragmentation),
                },
            }
            for o in w.outcomes
        ],
    }

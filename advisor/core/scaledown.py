"""Scale-down advice: which idle nodes could go, like the cluster-autoscaler's removal check.

A node below the utilisation threshold goes when all its GPU pods re-fit elsewhere, re-queued
after the Pending pods of equal priority, and no Pending pod that would be scheduled now stops
being scheduled. Nodes go greedily, least utilised first, each removal seen by the next.

Only GPUs are modelled. The node's other pods (`Node.other_pods`, when known) are judged as
the autoscaler's drain would judge them: one that blocks eviction keeps the node; the others
are listed as also moving, without simulating where (their CPU and memory are not modelled).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from advisor.core.diagnose import build_state
from advisor.core.model import Cluster, Placement, Pod, queue_order
from advisor.core.state import CardState, Shape
from advisor.core.whatif import place_queue

DO_NOT_DISRUPT = "xgpu.io/do-not-disrupt"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
PROTECTED_NAMESPACES = frozenset({"kube-system"})


@dataclass(frozen=True, slots=True)
class ScaleDown:
    node: str
    utilisation: float  # allotted / card memory when it was chosen
    moves: Mapping[str, Placement]
    # The node's other pods, which would move too (not simulated); None: not known.
    also_moves: tuple[str, ...] | None = None

    def json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "node": self.node,
            "utilisation": round(self.utilisation, 4),
            "moves": {
                pod: {"node": p.node, "cards": list(p.cards)} for pod, p in self.moves.items()
            },
        }
        if self.also_moves is not None:
            entry["also_moves"] = list(self.also_moves)
        return entry


def movable(pod: Pod) -> bool:
    """Whether scale-down may move this GPU pod: not in kube-system, not annotated
    do-not-disrupt "true" nor safe-to-evict "false"."""
    return (
        pod.namespace not in PROTECTED_NAMESPACES
        and pod.annotations.get(DO_NOT_DISRUPT, "").lower() != "true"
        and pod.annotations.get(SAFE_TO_EVICT, "").lower() != "false"
    )


def node_utilisation(cluster: Cluster) -> dict[str, float]:
    """Allotted memory over card memory, per node (all cards; an empty node is 0)."""
    state = build_state(cluster)
    n = len(state.node_names)
    allotted = np.bincount(state.node_of, weights=state.capacity - state.free_memory, minlength=n)
    total = np.bincount(state.node_of, weights=state.capacity, minlength=n)
    return {
        name: float(allotted[i] / total[i]) if total[i] else 0.0
        for i, name in enumerate(state.node_names)
    }


def scale_down(cluster: Cluster, threshold: float = 0.3) -> tuple[ScaleDown, ...]:
    """Nodes that can go, in the order to remove them, each with where its GPU pods would
    move and which other pods would move too.

    Candidates: utilisation below `threshold`, every GPU pod `movable`, and no other pod
    that blocks eviction (kube-system, bare, annotated, local storage: see the sources).
    """
    queue = queue_order(cluster.pending)
    base = build_state(cluster)
    before = place_queue(base.copy(), queue, cluster.policy)
    must_land = {pod.name for pod, where in zip(queue, before, strict=True) if where is not None}
    utilisation = node_utilisation(cluster)
    candidates = sorted((u, name) for name, u in utilisation.items() if u < threshold)
    others = {n.name: n.other_pods for n in cluster.nodes}
    running = {p.name: p for p in cluster.running}
    steps: list[ScaleDown] = []
    for _, name in candidates:
        on_node = [p for p in running.values() if p.placement and p.placement.node == name]
        now = _utilisation_of(base, name)
        if now >= threshold or not all(movable(p) for p in on_node):
            continue
        other = others[name]
        if other is not None and any(p.blocks for p in other):
            continue
        trial = base.copy()
        for pod in on_node:
            assert pod.placement is not None
            trial.release(trial.positions(pod.placement), Shape.of(pod.request))
        for k in trial.node_positions(trial.node_index[name]):
            trial.healthy[k] = False  # the node is gone: nothing can land on it
        moved = tuple(
            Pod(p.name, p.request, None, p.priority, p.owner, p.annotations) for p in on_node
        )
        order = queue_order(tuple(cluster.pending) + moved)
        after = place_queue(trial.copy(), order, cluster.policy)
        landed = {pod.name: where for pod, where in zip(order, after, strict=True) if where}
        if not all(p.name in landed for p in moved) or not must_land <= landed.keys():
            continue
        for pod in moved:  # commit: the moved pods run where they landed
            placement = landed[pod.name]
            trial.apply(trial.positions(placement), Shape.of(pod.request))
            # Recreated pods are the newest: a later drain queues them after the older pods
            # of equal priority, as creation order does.
            del running[pod.name]
            running[pod.name] = Pod(
                pod.name, pod.request, placement, pod.priority, pod.owner, pod.annotations
            )
        base = trial
        moves = MappingProxyType({p.name: landed[p.name] for p in moved})
        also = None if other is None else tuple(p.name for p in other)
        steps.append(ScaleDown(name, now, moves, also))
    return tuple(steps)


def _utilisation_of(state: CardState, node: str) -> float:
    positions = state.node_positions(state.node_index[node])
    total = sum(int(state.capacity[k]) for k in positions)
    allotted = sum(int(state.capacity[k] - state.free_memory[k]) for k in positions)
    return allotted / total if total else 0.0

"""What frees the cpu, memory or pod slot a `node-resources` pod lacks: never a GPU.

A `node-resources` pod's GPUs fit now on a node it may use; only NodeResourcesFit refuses
it there. A new GPU node would bring GPUs it does not need, so the advice is, on the first
such node by name (after this cycle's placements):

- the fewest of the node's other pods (`Node.other_pods`: no GPU, not DaemonSet-owned) whose
  leaving makes room, the smallest single one when one is enough, and the nodes they would
  move to (first-fit on the other nodes' filters and room, `scaling.others.OtherPods`);
- when they find no room on the nodes the model holds (it holds the GPU nodes only), a node
  without GPUs sized for them, to move them to;
- when the node's other pods are not known or moving all of them would not be enough, the
  node and what it lacks: free or add cpu and memory there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.core.diagnosis import Diagnosis
from advisor.core.model import Cluster, OtherPod
from advisor.core.nodefilters import bytes_text, cpu_text
from advisor.core.occupancy import build_state
from advisor.core.scaling.others import OtherPods
from advisor.core.state import CardState, Shape


@dataclass(frozen=True, slots=True)
class Relief:
    """One `node-resources` pod: the node its GPUs fit on, what that node lacks for it, and
    what frees it: other pods to move (and where), or a node without GPUs for them."""

    pod: str
    node: str
    short: tuple[str, ...]  # NodeResourcesFit's reasons there
    moves: tuple[tuple[str, str | None], ...] = ()  # (other pod, node it fits on, or None)
    cpu_milli: int = 0  # what the moved pods request in all
    memory_bytes: int = 0

    @property
    def text(self) -> str:
        """What to do, in words every output shows as they are."""
        lacks = ", ".join(self.short)
        if not self.moves:
            return (
                f"{lacks} on {self.node}, whose other pods are not known or too few to free "
                "it: free or add cpu and memory there (not GPUs)"
            )
        names = ", ".join(name for name, _ in self.moves)
        if all(to is not None for _, to in self.moves):
            where = ", ".join(f"{name} to {to}" for name, to in self.moves)
            return f"{lacks} on {self.node}, where its GPUs fit now: move {where}"
        size = f"cpu {cpu_text(self.cpu_milli)}, memory {bytes_text(self.memory_bytes)}"
        return (
            f"{lacks} on {self.node}, where its GPUs fit now: move {names} off it, onto a "
            f"node without GPUs of at least {size} (no node the model holds has room for them)"
        )


def relief(cluster: Cluster, diagnosis: Diagnosis, pods: Collection[str]) -> tuple[Relief, ...]:
    """The `Relief` of each `node-resources` pod named in `pods`, in queue order."""
    wanted = [d for d in diagnosis.pods if d.cause == "node-resources" and d.pod.name in pods]
    if not wanted:
        return ()
    state = build_state(cluster)
    for d in diagnosis.pods:  # the cycle's placements take their share first
        if d.placement is not None:
            state.apply(state.positions(d.placement), Shape.of_pod(d.pod))
    others = OtherPods(cluster.nodes)
    found = []
    for d in wanted:
        shape = Shape.of_pod(d.pod)
        short = state.resource_shortfalls(shape)
        gpus_fit = state.gpu_fits(shape, state.eligible(shape))
        nodes = np.flatnonzero(state.static_ok(shape.constraints) & gpus_fit & short.any(axis=1))
        if not nodes.size:
            continue
        ranked = [int(i) for i in nodes[np.argsort(state.name_rank[nodes])]]
        options = [_relief(state, others, i, shape, short[i], d.pod.name) for i in ranked]
        # A node its pods leave for nodes with room, else one a new node frees, else the first.
        found.append(
            next((r for r in options if r.moves and all(to for _, to in r.moves)), None)
            or next((r for r in options if r.moves), options[0])
        )
    return tuple(found)


def _relief(
    state: CardState, others: OtherPods, node: int, shape: Shape, short: Any, pod: str
) -> Relief:
    name = state.node_names[node]
    lacks = state.fit.named(short)  # every resource short, in the session's words
    chosen = _to_move(state, node, shape, others.own(name) or ())
    if not chosen:
        return Relief(pod, name, lacks)
    names = {p.name for p in chosen}
    leaving = [m for m in others.leaving(name) if m.pod.name in names]
    trial = state.copy()
    trial.allocatable[node] = 0  # they leave it: not back onto the same node
    homes = others.place(trial, leaving, ())
    moves = tuple(
        (m.pod.name, state.node_names[homes[m.pod.name]] if m.pod.name in homes else None)
        for m in leaving
    )
    cpu = sum(p.resources.cpu_milli for p in chosen)
    memory = sum(p.resources.memory_bytes for p in chosen)
    return Relief(pod, name, lacks, moves, cpu, memory)


def _to_move(
    state: CardState, node: int, shape: Shape, own: Sequence[OtherPod]
) -> tuple[OtherPod, ...]:
    """The smallest single other pod whose leaving lets `shape` fit on `node`, else the
    largest ones first until it does; () when even all of them would not do."""

    def freed(pods: Sequence[OtherPod]) -> tuple[int, int, int]:
        return (
            len(pods),
            sum(p.resources.cpu_milli for p in pods),
            sum(p.resources.memory_bytes for p in pods),
        )

    def size(p: OtherPod) -> tuple[int, int, str]:
        return (p.resources.cpu_milli, p.resources.memory_bytes, p.name)

    movable = [p for p in own if p.blocks is None]
    for p in sorted(movable, key=size):
        if state.resources_fit(node, shape, freed([p])):
            return (p,)
    taken: list[OtherPod] = []
    for p in sorted(movable, key=size, reverse=True):
        taken.append(p)
        if state.resources_fit(node, shape, freed(taken)):
            return tuple(taken)
    return ()

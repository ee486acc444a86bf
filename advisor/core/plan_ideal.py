"""How much of the Pending demand could any rearrangement place? (DESIGN.md §8, "ideal")

Two bounds frame the plans. From below: repack the whole cluster onto empty cards,
every running pod first and then the Pending ones, largest first, and count the Pending
demand that lands — an unrestricted repack that keeps every running pod can do at least
that well. Two packers run and the better counts: best-fit-decreasing (single-card pods to
the eligible card with the least free memory) and first-fit-decreasing through the core's
own placement (binpack nodes and cards). Multi-card pods always go through the core's
placement, which keeps them on one node. From above: Pending demand cannot exceed the
free memory of healthy cards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.model import Cluster, Pod, Policy, request_problem
from advisor.core.state import CardState, Shape

REPACK_POLICY = Policy(node="binpack", card="binpack")


@dataclass(frozen=True, slots=True)
class IdealBound:
    pending_pods: int
    pending_mib: int
    repack_pods: int  # Pending pods the repack places
    repack_mib: int
    repack_running_unplaced: int  # running pods the repack could not place (0 = a valid repack)
    free_mib: int  # free memory on healthy cards now: the upper bound
    method: str

    @property
    def repack_share(self) -> float:
        return self.repack_mib / self.pending_mib if self.pending_mib else 1.0

    @property
    def upper_share(self) -> float:
        return min(1.0, self.free_mib / self.pending_mib) if self.pending_mib else 1.0


@dataclass(frozen=True, slots=True)
class _Repack:
    pods: int
    mib: int
    running_unplaced: int
    method: str

    def rank(self) -> tuple[int, int, int]:
        return (-self.running_unplaced, self.mib, self.pods)


def ideal_bound(cluster: Cluster, free_mib: int) -> IdealBound:
    """`cluster` with the pods the current cycle places already running; `free_mib`: the
    free memory of its healthy cards."""
    items: list[tuple[tuple[bool, int, int, int], Pod, Shape]] = []
    pending_pods = pending_mib = 0
    for order, pod in enumerate(cluster.pods):
        if pod.invalid or request_problem(pod.request):
            continue
        if pod.placement is None:
            pending_pods += 1
            pending_mib += pod.request.memory_mib
        shape = Shape.of(pod.request)
        size = shape.gpus * shape.card_memory_mib
        items.append(((pod.placement is None, -size, -shape.gpus, order), pod, shape))
    items.sort(key=lambda item: item[0])
    best = max(
        (_repack(cluster, items, best_fit) for best_fit in (True, False)),
        key=_Repack.rank,
    )
    return IdealBound(
        pending_pods=pending_pods,
        pending_mib=pending_mib,
        repack_pods=best.pods,
        repack_mib=best.mib,
        repack_running_unplaced=best.running_unplaced,
        free_mib=free_mib,
        method=best.method,
    )


def _repack(
    cluster: Cluster, items: list[tuple[tuple[bool, int, int, int], Pod, Shape]], best_fit: bool
) -> _Repack:
    empty = Cluster(cluster.nodes, (), REPACK_POLICY, cluster.max_vgpus_per_card)
    state = CardState(empty)
    pods = mib = unplaced = 0
    for _, pod, shape in items:
        positions: list[int] | None
        if best_fit and shape.gpus == 1:
            fits = np.flatnonzero(state.eligible(shape))
            positions = [int(fits[np.argmin(state.free_memory[fits])])] if fits.size else None
        else:
            positions = state.place(shape, REPACK_POLICY.node, REPACK_POLICY.card)
        if positions is None:
            unplaced += pod.placement is not None
            continue
        state.apply(positions, shape)
        if pod.placement is None:
            pods += 1
            mib += pod.request.memory_mib
    method = "best-fit-decreasing" if best_fit else "first-fit-decreasing (core placement)"
    return _Repack(pods, mib, unplaced, f"{method}, running pods first")


def healthy_free_mib(state: CardState) -> int:
    return int(np.where(state.healthy, state.free_memory, 0).sum())

"""How much of the Pending demand could any rearrangement place? (docs/design.md §8, "ideal")

Two bounds frame the plans. From below: repack the whole cluster onto empty cards,
every running pod first and then the Pending ones, largest first, and count the Pending
demand that lands — an unrestricted repack that keeps every running pod can do at least
that well. Two packers run and the better counts: best-fit-decreasing (single-card pods to
the eligible card with the least free memory) and first-fit-decreasing through the core's
own placement (binpack nodes and cards). Multi-card pods always go through the core's
placement, which keeps them on one node. From above: Pending demand cannot exceed the
free memory of healthy cards; and, much tighter where pod sizes pack badly, a card-weight
function checked to be dual feasible (`packing_bound`) caps what any rearrangement places.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from advisor.core.model import Cluster, Pod, Policy, request_problem
from advisor.core.plan_board import reference_card_mib
from advisor.core.rules import rules_for
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
    reference = reference_card_mib(cluster)
    for order, pod in enumerate(cluster.pods):
        if pod.invalid or request_problem(pod.request, cluster.scheduler.profile):
            continue
        shape = Shape.of_pod(pod)
        size = shape.gpus * card_mib(cluster, reference, shape)
        if pod.placement is None:
            pending_pods += 1
            pending_mib += size
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
    empty = dataclasses.replace(cluster, pods=(), policy=REPACK_POLICY)
    state = CardState(empty)
    pods = mib = unplaced = 0
    for item_key, pod, shape in items:
        positions: list[int] | None
        if best_fit and shape.gpus == 1:
            # cards eligible on nodes passing every non-GPU filter, as `place` requires
            fits = np.flatnonzero(state.eligible(shape) & state.node_ok(shape)[state.node_of])
            positions = [int(fits[np.argmin(state.free_memory[fits])])] if fits.size else None
        else:
            positions = state.place(shape, REPACK_POLICY.node, REPACK_POLICY.card)
        if positions is None:
            unplaced += pod.placement is not None
            continue
        state.apply(positions, shape)
        if pod.placement is None:
            pods += 1
            mib += -item_key[1]  # the sort key holds -(gpus x MiB per card)
    method = "best-fit-decreasing" if best_fit else "first-fit-decreasing (core placement)"
    return _Repack(pods, mib, unplaced, f"{method}, running pods first")


def card_mib(cluster: Cluster, capacity: int, shape: Shape) -> int:
    """What `shape` takes of one card of `capacity` MiB under the cluster's profile."""
    if shape.card_memory_mib > 0 and shape.memory_percent == 0:
        return shape.card_memory_mib
    need = rules_for(cluster.scheduler).card_need(np.array([capacity], dtype=np.int64), shape)
    return int(need[0])


def healthy_free_mib(state: CardState) -> int:
    return int(np.where(state.healthy, state.free_memory, 0).sum())


# -- a packing bound from card weights (a dual-feasible function) ----------------------

WeightSteps = tuple[tuple[Fraction, Fraction], ...]


@dataclass(frozen=True, slots=True)
class PackingBound:
    """No rearrangement at all (any plans, any repack) places more Pending memory."""

    pending_mib: int
    bound_mib: float
    slack: Fraction  # cards minus the running pods' weight: the weight left for rescues

    @property
    def share(self) -> float:
        return min(1.0, self.bound_mib / self.pending_mib) if self.pending_mib else 1.0


def packing_bound(cluster: Cluster, steps: WeightSteps) -> PackingBound | None:
    """The bound a card-weight function proves, or None where it proves nothing.

    `steps` give each pod share of a card a weight: (least share, weight), ascending; a
    share weighs the weight of the last step at or below it. If no content that fits one
    card weighs more than 1 (checked here, exactly, for every share in `cluster`: the
    function is then "dual feasible"), the cluster's pods weigh at most one per healthy
    card after any rearrangement, so the Pending pods that can join the running ones
    weigh at most the cards' count minus the running pods' weight. The best Pending
    memory of that weight (fractional knapsack) bounds every plan: plans keep every
    running pod running. Needs one healthy card size (None otherwise); modes and the
    vGPU limit only forbid more contents, so the bound ignores them.
    """
    sizes = {c.memory_mib for n in cluster.nodes for c in n.cards if c.healthy}
    if len(sizes) != 1:
        return None
    capacity = sizes.pop()
    healthy = {(n.name, c.index) for n in cluster.nodes for c in n.cards if c.healthy}
    running: list[Shape] = []
    pending: list[Shape] = []
    for pod in cluster.pods:
        if pod.invalid or request_problem(pod.request, cluster.scheduler.profile):
            continue
        shape = Shape.of_pod(pod)
        mib = card_mib(cluster, capacity, shape)
        if mib != shape.card_memory_mib:  # a share or a whole card: its MiB on this size
            shape = dataclasses.replace(shape, card_memory_mib=mib, memory_percent=0)
        if pod.placement is None:
            pending.append(shape)
        elif all((pod.placement.node, k) in healthy for k in pod.placement.cards):
            running.append(shape)  # pods on unhealthy cards weigh nothing: a looser bound
    shares = {s.card_memory_mib for s in [*running, *pending] if s.card_memory_mib <= capacity}
    if _heaviest_card(capacity, shares, steps) > 1:
        raise ValueError("the card weights are not dual feasible for these pods")

    def weight(shape: Shape) -> Fraction:
        return shape.gpus * _weight(Fraction(shape.card_memory_mib, capacity), steps)

    slack = len(healthy) - sum((weight(s) for s in running), Fraction(0))
    items = sorted(
        ((s.gpus * s.card_memory_mib, weight(s)) for s in pending if s.card_memory_mib <= capacity),
        key=lambda item: Fraction(item[0]) / item[1] if item[1] else Fraction(10**30),
        reverse=True,
    )
    bound = Fraction(0)
    left = max(slack, Fraction(0))
    for mib, cost in items:
        if cost <= left:
            bound += mib
            left -= cost
        else:
            bound += mib * left / cost
            break
    total = sum(s.gpus * s.card_memory_mib for s in pending)
    return PackingBound(total, float(bound), slack)


def _weight(share: Fraction, steps: WeightSteps) -> Fraction:
    value = Fraction(0)
    for least, weight in steps:
        if share >= least:
            value = weight
    return value


def _heaviest_card(capacity: int, shares: set[int], steps: WeightSteps) -> Fraction:
    """The heaviest multiset of `shares` that fits one card (unbounded knapsack, exact)."""
    if not shares:
        return Fraction(0)
    unit = math.gcd(capacity, *shares)
    weights = {s // unit: _weight(Fraction(s, capacity), steps) for s in shares}
    scale = math.lcm(*(w.denominator for w in weights.values()))
    value = {s: int(w * scale) for s, w in weights.items()}
    best = [0] * (capacity // unit + 1)
    for room in range(1, len(best)):
        best[room] = max(
            [best[room - 1], *(best[room - s] + v for s, v in value.items() if s <= room)]
        )
    return Fraction(best[-1], scale)

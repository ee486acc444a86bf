"""How much of the Pending demand could any rearrangement place? (docs/design.md §8, "ideal")

Every figure here counts in the product's one unit of GPU demand: GPUs of memory, a pod's
MiB over the commonest healthy card's (`model.reference_card_mib`), a share or a
whole card counted at what it takes of that card. The plans count the same way, so the
three figures of the plan summary (what the plans rescue, the ideal repack, the memory
bound) always read in order.

Two bounds frame the plans. From below, the ideal: the best arrangement found that keeps
every running pod running. Repack the whole cluster onto empty cards, every running pod
first and then the Pending ones, largest first: two packers run, best-fit-decreasing
(single-card pods to the eligible card with the least free memory) and first-fit-decreasing
through the core's own placement (binpack nodes and cards; multi-card pods always go
through it, which keeps them on one node). A repack that leaves a running pod out is no
arrangement to aim at, and the plans' own end state is one (`with_plans`), so the ideal is
never below what the plans rescue. From above: memory. Every pod holds at least its least
memory over the cluster's card sizes, so the Pending pods that join the running ones hold
at most the counted cards' memory less the running pods' least (a fractional knapsack in
the unit above; never below the ideal). Much tighter where pod sizes pack badly, a
card-weight function checked to be dual feasible (`packing_bound`) caps what any
rearrangement places.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from advisor.core.model import Cluster, Pod, Policy, reference_card_mib
from advisor.core.plan.twins import RepackPlacer
from advisor.core.profiles import profile_of
from advisor.core.state import CardState, Shape

REPACK_POLICY = Policy(node="binpack", card="binpack")


@dataclass(frozen=True, slots=True)
class IdealBound:
    """In MiB of GPU demand (the module's unit: divide by the reference card for GPUs)."""

    pending_pods: int
    pending_mib: int
    repack_pods: int  # Pending pods the ideal arrangement places
    repack_mib: int
    repack_running_unplaced: int  # running pods it leaves out: 0, it keeps them all
    upper_mib: int  # no rearrangement places more (at most `pending_mib`)
    method: str

    @property
    def repack_share(self) -> float:
        return self.repack_mib / self.pending_mib if self.pending_mib else 1.0

    @property
    def upper_share(self) -> float:
        return min(1.0, self.upper_mib / self.pending_mib) if self.pending_mib else 1.0

    def with_plans(self, pods: int, mib: int) -> IdealBound:
        """The ideal, or the plans' end state (`pods` rescued, `mib` of them) where no repack
        tried keeps every running pod and places more."""
        if self.repack_running_unplaced == 0 and self.repack_mib >= mib:
            return self
        return dataclasses.replace(
            self,
            repack_pods=pods,
            repack_mib=mib,
            repack_running_unplaced=0,
            method="the plans' end state: no repack tried places more",
        )


@dataclass(frozen=True, slots=True)
class _Repack:
    pods: int
    mib: int
    running_unplaced: int
    method: str

    def rank(self) -> tuple[int, int, int]:
        return (-self.running_unplaced, self.mib, self.pods)


def ideal_bound(cluster: Cluster) -> IdealBound:
    """`cluster` with the pods the current cycle places already running. The plans are not
    known yet: `IdealBound.with_plans` takes them into account."""
    items: list[tuple[tuple[bool, int, int, int], Pod, Shape]] = []
    pending_pods = pending_mib = 0
    reference = reference_card_mib(cluster)
    profile = profile_of(cluster.scheduler)
    for order, pod in enumerate(cluster.pods):
        if pod.invalid or profile.request_problem(pod.request):
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
        upper_mib=min(memory_bound(cluster, reference), pending_mib),
        method=best.method,
    )


def memory_bound(cluster: Cluster, reference: int) -> int:
    """Pending demand (in the module's unit) that no arrangement keeping the running pods
    can exceed: each pod holds at least its least MiB over the card sizes, so the Pending
    pods that land hold at most the counted cards' memory less the running pods' least;
    the most demand of that much least memory (a fractional knapsack) bounds them."""
    rules = profile_of(cluster.scheduler)
    counted = {
        (n.name, c.index): c.memory_mib
        for n in cluster.nodes
        for c in n.cards
        if (c.healthy or not rules.checks_health) and c.mig is None  # MIG: no vGPU lands
    }
    if not counted:
        return 0
    sizes = sorted(set(counted.values()))
    room = sum(counted.values())
    items: list[tuple[int, int]] = []  # (demand, least MiB held), Pending pods
    for pod in cluster.pods:
        if pod.invalid or rules.request_problem(pod.request):
            continue
        shape = Shape.of_pod(pod)
        least = shape.gpus * min(card_mib(cluster, size, shape) for size in sizes)
        if pod.placement is None:
            items.append((shape.gpus * card_mib(cluster, reference, shape), least))
        elif all((pod.placement.node, k) in counted for k in pod.placement.cards):
            room -= least  # pods on cards not counted hold nothing here: a looser bound
    left = Fraction(max(room, 0))
    bound = Fraction(0)
    for demand, least in sorted(
        items, key=lambda item: Fraction(item[0], item[1]) if item[1] else Fraction(10**30)
    )[::-1]:
        if least <= left:
            bound += demand
            left -= least
        else:
            bound += Fraction(demand) * left / least
            break
    return math.floor(bound)


def _repack(
    cluster: Cluster, items: list[tuple[tuple[bool, int, int, int], Pod, Shape]], best_fit: bool
) -> _Repack:
    empty = dataclasses.replace(cluster, pods=(), policy=REPACK_POLICY)
    state = CardState(empty)
    # `state.place` and the best-fit rule over the nodes that can still win (`plan.twins`)
    placer = RepackPlacer(empty, state, (shape for _, _, shape in items))
    policy = (REPACK_POLICY.node, REPACK_POLICY.card)
    pods = mib = unplaced = 0
    for item_key, pod, shape in items:
        if best_fit and shape.gpus == 1:
            # cards eligible on nodes passing every non-GPU filter, as `place` requires
            positions = placer.best_fit(shape)
        else:
            positions = placer.place(shape, policy)
        if positions is None:
            unplaced += pod.placement is not None
            continue
        state.apply(positions, shape)
        placer.used(int(state.node_of[positions[0]]))
        if pod.placement is None:
            pods += 1
            mib += -item_key[1]  # the sort key holds -(gpus x MiB per card)
    method = "best-fit-decreasing" if best_fit else "first-fit-decreasing (core placement)"
    return _Repack(pods, mib, unplaced, f"{method}, running pods first")


def card_mib(cluster: Cluster, capacity: int, shape: Shape) -> int:
    """What `shape` takes of one card of `capacity` MiB under the cluster's profile."""
    if shape.card_memory_mib > 0 and shape.memory_percent == 0:
        return shape.card_memory_mib
    need = profile_of(cluster.scheduler).card_need(np.array([capacity], dtype=np.int64), shape)
    return int(need[0])


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
    profile = profile_of(cluster.scheduler)
    for pod in cluster.pods:
        if pod.invalid or profile.request_problem(pod.request):
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

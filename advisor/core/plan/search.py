"""Candidate plans: which cards to free for which Pending shape, whom to evict, and chains.

A target is a set of cards on one node and the Pending shape the room is for (one card
for a single-card pod, N cards for an N-card pod). Its victims are the fewest movable pods
on those cards that make each card eligible for the shape. The §8 simulation then says
what really happens; evicted pods that find no room get a chain: a card elsewhere where
evicting one or two smaller pods makes room for them, tried again, a few levels deep
(the KAI-scheduler's consolidation, with the simulation as the judge).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.core.plan.board import BIG, Board, Outcome
from advisor.core.plan.chains import Chains
from advisor.core.plan.victims import card_victims, node_cards, node_stamps, room_on
from advisor.core.state import Shape

# (node, cards, then the level: gpus, card memory, card core, mode, cpu, memory, its id)
TargetKey = tuple[int, tuple[int, ...], int, int, int, int, int, int, int]
PlanKey = tuple[float, int, int, int, TargetKey]
# What a simulated plan is ranked by first: the cost of its evictions per rescued GPU
# ("ratio": cheap rescues pay for dear ones), or the GPUs it rescues ("value": a key below
# zero, so ahead of every estimate whenever a plan rescues more GPUs than
# VALUE_EVICTION_WEIGHT per unit of cost: the greedy commits the most valuable plan it has
# simulated, which spends the few large holes of a packed cluster on big pods), or cost
# plus large holes used up per rescued GPU ("holes": a large hole is room for a movable pod
# of the median size; it is what the next evicted pods need). Costs are counted in units of
# the median eviction cost (`plan_cost`), so where every pod costs the same they rank as
# counts. Estimates are cost per GPU in all three: they only order which targets are
# simulated first.
Objective = Literal["ratio", "value", "holes"]
VALUE_EVICTION_WEIGHT = 0.01  # "value": among equal rescues, cheaper first


@dataclass(frozen=True, slots=True)
class Limits:
    max_evictions: int  # per plan: what this search looks for
    max_chain_depth: int
    max_victims_per_card: int


@dataclass(frozen=True, slots=True)
class Target:
    node: int
    cards: tuple[int, ...]  # card positions to free
    level: Shape  # the Pending shape the room is for
    # Tells apart levels equal but for their node constraints (which have no order): the
    # first Pending pod of the level, a pod id fixed for the whole search.
    level_id: int = 0

    @property
    def key(self) -> TargetKey:
        lv, r = self.level, self.level.resources
        return (
            self.node,
            self.cards,
            lv.gpus,
            lv.card_memory_mib,
            lv.card_core,
            lv.mode,
            r.cpu_milli,
            r.memory_bytes,
            self.level_id,
        )


@dataclass(frozen=True, slots=True)
class Proposal:
    target: Target
    evict: tuple[int, ...]  # queue order of the evicted pods
    landed: dict[int, list[int]]  # what the quick simulation gave (pod -> card positions)
    rescued: tuple[int, ...]
    key: PlanKey


class Search:
    """Targets and their evaluation on one board; `reference_mib` is one GPU's memory."""

    def __init__(
        self, board: Board, limits: Limits, reference_mib: int, objective: Objective = "ratio"
    ) -> None:
        self.board = board
        self.limits = limits
        self.reference_mib = reference_mib
        self.objective: Objective = objective
        self.evaluations = 0  # targets simulated
        self.estimates = 0  # targets looked at
        self.cost_unit = _median_cost(board)
        self.hole_mib = _median_movable_mib(board) if objective == "holes" else 0
        self.chains = Chains(board)
        # Pending only shrinks during a search, so each level's first pod stays its id.
        self.level_ids: dict[Shape, int] = {}
        for pod in board.pending:
            self.level_ids.setdefault(board.shape_of(pod), pod)

    def gpus(self, pod: int) -> float:
        return self.board.mib(pod) / self.reference_mib

    # -- victims ---------------------------------------------------------------------

    def card_victims(self, k: int, level: Shape) -> tuple[int, ...] | None:
        """`victims.card_victims` within this search's bound per card."""
        return card_victims(self.board, k, level, self.limits.max_victims_per_card)

    def room_on(self, k: int) -> int:
        return room_on(self.board, k)

    def victims(self, target: Target) -> tuple[int, ...] | None:
        """The target's victims, or None when its cards cannot be freed or the real
        scheduler would still refuse the level on the node once they left."""
        chosen: list[int] = []
        for k in target.cards:
            found = self.card_victims(k, target.level)
            if found is None:
                return None
            chosen.extend(p for p in found if p not in chosen)
        if not self.node_admits(target.node, target.level, chosen):
            return None
        if self.board.members:
            # a running gang gives its surplus, or goes whole (§10.4)
            return tuple(self.board.whole_gangs(chosen))
        return tuple(chosen)

    def node_admits(self, node: int, level: Shape, leaving: Sequence[int]) -> bool:
        """Whether `node` passes every non-GPU filter for `level` once the pods `leaving`
        (on the node) are evicted: the static filters, then pod slots, cpu and memory."""
        st = self.board.state
        if not st.static_ok(level.constraints)[node]:
            return False
        return st.resources_fit(node, level, self._demand(leaving))

    def _demand(self, pods: Iterable[int]) -> tuple[int, int, int]:
        return self.board.demand(pods)

    # -- targets ---------------------------------------------------------------------

    def card_targets(self, positions: Iterable[int], levels: Sequence[Shape]) -> Iterator[Target]:
        """Single-card targets: per card, each distinct victim set with the largest shape
        it makes room for."""
        b = self.board
        singles = sorted((lv for lv in levels if lv.gpus == 1), key=_level_order)
        if not singles:
            return
        smallest = min(b.nominal_mib(lv) for lv in singles)
        for k in positions:
            free = int(b.state.free_memory[k])
            room = free + sum(b.card_mib[p] for p in b.on_card[k] if b.movable(p))
            if room < smallest or not b.state.healthy[k]:
                continue
            node = b.node_of_card(k)
            best: dict[tuple[int, ...], Shape] = {}
            most = self.room_on(k)
            for level in singles:
                if most < b.need_on(level, k):
                    b.card_checks += 1  # no victims can do (`room_on`), counted as checked
                    continue
                found = self.card_victims(k, level)
                if found and self.node_admits(node, level, found):
                    best[found] = level
            for level in dict.fromkeys(best.values()):
                yield Target(node, (k,), level, self.level_ids.get(level, 0))

    def node_targets(self, nodes: Iterable[int], levels: Sequence[Shape]) -> Iterator[Target]:
        """Multi-card targets: per node, the N cards cheapest to free for an N-card shape."""
        b, st = self.board, self.board.state
        multis = sorted((lv for lv in levels if lv.gpus > 1), key=_level_order)
        most = self.limits.max_victims_per_card
        for n in nodes:
            stamps = None  # once a level asks
            for level in multis:
                if st.healthy_count[n] < level.gpus or not st.static_ok(level.constraints)[n]:
                    continue
                if stamps is None:
                    stamps = node_stamps(b, n)
                # `victims` checks the node's cpu, memory and pod slots for this choice
                cards = node_cards(b, n, level, most, stamps)
                if cards is not None:
                    yield Target(n, cards, level, self.level_ids.get(level, 0))

    def estimate(self, target: Target) -> PlanKey | None:
        """A hopeful key before any simulation: the victims alone, rescuing one pod of the
        target's shape."""
        self.estimates += 1
        victims = self.victims(target)
        if not victims or len(victims) > self.limits.max_evictions:
            return None
        value = target.level.gpus * self.board.nominal_mib(target.level) / self.reference_mib
        return (self.units(victims) / value, len(victims), 0, 0, target.key)

    def units(self, evict: Iterable[int]) -> float:
        """What evicting these pods costs, in units of the median eviction cost."""
        return self.board.cost(evict) / self.cost_unit

    # -- evaluation ------------------------------------------------------------------

    def evaluate(self, target: Target) -> Proposal | None:
        """Simulate the target's evictions, adding chains for evicted pods with no room;
        a proposal only when every evicted pod lands and someone is rescued."""
        self.evaluations += 1
        b, lim = self.board, self.limits
        found = self.victims(target)
        if not found:
            return None
        evict = self._ordered(found)
        best_value = target.level.gpus * b.nominal_mib(target.level) / self.reference_mib
        for depth in range(lim.max_chain_depth + 1):
            outcome = b.simulate(evict, quick=True)
            if outcome.intruders:
                return None  # a Pending pod no plan may rescue takes the room
            homeless = outcome.stranded
            if not outcome.rescued and outcome.short and depth < lim.max_chain_depth:
                # A Pending gang fitted some members but not min_member: room for the rest
                # on further cards (rescuing a gang means placing min_member), if any.
                more = self.gang_room(target, evict, outcome)
                if more is not None:
                    if len(evict) + len(more) > lim.max_evictions:
                        return None
                    evict = self._ordered(b.whole_gangs([*evict, *more]))
                    continue
            if not outcome.rescued:
                # An evicted pod of higher priority is queued first and may take its own
                # room back: give it a home elsewhere, as if it had found none.
                taken = set(target.cards)
                homeless = [p for p in evict if taken.intersection(outcome.landed.get(p, ()))]
                if not homeless:
                    return None
            gpus = sum(self.gpus(p) for p in outcome.rescued) or best_value
            allowed = lim.max_evictions
            if not homeless:
                if len(evict) > allowed or not b.within_budgets(evict):
                    return None  # over a cap, or over a disruption budget (never committed)
                key = self.key(target, evict, gpus, outcome)
                return Proposal(target, evict, outcome.landed, tuple(outcome.rescued), key)
            if depth == lim.max_chain_depth:
                return None
            extra = self.chains.extra_evictions(outcome, homeless, evict, target.cards)
            if extra is None or len(evict) + len(extra) > allowed:
                return None
            if b.splits_gang([*evict, *extra]):
                return None  # the chain takes more of a gang than its surplus
            evict = self._ordered([*evict, *extra])
        return None

    def gang_room(self, target: Target, evict: Sequence[int], outcome: Outcome) -> list[int] | None:
        """For the first rescuable gang the simulated plan left short of min_member, the
        victims of as many further cards as it lacks members, each card the cheapest to
        free for a member's shape (single-card members only); None when that many cards
        cannot be freed."""
        b = self.board
        group = next(
            (g for g in outcome.short if b.rescuable.intersection(b.pending_members[g])), None
        )
        if group is None:
            return None
        members = b.pending_members[group]
        level = b.shape_of(members[0])
        if level.gpus != 1 or any(b.shape_of(m) != level for m in members):
            return None
        missing = b.gang_need(group, evict) - outcome.short[group]
        used = set(target.cards)
        for pod in evict:
            used.update(b.where[pod] or [])
        options = []
        for k in range(len(b.state.capacity)):
            if k in used:
                continue
            found = self.card_victims(k, level)
            if found and self.node_admits(b.node_of_card(k), level, found):
                options.append((b.cost(b.whole_gangs(found)), len(found), k, found))
        if len(options) < missing:
            return None
        extra: list[int] = []
        for *_, found in sorted(options)[:missing]:
            extra.extend(p for p in found if p not in extra)
        return extra

    def _ordered(self, pods: Iterable[int]) -> tuple[int, ...]:
        """Re-queue order: priority, then larger first (as first-fit-decreasing), then id."""
        b = self.board
        return tuple(
            sorted(
                set(pods),
                key=lambda p: (
                    -b.priority[p],
                    -b.shape_of(p).gpus,
                    -b.card_mib[p],
                    p,
                ),
            )
        )

    def key(self, target: Target, evict: Sequence[int], gpus: float, outcome: Outcome) -> PlanKey:
        b = self.board
        worst = max(b.priority[p] for p in evict)
        moved = sum(b.mib(p) for p in evict)
        count = len(evict)
        cost = self.units(evict)
        if self.objective == "value":
            first = VALUE_EVICTION_WEIGHT * cost - gpus
        elif self.objective == "holes":
            first = (cost + self._holes_used(evict, outcome)) / gpus
        else:
            first = cost / gpus
        return (round(first, 9), count, worst, moved, target.key)

    def _holes_used(self, evict: Sequence[int], outcome: Outcome) -> int:
        """Large holes the plan fills, less those it opens, on the cards it changes."""
        b = self.board
        cards = {k for positions in outcome.landed.values() for k in positions}
        cards.update(k for p in evict for k in b.where[p] or [])
        changed = sorted(cards)
        before = int(np.count_nonzero(b.state.free_memory[changed] >= self.hole_mib))
        return before - int(np.count_nonzero(outcome.state.free_memory[changed] >= self.hole_mib))


def _level_order(level: Shape) -> tuple[int, int, int, int, int, int]:
    r = level.resources
    return (
        level.card_memory_mib,
        level.card_core,
        level.mode,
        level.gpus,
        r.cpu_milli,
        r.memory_bytes,
    )


def _median_movable_mib(board: Board) -> int:
    """The median memory of the running single-card pods a plan may evict now."""
    limit = board.movable_limit()
    sizes = sorted(
        board.card_mib[pod]
        for pod, shape in enumerate(board.shape)
        if shape is not None
        and shape.gpus == 1
        and board.where[pod] is not None
        and board.evictable[pod]
        and board.card_mib[pod] < limit
    )
    return sizes[len(sizes) // 2] if sizes else int(BIG)


def _median_cost(board: Board) -> float:
    """The median cost of evicting one running pod a plan may evict (1 when none costs)."""
    costs = sorted(
        c.cost
        for pod, c in enumerate(board.costs)
        if board.where[pod] is not None and board.evictable[pod] and c.cost > 0
    )
    return costs[len(costs) // 2] if costs else 1.0


def levels_of(board: Board, pods: Iterable[int]) -> list[Shape]:
    """The distinct shapes of `pods`, smallest first; shapes equal but for their node
    constraints in the order their first pod comes in `pods` (a queue order)."""
    first: dict[Shape, None] = {}
    for p in pods:
        first.setdefault(board.shape_of(p), None)
    return sorted(first, key=_level_order)

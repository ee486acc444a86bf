"""The planner's lazy greedy (docs/design.md §8): targets in a heap ordered by an optimistic
estimate or by a simulated plan; a plan is committed only when its simulation is of the
current board, the literal §8 simulation agrees, and the caps allow it. A full listing puts
in listings keyed by floors (`plan.floors`), worked out into targets when they reach the top.

Pure but for the `stop` callback the caller passes: it says when the work budget is spent
(the planner's never reads the clock, so a run ends where it ends on any machine).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from advisor.core.model import Placement
from advisor.core.plan.board import Board, Outcome
from advisor.core.plan.exhaustive import smallest_plan
from advisor.core.plan.floors import CardFloors, Listing, listings
from advisor.core.plan.limits import EvictionBudget
from advisor.core.plan.search import PlanKey, Proposal, Search, Target, levels_of
from advisor.core.state import Shape

REGENERATE_CHECK_EVERY = 64  # targets listed between looks at the budget
LISTED = -2  # the epoch of a listing's entry
Stop = Callable[[], str | None]  # why the search must stop now ("work"), or None
Signature = tuple[tuple[Shape, ...], int]  # the Pending shapes a plan may rescue, the movable limit


@dataclass(frozen=True, slots=True)
class Plan:
    rescues: tuple[str, ...]  # queue order
    evict: tuple[str, ...]  # the order to evict in (the order they re-enter the queue)
    placements: tuple[tuple[str, Placement], ...]  # rescued, then evicted
    evicted_from: tuple[tuple[str, Placement], ...]
    rescued_mib: int
    rescued_gpus: float
    moved_mib: int
    rescued_cards: int = 0  # cards the rescued pods get
    cost: float = 0.0  # what its evictions cost (`plan_cost`)
    costs: tuple[tuple[str, float, str], ...] = ()  # per evicted pod: (name, charged, why)


def made_plan(board: Board, evict: tuple[int, ...], exact: Outcome, reference_mib: int) -> Plan:
    """The plan `evict` makes on `board`, as the literal simulation `exact` placed it."""
    b = board
    rescued_mib = sum(b.mib(p) for p in exact.rescued)
    return Plan(
        rescues=tuple(b.pods[p].name for p in exact.rescued),
        evict=tuple(b.pods[p].name for p in evict),
        placements=tuple(
            (b.pods[p].name, b.placement(exact.landed[p])) for p in [*exact.rescued, *evict]
        ),
        evicted_from=tuple((b.pods[p].name, b.placement(b.where[p] or [])) for p in evict),
        rescued_mib=rescued_mib,
        rescued_gpus=rescued_mib / reference_mib,
        moved_mib=sum(b.mib(p) for p in evict),
        rescued_cards=sum(b.shape_of(p).gpus for p in exact.rescued),
        cost=b.cost(evict),
        costs=_charges(b, evict),
    )


def _charges(b: Board, evict: Iterable[int]) -> tuple[tuple[str, float, str], ...]:
    """Per evicted pod what it adds to the plan's cost and why: a batch workload's pods
    after its first are part of the same restart."""
    first: dict[str, str] = {}
    charges = []
    for pod in evict:
        price, name = b.costs[pod], b.pods[pod].name
        if price.gang is not None and price.gang in first:
            charges.append((name, 0.0, f"restarts with {first[price.gang]} ({price.gang})"))
            continue
        if price.gang is not None:
            dearest = max(b.costs[p].cost for p in evict if b.costs[p].gang == price.gang)
            first[price.gang] = name
            charges.append((name, dearest, price.why))
        else:
            charges.append((name, price.cost, price.why))
    return tuple(charges)


# (key, -epoch: the freshest simulation first among equal keys, seq, target or listing,
# epoch, plan)
_Entry = tuple[PlanKey, int, int, Target | Listing, int, Proposal | None]


class Greedy:
    """Lazy greedy: a heap of targets keyed by an optimistic estimate or by a simulated
    plan; a plan is committed only when its simulation is of the current board."""

    def __init__(
        self,
        board: Board,
        search: Search,
        targetable: set[int],
        budget: EvictionBudget,
        patience: int,
    ) -> None:
        self.board = board
        self.search = search
        self.targetable = targetable
        self.budget = budget
        self.patience = patience
        self.evictions = 0
        self.rescued_cards = 0
        self.rescued_gpus = 0.0
        self.heap: list[_Entry] = []
        self.latest: dict[object, int] = {}  # per target or listing key, its entry's seq
        self.levels: list[Shape] = []  # the Pending shapes a plan may rescue
        self.live: set[int] = set()  # their ids (`Search.level_ids`)
        self.shapes_seen = -1  # `Board.shapes_seen` when last listed
        self.worked: set[int] = set()  # cards whose targets are in the heap, not a listing
        self.floors = CardFloors(search)
        self.counter = itertools.count()
        self.mismatches = 0  # simulations disagreeing, or a gang split (never, if correct)
        self.stop: Stop = lambda: None  # set by `run`
        self.stopped: str | None = None

    def run(self, stop: Stop) -> list[Plan]:
        """The plans, in order; `stopped` says why the search ended early (None: it did not)."""
        self.stop = stop
        plans: list[Plan] = []
        signature = self._regenerate(None)
        commits_since_full = 0
        best: tuple[Proposal, int] | None = None  # best plan simulated on this board
        misses = 0  # simulations since the last commit
        while True:
            self.stopped = stop()
            if self.stopped is not None:
                return plans
            if not self.heap:
                if commits_since_full == 0:
                    # Nothing left of the targets' form: on a small board, every small set.
                    found = smallest_plan(self.board, self.search, self.allows, stop)
                    done = None if found is None else self._commit(found)
                    if done is None:
                        return plans
                    plans.append(done[0])
                signature = self._regenerate(None)
                commits_since_full = 0
                continue
            _, _, seq, target, epoch, proposal = heapq.heappop(self.heap)
            if self.latest.get(target.key) != seq:
                continue  # superseded
            if isinstance(target, Listing):
                del self.latest[target.key]
                self._work_out(target)
                continue
            if target.level_id not in self.live:
                del self.latest[target.key]  # no pod of its shape is Pending now
                continue
            if proposal is None or epoch != self.board.epoch:
                fresh = self.search.evaluate(target)
                if fresh is None:
                    del self.latest[target.key]
                else:
                    fresh_seq = self._push(fresh.key, target, self.board.epoch, fresh)
                    if best is None or fresh.key < best[0].key:
                        best = (fresh, fresh_seq)
                misses += 1
                if misses < self.patience or best is None:
                    continue
                # A change that touches every target (the queue's next pod is smaller, say)
                # would have them all re-simulated before one is committed: after `patience`
                # simulations, take the best plan simulated on this board.
                proposal, seq = best
                target = proposal.target
                if self.latest.get(target.key) != seq:
                    best, misses = None, 0
                    continue
            del self.latest[target.key]
            best, misses = None, 0
            done = self._commit(proposal)
            if done is None:
                continue
            made, changed = done
            plans.append(made)
            commits_since_full += 1
            now = self._signature()
            if now[1] != signature[1]:
                signature = self._regenerate(None)  # more pods may move: every card changes
                commits_since_full = 0
            else:
                if self.board.shapes_seen != self.shapes_seen:
                    self._shapes_changed(list(now[0]), levels_changed=now != signature)
                signature = now
                self._regenerate(changed)

    def _signature(self) -> Signature:
        levels = levels_of(self.board, (p for p in self.board.pending if p in self.targetable))
        return (tuple(levels), self.board.movable_limit())

    def _regenerate(self, positions: Iterable[int] | None) -> Signature:
        """Every target again (None: as listings, the heap started afresh), or the targets
        of the cards at `positions` and of their nodes (the listings there superseded)."""
        b = self.board
        if positions is None:
            self._set_levels(levels_of(b, (p for p in b.pending if p in self.targetable)))
            self.shapes_seen = b.shapes_seen
            b.take_mask_changes()  # every card is listed now
            self.worked = set()
            self.heap, self.latest = [], {}
            for key, listing in listings(self.search, self.levels, self.floors):
                seq = next(self.counter)
                self.latest[listing.key] = seq
                self.heap.append((key, -LISTED, seq, listing, LISTED, None))
            heapq.heapify(self.heap)  # one heap of it all: faster than a push each
            return (tuple(self.levels), b.movable_limit())
        # every card of the nodes changed: a card's targets read its node's cpu and memory
        nodes = sorted({b.node_of_card(k) for k in positions})
        cards = [k for n in nodes for k in b.state.node_positions(n)]
        ids = [self.search.level_ids.get(level, 0) for level in self.levels if level.gpus > 1]
        for n in nodes:
            for k in b.state.node_positions(n):
                self.latest.pop(Listing(n, k, None).key, None)
            for level_id in ids:
                self.latest.pop(Listing(n, -1, None, level_id).key, None)
        self.worked.update(cards)
        targets = itertools.chain(
            self.search.card_targets(cards, self.levels),
            self.search.node_targets(nodes, self.levels),
        )
        self._estimate(targets)
        return (tuple(self.levels), b.movable_limit())

    def _set_levels(self, levels: list[Shape]) -> None:
        self.levels = levels
        self.live = {self.search.level_ids.get(level, 0) for level in levels}

    def _shapes_changed(self, levels: list[Shape], levels_changed: bool) -> None:
        """The Pending shapes changed, the movable limit did not. The targets of a shape
        gone are dropped as they come up; where a shape is gone the single-card targets of
        every card worked out are listed again (a victim set's largest shape may be gone),
        and cards still listed are worked out as they come up; the nodes of the cards
        where other pods may move now are listed again. Every other target stands: its
        victims and node are as they were."""
        b = self.board
        self.shapes_seen = b.shapes_seen
        self._set_levels(levels)
        nodes = np.zeros(len(b.state.node_names), dtype=np.bool_)
        nodes[b.state.node_of[sorted(b.take_mask_changes())]] = True
        cards = nodes
        if levels_changed:
            # A card still listed is worked out with the levels of the day it comes up,
            # and its floor stays below its targets (fewer levels only raise floors): only
            # the cards worked out since they were listed are listed again.
            cards = nodes.copy()
            cards[b.state.node_of[sorted(self.worked)]] = True
        node_of = b.state.node_of
        self.worked = {k for k in self.worked if not cards[node_of[k]]}  # listed again
        for key, listing in listings(self.search, self.levels, self.floors, nodes, cards):
            self._push(key, listing, LISTED, None)

    def _work_out(self, listing: Listing) -> None:
        """A listing's targets, estimated, into the heap."""
        if listing.level is None:
            self.worked.add(listing.card)
            targets = self.search.card_targets([listing.card], self.levels)
        else:
            targets = self.search.node_targets([listing.node], [listing.level])
        self._estimate(targets)

    def _estimate(self, targets: Iterable[Target]) -> None:
        for count, target in enumerate(targets):
            if count % REGENERATE_CHECK_EVERY == 0 and self.stop() is not None:
                break
            key = self.search.estimate(target)
            if key is not None:
                self._push(key, target, -1, None)

    def _push(
        self, key: PlanKey, target: Target | Listing, epoch: int, proposal: Proposal | None
    ) -> int:
        seq = next(self.counter)
        self.latest[target.key] = seq
        heapq.heappush(self.heap, (key, -epoch, seq, target, epoch, proposal))
        return seq

    def allows(self, proposal: Proposal) -> bool:
        """Whether the whole advice's eviction budget still has room for this plan."""
        b = self.board
        cards = sum(b.shape_of(p).gpus for p in proposal.rescued)
        gpus = sum(b.mib(p) for p in proposal.rescued) / self.search.reference_mib
        return self.budget.allows(
            self.evictions + len(proposal.evict),
            self.rescued_cards + cards,
            self.rescued_gpus + gpus,
        )

    def _commit(self, proposal: Proposal) -> tuple[Plan, set[int]] | None:
        b = self.board
        if not self.allows(proposal):
            return None  # too dear now; plans come cheapest first, so it stays too dear
        exact = b.simulate(proposal.evict, quick=False)
        same = tuple(exact.rescued) == proposal.rescued and exact.landed == proposal.landed
        agrees = same and b.cycle_agrees(proposal.evict, exact)  # the job cycle, where it decides
        if exact.stranded or exact.intruders or not agrees or b.splits_gang(proposal.evict):
            self.mismatches += 1
            return None
        made = made_plan(b, proposal.evict, exact, self.search.reference_mib)
        changed = b.commit(proposal.evict, exact)
        self.evictions += len(made.evict)
        self.rescued_cards += made.rescued_cards
        self.rescued_gpus += made.rescued_gpus
        return made, changed

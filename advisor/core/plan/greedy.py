"""The planner's lazy greedy (docs/design.md §8): targets in a heap ordered by an optimistic
estimate or by a simulated plan; a plan is committed only when its simulation is of the
current board, the literal §8 simulation agrees, and the caps allow it.

Pure but for the `stop` callback the caller passes: it says when the work budget is spent
(the planner's never reads the clock, so a run ends where it ends on any machine).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from advisor.core.model import Placement
from advisor.core.plan.board import Board, Outcome
from advisor.core.plan.exhaustive import smallest_plan
from advisor.core.plan.limits import EvictionBudget
from advisor.core.plan.search import PlanKey, Proposal, Search, Target, TargetKey, levels_of

REGENERATE_CHECK_EVERY = 64  # targets listed between looks at the budget
Stop = Callable[[], str | None]  # why the search must stop now ("work"), or None


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


# (key, -epoch: the freshest simulation first among equal keys, seq, target, epoch, plan)
_Entry = tuple[PlanKey, int, int, Target, int, Proposal | None]


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
        self.latest: dict[TargetKey, int] = {}
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
            if now != signature:
                signature = self._regenerate(None)
                commits_since_full = 0
            else:
                self._regenerate(changed)

    def _signature(self) -> tuple[object, ...]:
        levels = levels_of(self.board, (p for p in self.board.pending if p in self.targetable))
        return (tuple(levels), self.board.movable_limit())

    def _regenerate(self, positions: Iterable[int] | None) -> tuple[object, ...]:
        b = self.board
        levels = levels_of(b, (p for p in b.pending if p in self.targetable))
        if positions is None:
            cards: list[int] = list(range(len(b.state.capacity)))
            nodes: list[int] = list(range(len(b.state.node_names)))
        else:
            cards = sorted(set(positions))
            nodes = sorted({b.node_of_card(k) for k in cards})
        targets = itertools.chain(
            self.search.card_targets(cards, levels), self.search.node_targets(nodes, levels)
        )
        for count, target in enumerate(targets):
            # On a large cluster listing every target can outlast the budget by itself.
            if count % REGENERATE_CHECK_EVERY == 0 and self.stop() is not None:
                break
            key = self.search.estimate(target)
            if key is not None:
                self._push(key, target, -1, None)
        if positions is None:
            # A listing of every target supersedes most entries: drop those (they would be
            # skipped when popped) so the heap stays the size of one listing. Every entry
            # has its own seq, so what pops, in which order, is the same.
            self.heap = [e for e in self.heap if self.latest.get(e[3].key) == e[2]]
            heapq.heapify(self.heap)
        return (tuple(levels), b.movable_limit())

    def _push(self, key: PlanKey, target: Target, epoch: int, proposal: Proposal | None) -> int:
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

"""Rebalancing plans verified by simulation (docs/design.md §8).

A plan is a set of pods to evict. The advisor never evicts; the workload controllers
recreate the pods and the real scheduler places them, so a plan is judged by simulating
exactly that: the evicted pods are queued behind the Pending pods of equal priority and
the whole queue is placed in order under the policy. A plan is kept only when every pod
it rescues and every pod it evicts lands; plans apply one after the other, each on the
state the ones before it leave. Plans start from the state after the current cycle: the
pods `diagnose` finds schedulable are taken as placed where it places them (the scheduler
binds them before anyone could act on a plan).

The search is a lazy greedy over targets (cards to free for a Pending shape): each
target's best plan is simulated when it reaches the top of a heap ordered by evictions
per rescued GPU, then fewer evictions, lower priority and less memory moved; a plan
whose simulation is of the current state is committed once the literal §8 simulation
agrees. Evictions per rescued GPU are capped for all plans together (and, more loosely,
per plan), so cheap rescues pay for dearer ones.

Which plan is "best" first is a choice: fewest evictions per rescued GPU, most GPUs
rescued, or fewest evictions and large holes used up per rescued GPU. On a packed cluster
the large holes that evicted pods need are what runs out, and any of these orders (and how
long the greedy waits for a better plan) can spend them better, so while the work done
stays within `portfolio_evaluations` the greedy runs again from scratch under the next of
`RUNS` and the run that rescues the most wins (then fewer evictions, then the earlier run).

Pure: frozen values in and out; the only outside input is the optional `clock` the caller
passes for the time budget. Without one (or when the budget is not reached) the result is
deterministic.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from advisor.core.diagnose import Cause, Diagnosis, diagnose
from advisor.core.model import Cluster, Placement, Policy
from advisor.core.plan_board import Board, reference_card_mib
from advisor.core.plan_ideal import IdealBound, healthy_free_mib, ideal_bound
from advisor.core.plan_search import (
    Limits,
    Objective,
    PlanKey,
    Proposal,
    Search,
    Target,
    TargetKey,
    levels_of,
)

Clock = Callable[[], float]
DEFAULT_TIME_BUDGET_S = 60.0
REGENERATE_CHECK_EVERY = 64  # targets listed between looks at the clock
# The greedy's runs, in order: the objective, and its patience (simulations after a
# commit before the best fresh plan is taken anyway).
RUNS: tuple[tuple[Objective, int], ...] = (("ratio", 16), ("value", 16), ("holes", 128))


@dataclass(frozen=True, slots=True)
class PlanOptions:
    time_budget_s: float | None = DEFAULT_TIME_BUDGET_S  # needs a clock to apply
    max_evictions_per_gpu: float = 3.0  # all plans together: evictions / rescued GPUs
    max_plan_evictions_per_gpu: float = 6.0  # any one plan
    max_chain_depth: int = 3  # rounds of chains for evicted pods with no room
    max_victims_per_card: int = 4
    max_evictions_per_plan: int = 32
    max_evaluations: int | None = None  # a deterministic bound on the work, for tests
    # a further greedy run (next objective) starts only while the runs so far did less
    portfolio_evaluations: int = 5000


@dataclass(frozen=True, slots=True)
class Plan:
    rescues: tuple[str, ...]  # queue order
    evict: tuple[str, ...]  # the order to evict in (the order they re-enter the queue)
    placements: tuple[tuple[str, Placement], ...]  # rescued, then evicted
    evicted_from: tuple[tuple[str, Placement], ...]
    rescued_mib: int
    rescued_gpus: float
    moved_mib: int


@dataclass(frozen=True, slots=True)
class Unresolved:
    pod: str
    cause: Cause
    cluster_free_sufficient: bool | None = None


@dataclass(frozen=True, slots=True)
class PlanReport:
    policy: Policy
    plans: tuple[Plan, ...]
    unresolved: tuple[Unresolved, ...]
    schedulable: tuple[tuple[str, Placement], ...]  # placed by the current cycle, no plan needed
    ideal: IdealBound
    reference_card_mib: int  # one "GPU" in the figures
    elapsed_s: float
    budget_s: float | None
    budget_exhausted: bool
    evaluations: int

    @property
    def rescued_pods(self) -> int:
        return sum(len(p.rescues) for p in self.plans)

    @property
    def rescued_mib(self) -> int:
        return sum(p.rescued_mib for p in self.plans)

    @property
    def rescued_gpus(self) -> float:
        return self.rescued_mib / self.reference_card_mib

    @property
    def pending_gpus(self) -> float:
        return self.ideal.pending_mib / self.reference_card_mib

    @property
    def rescued_share(self) -> float:
        pending = self.ideal.pending_mib
        return self.rescued_mib / pending if pending else 0.0

    @property
    def evictions(self) -> int:
        return sum(len(p.evict) for p in self.plans)


def plan(
    cluster: Cluster,
    options: PlanOptions | None = None,
    clock: Clock | None = None,
    diagnosis: Diagnosis | None = None,
) -> PlanReport:
    """Plans that let Pending pods run, each verified by the §8 simulation. `diagnosis`:
    this cluster's, when the caller already has it (only causes and placements are read)."""
    options = options or PlanOptions()
    start = clock() if clock else 0.0
    if diagnosis is None:
        diagnosis = diagnose(cluster, node_detail_limit=0)
    bound = {d.pod.name: d.placement for d in diagnosis.pods if d.placement is not None}
    waiting = [d for d in diagnosis.pods if d.cause in ("fragmentation", "capacity")]
    targetable = {
        d.pod.name for d in waiting if d.cause == "fragmentation" or d.cluster_free_sufficient
    }
    reference = reference_card_mib(cluster)
    limits = Limits(
        options.max_plan_evictions_per_gpu,
        options.max_chain_depth,
        options.max_victims_per_card,
        options.max_evictions_per_plan,
    )
    deadline = None
    if clock is not None and options.time_budget_s is not None:
        deadline = start + options.time_budget_s
    ideal: IdealBound | None = None
    best: tuple[tuple[int, int], list[Plan]] | None = None
    evaluations = 0
    exhausted = False
    for objective, patience in RUNS:
        if best is not None and (exhausted or evaluations >= options.portfolio_evaluations):
            break
        board = Board(cluster, bound)
        board.set_pending(d.pod.name for d in waiting)
        if ideal is None:
            ideal = ideal_bound(_with_bound(cluster, bound), healthy_free_mib(board.state))
        search = Search(board, limits, reference, objective)
        greedy = _Greedy(
            board,
            search,
            {board.ids[n] for n in targetable},
            options.max_evictions_per_gpu,
            patience,
        )
        left = None if options.max_evaluations is None else options.max_evaluations - evaluations
        plans, exhausted = greedy.run(clock, deadline, left)
        evaluations += search.evaluations
        rank = (-sum(p.rescued_mib for p in plans), sum(len(p.evict) for p in plans))
        if best is None or rank < best[0]:
            best = (rank, plans)
    assert best is not None
    assert ideal is not None
    plans = best[1]
    rescued = {name for p in plans for name in p.rescues}
    unresolved = tuple(
        Unresolved(d.pod.name, d.cause, d.cluster_free_sufficient)
        for d in diagnosis.pods
        if d.cause != "schedulable" and d.pod.name not in rescued
    )
    return PlanReport(
        policy=cluster.policy,
        plans=tuple(plans),
        unresolved=unresolved,
        schedulable=tuple(sorted(bound.items())),
        ideal=ideal,
        reference_card_mib=reference,
        elapsed_s=(clock() - start) if clock else 0.0,
        budget_s=options.time_budget_s if clock else None,
        budget_exhausted=exhausted,
        evaluations=evaluations,
    )


def apply_plans(cluster: Cluster, report: PlanReport) -> Cluster:
    """The cluster after the current cycle and every plan: who runs where."""
    where = dict(report.schedulable)
    for p in report.plans:
        where.update(p.placements)
    pods = tuple(replace(p, placement=where.get(p.name, p.placement)) for p in cluster.pods)
    return dataclasses.replace(cluster, pods=pods)


def _with_bound(cluster: Cluster, bound: dict[str, Placement]) -> Cluster:
    pods = tuple(
        replace(p, placement=bound[p.name]) if p.name in bound else p for p in cluster.pods
    )
    return dataclasses.replace(cluster, pods=pods)


# (key, -epoch: the freshest simulation first among equal keys, seq, target, epoch, plan)
_Entry = tuple[PlanKey, int, int, Target, int, Proposal | None]


class _Greedy:
    """Lazy greedy: a heap of targets keyed by an optimistic estimate or by a simulated
    plan; a plan is committed only when its simulation is of the current board."""

    def __init__(
        self,
        board: Board,
        search: Search,
        targetable: set[int],
        evictions_per_gpu: float,
        patience: int,
    ) -> None:
        self.board = board
        self.search = search
        self.targetable = targetable
        self.evictions_per_gpu = evictions_per_gpu
        self.patience = patience
        self.evictions = 0
        self.rescued_gpus = 0.0
        self.heap: list[_Entry] = []
        self.latest: dict[TargetKey, int] = {}
        self.counter = itertools.count()
        self.mismatches = 0  # quick and literal simulations disagreeing (never, if correct)
        self.out_of_time: Callable[[], bool] = lambda: False  # set by `run` from its clock

    def run(
        self, clock: Clock | None, deadline: float | None, max_evaluations: int | None
    ) -> tuple[list[Plan], bool]:
        plans: list[Plan] = []
        if deadline is not None and clock is not None:
            self.out_of_time = lambda: clock() >= deadline
        signature = self._regenerate(None)
        commits_since_full = 0
        best: tuple[Proposal, int] | None = None  # best plan simulated on this board
        misses = 0  # simulations since the last commit
        while True:
            if self.out_of_time() or (
                max_evaluations is not None and self.search.evaluations >= max_evaluations
            ):
                return plans, True
            if not self.heap:
                if commits_since_full == 0:
                    return plans, False
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
            if count % REGENERATE_CHECK_EVERY == 0 and self.out_of_time():
                break
            key = self.search.estimate(target)
            if key is not None:
                self._push(key, target, -1, None)
        return (tuple(levels), b.movable_limit())

    def _push(self, key: PlanKey, target: Target, epoch: int, proposal: Proposal | None) -> int:
        seq = next(self.counter)
        self.latest[target.key] = seq
        heapq.heappush(self.heap, (key, -epoch, seq, target, epoch, proposal))
        return seq

    def _commit(self, proposal: Proposal) -> tuple[Plan, set[int]] | None:
        b = self.board
        mib = sum(b.mib(p) for p in proposal.rescued)
        gpus = mib / self.search.reference_mib
        evictions = self.evictions + len(proposal.evict)
        if evictions > self.evictions_per_gpu * (self.rescued_gpus + gpus) + 1e-9:
            return None  # too dear now; plans come cheapest first, so it stays too dear
        exact = b.simulate(proposal.evict, quick=False)
        same = tuple(exact.rescued) == proposal.rescued and exact.landed == proposal.landed
        if exact.stranded or not same:
            self.mismatches += 1
            return None
        names = [b.pods[p].name for p in exact.rescued]
        rescued_mib = sum(b.mib(p) for p in exact.rescued)
        made = Plan(
            rescues=tuple(names),
            evict=tuple(b.pods[p].name for p in proposal.evict),
            placements=tuple(
                (b.pods[p].name, b.placement(exact.landed[p]))
                for p in [*exact.rescued, *proposal.evict]
            ),
            evicted_from=tuple(
                (b.pods[p].name, b.placement(b.where[p] or [])) for p in proposal.evict
            ),
            rescued_mib=rescued_mib,
            rescued_gpus=rescued_mib / self.search.reference_mib,
            moved_mib=sum(b.mib(p) for p in proposal.evict),
        )
        changed = b.commit(proposal.evict, exact)
        self.evictions = evictions
        self.rescued_gpus += gpus
        return made, changed

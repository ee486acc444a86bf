"""Rebalancing plans verified by simulation (docs/design.md §8).

A plan is a set of pods to evict. The advisor never evicts; the workload controllers
recreate the pods and the real scheduler places them, so a plan is judged by simulating
exactly that: the evicted pods are queued behind the Pending pods of equal priority and
the whole queue is placed in order under the policy. A plan is kept only when every pod
it rescues and every pod it evicts lands; plans apply one after the other, each on the
state the ones before it leave. Plans start from the state after the current cycle: the
pods `diagnose` finds schedulable are taken as placed where it places them (the scheduler
binds them before anyone could act on a plan), and no plan evicts them: only pods bound in
the input can be victims (`Board.evictable`).

The search is a lazy greedy over targets (cards to free for a Pending shape,
`plan.greedy`): each target's best plan is simulated when it reaches the top of a heap
ordered by what its evictions cost per rescued GPU (`plan.cost`), then fewer evictions,
lower priority and less memory moved. The caps are counts (`plan.limits`): at most
`max_plan_evictions` per plan, and the whole advice within `max_evictions`. A plan that
exists but is above a cap is reported as such (`plan.above`), with the flag to raise.

Which plan is "best" first is a choice: cheapest per rescued GPU, most GPUs rescued, or
cheapest counting the large holes used up. On a packed cluster the large holes that
evicted pods need are what runs out, and any of these orders (and how long the greedy
waits for a better plan) can spend them better, so while the simulations stay within
`portfolio_evaluations` the greedy runs again from scratch under the next of `RUNS` and the
run that rescues the most wins (then the cheaper, then fewer evictions, then the earlier).

The budget is work, counted in units (`Board.work`), and work alone ends a run: the same
input gives the same plans on any machine. Wall time is only a safety stop read between
runs (and before the look above the caps, which has its own share of the work): it never
cuts a run, only keeps the next from starting, and the report says when it fired.
Gangs (PodGroups with min_member above 1, under Volcano's session; docs/design.md §10.4):
a Pending gang is a target as a whole, and a plan succeeds for it only when min_member of it
place at once in the simulation (`Board.simulate`); a running gang gives up only members
above its min_member, or goes whole (`Board.whole_gangs`). Where Volcano's session decides
jobs or queues, every plan is also checked by the job cycle (`Board.cycle_agrees`,
`gang.judge`).

Pure: frozen values in and out; the only outside input is the optional `clock` for that
safety stop.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

from advisor.core.diagnosis import Cause, Diagnosis, PodDiagnosis
from advisor.core.gang import judge
from advisor.core.model import Cluster, Placement, Policy, gangs_of, reference_card_mib
from advisor.core.plan.above import HeldBack, held_back
from advisor.core.plan.board import Board, work_units
from advisor.core.plan.greedy import Greedy, Plan
from advisor.core.plan.ideal import IdealBound, ideal_bound
from advisor.core.plan.limits import EvictionBudget, NeverEvict
from advisor.core.plan.search import Limits, Objective, Search
from advisor.core.profiles import profile_of
from advisor.defaults import DEFAULT_MAX_PLAN_EVICTIONS, DEFAULT_TIME_BUDGET_S, DEFAULT_WORK
from advisor.errors import known

__all__ = ["PlanOptions", "PlanReport", "Unresolved", "apply_plans", "plan"]

Clock = Callable[[], float]
DEFAULT_BUDGET = EvictionBudget()  # 3 evictions per card the rescued pods get
SEARCH_EVICTIONS = 32  # how far past the per-plan cap the search looks for plans above it
# The greedy's runs, in order: the objective, and its patience (simulations after a
# commit before the best fresh plan is taken anyway).
RUNS: tuple[tuple[Objective, int], ...] = (("ratio", 16), ("value", 16), ("holes", 128))
# The look for plans above the caps may spend this fraction of --plan-work (1/2) beyond what
# the search spent: one listing of a 5,000-node board's targets is about 60,000 units.
HELD_BACK_WORK_SHARE = 2


@dataclass(frozen=True, slots=True)
class PlanOptions:
    max_plan_evictions: int = DEFAULT_MAX_PLAN_EVICTIONS  # any one plan
    max_evictions: EvictionBudget = DEFAULT_BUDGET  # the whole advice
    never_evict: tuple[NeverEvict, ...] = ()
    work: int = DEFAULT_WORK  # units of work for the whole search (deterministic)
    time_budget_s: float | None = DEFAULT_TIME_BUDGET_S  # a safety stop; needs a clock
    now: datetime | None = None  # run times are measured to this (None: the latest start)
    max_chain_depth: int = 3  # rounds of chains for evicted pods with no room
    max_victims_per_card: int = 4
    max_evaluations: int | None = None  # a bound on the simulations, for tests
    # a further greedy run (next objective) starts only while the runs so far did less
    portfolio_evaluations: int = 5000


@dataclass(frozen=True, slots=True)
class Unresolved:
    pod: str
    cause: Cause
    cluster_free_sufficient: bool | None = None
    # why no plan rescues its gang, where plans made room for some of it but not min_member
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PlanReport:
    policy: Policy
    plans: tuple[Plan, ...]
    unresolved: tuple[Unresolved, ...]
    schedulable: tuple[tuple[str, Placement], ...]  # placed by the current cycle, no plan needed
    ideal: IdealBound
    reference_card_mib: int  # one "GPU" in the figures
    elapsed_s: float
    budget_s: float | None  # the time safety stop, when a clock was given
    evaluations: int  # targets simulated
    targets: int = 0  # targets looked at
    cards_checked: int = 0  # cards whose victims were worked out
    work: int = 0  # units of work done (`Board.work`)
    work_budget: int = DEFAULT_WORK
    stopped: str | None = None  # "work" or "time" when the search stopped early
    held_back: tuple[HeldBack, ...] = ()
    options: PlanOptions = field(default_factory=PlanOptions)

    @property
    def budget_exhausted(self) -> bool:
        return self.stopped is not None

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

    @property
    def cost(self) -> float:
        return round(sum(p.cost for p in self.plans), 6)


@dataclass(slots=True)
class _Run:
    board: Board
    greedy: Greedy
    plans: list[Plan]

    def rank(self) -> tuple[int, float, int]:
        plans = self.plans
        return (
            -sum(p.rescued_mib for p in plans),
            sum(p.cost for p in plans),
            sum(len(p.evict) for p in plans),
        )


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
        diagnosis = judge(cluster, node_detail_limit=0)
    # MIG pods hold instances, not vGPUs: plans neither move nor rescue them (design §13);
    # a Pending one is listed unresolved, its advice a re-partition or capacity
    judged = diagnosis.pods
    mig = [d for d in diagnosis.pods if d.pod.request.mig_profile]
    if mig:
        diagnosis = replace(diagnosis, pods=tuple(d for d in diagnosis.pods if d not in mig))
    bound = {d.pod.name: d.placement for d in diagnosis.pods if d.placement is not None}
    gangs = gangs_of(cluster, profile_of(cluster.scheduler).session.volcano)
    waiting = [
        d.pod.name
        for d in diagnosis.pods
        if d.cause in ("fragmentation", "capacity") and d.pod.group not in gangs
    ]
    targetable = {d.pod.name for d in diagnosis.pods if _hopeful(d) and d.pod.group not in gangs}
    # A Pending gang is rescued whole or not at all (§10.4): a plan succeeds for it only
    # when min_member of it place in the simulated cycle (`Board.simulate`).
    for members in _target_gangs(cluster, diagnosis, gangs, bound).values():
        waiting.extend(members)
        targetable.update(members)
    # Every Pending pod is in the real queue: one short of cpu or memory now may take the
    # room a plan's evictions leave, so each simulation has it (and then rejects the plan).
    # A pod its queue or quota holds (§10.3) takes no room, and no eviction on a node frees it.
    takes_no_room = ("schedulable", "invalid", "queue", "quota")
    queued = [d.pod.name for d in diagnosis.pods if d.cause not in takes_no_room]
    reference = reference_card_mib(cluster)
    limits = Limits(
        options.max_plan_evictions, options.max_chain_depth, options.max_victims_per_card
    )
    deadline = None
    if clock is not None and options.time_budget_s is not None:
        deadline = start + options.time_budget_s
    best: _Run | None = None
    tally = _Tally()
    stopped: str | None = None
    for objective, patience in RUNS:
        if best is not None and (stopped or tally.evaluations >= options.portfolio_evaluations):
            break
        if best is not None and _past(clock, deadline):
            stopped = "time"  # the safety stop: no further run starts
            break
        board = Board(cluster, bound, options.never_evict, options.now)
        board.set_pending(queued, waiting)
        search = Search(board, limits, reference, objective)
        greedy = Greedy(
            board, search, {board.ids[n] for n in targetable}, options.max_evictions, patience
        )
        spent = dataclasses.replace(tally)
        stop = functools.partial(_stop, options, board, search, spent)
        run = _Run(board, greedy, greedy.run(stop))
        stopped = greedy.stopped
        tally.add(board, search, (0, 0))
        if best is None or run.rank() < best.rank():
            best = run
    best = known(best, "the best portfolio run")
    plans = best.plans
    held: tuple[HeldBack, ...] = ()
    if stopped != "time" and _past(clock, deadline):
        stopped = "time"  # the safety stop: the look above the caps does not start
    if stopped != "time":
        before = (best.board.placements, best.board.card_checks)
        wide = Search(
            best.board,
            Limits(
                max(SEARCH_EVICTIONS, options.max_plan_evictions),
                options.max_chain_depth,
                options.max_victims_per_card,
            ),
            reference,
        )
        # Its own share of work on top of the search's, so that the look ends by work too.
        allowance = best.board.work + options.work // HELD_BACK_WORK_SHARE
        fired: list[str] = []
        out_of_work = functools.partial(_held_stop, allowance, best.board, fired.append)
        held = held_back(
            best.greedy, wide, options.max_plan_evictions, options.max_evictions, out_of_work
        )
        tally.add(best.board, wide, before)
        if fired and stopped is None:
            stopped = fired[0]
    # After the search: it reads no clock, so its time (a repack of every pod, the largest
    # share on a big board) leaves the safety stop's phases alone.
    ideal = ideal_bound(_with_bound(cluster, bound))
    rescued = {name for p in plans for name in p.rescues}
    short = _gangs_short(best.board, gangs)
    unresolved = tuple(
        Unresolved(d.pod.name, d.cause, d.cluster_free_sufficient, short.get(d.pod.group or ""))
        for d in judged
        if d.cause != "schedulable" and d.pod.name not in rescued
    )
    return PlanReport(
        policy=cluster.policy,
        plans=tuple(plans),
        unresolved=unresolved,
        schedulable=tuple(sorted(bound.items())),
        # the plans' end state is an arrangement too: the ideal is never below it
        ideal=ideal.with_plans(len(rescued), sum(p.rescued_mib for p in plans)),
        reference_card_mib=reference,
        elapsed_s=(clock() - start) if clock else 0.0,
        budget_s=options.time_budget_s if clock else None,
        evaluations=tally.evaluations,
        targets=tally.targets,
        cards_checked=tally.card_checks,
        work=tally.work,
        work_budget=options.work,
        stopped=stopped,
        held_back=held,
        options=options,
    )


@dataclass(slots=True)
class _Tally:
    """The work of every search so far."""

    placements: int = 0
    card_checks: int = 0
    evaluations: int = 0
    targets: int = 0
    cards: int = 0  # the cluster's

    @property
    def work(self) -> int:
        return work_units(self.placements, self.card_checks, self.cards)

    def add(self, board: Board, search: Search, before: tuple[int, int]) -> None:
        """What `search` did on `board`, less the board's counts `before` it."""
        self.cards = len(board.state.capacity)
        self.placements += board.placements - before[0]
        self.card_checks += board.card_checks - before[1]
        self.evaluations += search.evaluations
        self.targets += search.estimates


def _stop(options: PlanOptions, board: Board, search: Search, spent: _Tally) -> str | None:
    """Why a run must stop now: the work budget is spent (with what the runs before did,
    `spent`); None to go on. Never the clock: a run ends where it ends on any machine."""
    if board.work + spent.work >= options.work or (
        options.max_evaluations is not None
        and search.evaluations + spent.evaluations >= options.max_evaluations
    ):
        return "work"
    return None


def _held_stop(allowance: int, board: Board, record: Callable[[str], None]) -> str | None:
    """`_stop` for the look for plans above the caps: its board's work up to `allowance`;
    why it stopped goes to `record`."""
    if board.work >= allowance:
        record("work")
        return "work"
    return None


def _past(clock: Clock | None, deadline: float | None) -> bool:
    """The time safety stop, read only between the search's phases (each run, the look
    above the caps): it never cuts a run, so the plans a run makes are the same on any
    machine; it only keeps a further phase from starting."""
    return deadline is not None and clock is not None and clock() >= deadline


def _hopeful(d: PodDiagnosis) -> bool:
    """Whether moving pods could make room for it: fragmentation, or capacity where the
    free memory would cover it once small pods moved."""
    return d.cause == "fragmentation" or (d.cause == "capacity" and bool(d.movable_free_sufficient))


def _target_gangs(
    cluster: Cluster, diagnosis: Diagnosis, gangs: dict[str, int], bound: dict[str, Placement]
) -> dict[str, list[str]]:
    """The Pending gangs a plan may rescue, each with its Pending members a plan may place:
    those of cause `gang` (they fitted, or were never tried) or that moving pods could make
    room for (`_hopeful`); a gang is a target when they are at least the min_member it
    lacks (its members running or bound by the current cycle count) and one of them waits
    for room."""
    ready = Counter(
        p.group for p in cluster.pods if p.group in gangs and (p.running or p.name in bound)
    )
    members: dict[str, list[str]] = {}
    blocked: set[str] = set()
    for d in diagnosis.pods:
        group = d.pod.group
        if group in gangs and (d.cause == "gang" or _hopeful(d)):
            members.setdefault(group, []).append(d.pod.name)
            if _hopeful(d):
                blocked.add(group)
    return {
        g: names
        for g, names in members.items()
        if g in blocked and len(names) >= gangs[g] - ready[g]
    }


def _gangs_short(board: Board, gangs: dict[str, int]) -> dict[str, str]:
    """Why no plan rescues a gang still Pending for which plans made room for some members
    but never min_member at once (`Board.gang_best`)."""
    out = {}
    for group, best in board.gang_best.items():
        if group not in board.pending_members:
            continue
        need = board.gang_need(group)
        out[group] = (
            f"no plan places min_member of gang {group} at once: the plans tried make room "
            f"for at most {best} of the {need} Pending pods it needs (min_member "
            f"{gangs[group]})"
        )
    return out


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

"""The planner's working state and the §8 simulation of one plan (docs/design.md §8).

A `Board` holds the cluster as the scheduler core sees it (a `CardState`) plus who sits
where, so a plan can be judged by simulation: evict its pods, queue them behind the
Pending pods of equal priority, place the whole queue in order under the policy.

Two simulations give the same answer. `simulate(..., quick=False)` is the literal one:
every queued pod goes through `CardState.place`. The quick one relies on a fact of the
board: every Pending pod on it fails (the planner only keeps such boards), and evictions
only add room on the nodes they touch, so a Pending pod can land only on a touched node,
and a shape that fails once fails for the rest of the queue (placements only take room).
It checks those few cards before calling `place`. Plans are committed only after the
literal simulation agrees.

Gangs (docs/design.md §10.4): a Pending gang is placed as one job, all-or-nothing, where its
first member comes in the queue (`_place_gang`); its members may fit one by one now, so the
quick shortcut never skips them. A plan evicts a running gang's members one by one only
while min_member of it stay running (its surplus, as Volcano's gang plugin lets preempt take
them); more than that, and it evicts the gang whole (`whole_gangs`, `splits_gang`). Where
Volcano's session decides jobs or queues, a plan is committed only when the job cycle
(`gang.judge`) places what the literal simulation lands (`cycle_agrees`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from advisor.core.gang import judge
from advisor.core.model import (
    Cluster,
    Placement,
    Pod,
    Policy,
    budget_key,
    budgets_overrun,
    disruption_blocker,
    gangs_of,
    queue_order,
    reference_card_mib,
)
from advisor.core.plan.cost import EvictionCost, eviction_cost, latest_start, plan_cost
from advisor.core.plan.gangs import GangRules
from advisor.core.plan.limits import NeverEvict, never_evict_reason
from advisor.core.plan.memo import CardMemo
from advisor.core.plan.movable import Movability
from advisor.core.profiles.base import mode_conflict
from advisor.core.shape import Failures
from advisor.core.state import CardState, IntArray, Shape
from advisor.core.task_order import task_order
from advisor.errors import known

FODDER = 4  # smallest evictable pods remembered per card, for chains
NO_POD = -1
BIG = np.iinfo(np.int64).max // 4
CHECKS_PER_PLACEMENT = 32  # cards whose victims are worked out in the time of a placement
# A placement reads every card: on a cluster of more cards than this it counts as that many
# times one placement (5,000 nodes of 8 cards: 4.9), so that work stays time on any size.
PLACEMENT_CARDS = 8192


def work_units(placements: int, card_checks: int, n_cards: int) -> int:
    """Work in units of one placement on a cluster of at most PLACEMENT_CARDS cards."""
    scale = max(n_cards, PLACEMENT_CARDS)
    return placements * scale // PLACEMENT_CARDS + card_checks // CHECKS_PER_PLACEMENT


def may_evict(pod: Pod) -> bool:
    """Never kube-system pods, pods that ask not to be disrupted (Karpenter's rule) or pods
    whose disruption budget allows none: `model.disruption_blocker`."""
    return disruption_blocker(pod) is None


@dataclass(slots=True)
class Outcome:
    """What one simulated plan did: where each pod landed, which evicted pods did not."""

    state: CardState
    landed: dict[int, list[int]]  # pod id -> card positions
    rescued: list[int]  # Pending pods that landed, queue order
    stranded: list[int]  # evicted pods that found no room, queue order
    touched: set[int] = field(default_factory=set)  # node indices whose cards were freed
    intruders: list[int] = field(default_factory=list)  # landed, but no plan may rescue them
    # gangs whose Pending members fell short of min_member, rolled back: members that fitted
    short: dict[str, int] = field(default_factory=dict)


class Board(GangRules):
    """Mutable; private to one planning run. Pod ids index `pods`. `never_evict`: the
    selectors that keep pods where they are besides `may_evict`; `now`: the time run times
    are measured to (None: the latest start in the cluster, `plan_cost`)."""

    def __init__(
        self,
        cluster: Cluster,
        bound: dict[str, Placement],
        never_evict: Sequence[NeverEvict] = (),
        now: datetime | None = None,
        memo: CardMemo | None = None,
    ) -> None:
        self.policy: Policy = cluster.policy
        # MIG pods hold instances, not vGPUs: plans neither move nor rescue them (§13)
        self.pods: list[Pod] = [p for p in cluster.pods if not p.request.mig_profile]
        self.ids = {pod.name: i for i, pod in enumerate(self.pods)}
        self.state = CardState(cluster)
        n_cards = len(self.state.capacity)
        self.shape: list[Shape | None] = [
            None if p.invalid or self.state.profile.request_problem(p.request) else Shape.of_pod(p)
            for p in self.pods
        ]
        self.priority = [p.priority for p in self.pods]
        # Only pods bound in the input: one the current cycle binds (`bound`) holds nothing
        # yet, and evicting what the scheduler is placing right now is no advice.
        self.evictable = [
            p.placement is not None and may_evict(p) and never_evict_reason(p, never_evict) is None
            for p in self.pods
        ]
        # Gangs (PodGroups with min_member above 1, under Volcano's session; §10.4): the
        # members of each, and each gang's min_member. A plan evicts a running gang's
        # surplus member by member, or the gang whole (`whole_gangs`): none of a gang some
        # member of which may not go, or is Pending or bound by the current cycle, is ever
        # evicted.
        self.gang_min = gangs_of(cluster, self.state.profile.session.volcano)
        self.gang_of: list[str | None] = [
            p.group if p.group in self.gang_min else None for p in self.pods
        ]
        self.members: dict[str, list[int]] = {}
        for i, group in enumerate(self.gang_of):
            if group is not None:
                self.members.setdefault(group, []).append(i)
        for members in self.members.values():
            if not all(self.evictable[i] for i in members):
                for i in members:
                    self.evictable[i] = False
        when = now if now is not None else latest_start(self.pods)
        self.costs: list[EvictionCost] = [
            eviction_cost(p, when, self.gang_of[i]) for i, p in enumerate(self.pods)
        ]
        # Where every pod a plan may evict costs the same, fewer evictions are cheaper.
        self.uniform_costs = (
            len(
                {
                    c.cost
                    for i, (p, c) in enumerate(zip(self.pods, self.costs, strict=True))
                    if self.evictable[i]
                }
            )
            <= 1
        )
        # Work done: pods placed or tried in a simulation, and cards whose victims were
        # worked out (`work`). The search's budget counts it, so the same input gives the
        # same plans on any machine.
        self.placements = 0
        self.card_checks = 0
        # (budget, disruptions it allows) per pod; None: no budget covers it
        self.budget = [budget_key(p.namespace, p.annotations) for p in self.pods]
        self.where: list[list[int] | None] = [None] * len(self.pods)
        self.on_card: list[list[int]] = [[] for _ in range(n_cards)]
        for i, pod in enumerate(self.pods):
            placement = pod.placement or bound.get(pod.name)
            if placement is None:
                continue
            shape = known(self.shape[i], f"the request of running pod {pod.name}")
            self._bind(i, self.state.positions(placement))
            self.state.apply(self.where[i] or [], shape)
        # What each pod takes of one card, in MiB: a running pod what it holds on its first
        # card, a Pending one what it would take of the commonest card. Outside CCE a share
        # or whole-card request has no MiB of its own; the search ranks and sizes by these.
        self.reference_mib = reference_card_mib(cluster)
        self.card_mib = [
            0 if shape is None else self._held_mib(i, shape) for i, shape in enumerate(self.shape)
        ]
        self.pending: list[int] = []  # Pending pods still waiting, queue order
        self.rescuable: set[int] = set()
        self.pending_members: dict[str, list[int]] = {}  # per gang, its `pending`, in order
        # per gang, the most of its Pending members any simulation fitted while it fell short
        self.gang_best: dict[str, int] = {}
        # The job cycle (`gang.judge`) judges a plan's end state where Volcano's session
        # decides jobs or queues the literal simulation does not (`cycle_agrees`).
        volcano = self.state.profile.session.volcano
        jobs = cluster.jobs
        self.cycle_cluster = cluster if volcano and (jobs.groups or jobs.queues) else None
        self._shapes: dict[Shape, int] = {}
        self._movability = Movability(
            [
                (shape, self.priority[i]) if self.evictable[i] and shape is not None else None
                for i, shape in enumerate(self.shape)
            ]
        )
        self._conflict: dict[tuple[int, int], bool] = {}  # (level mode, pod mode)
        self._shapes_epoch = -1
        self._shapes_seen = 0  # bumped whenever the Pending shapes change
        self.fodder_size: IntArray = np.full((n_cards, FODDER), BIG, dtype=np.int64)
        self.fodder_core: IntArray = np.zeros((n_cards, FODDER), dtype=np.int64)
        self.fodder_pod: IntArray = np.full((n_cards, FODDER), NO_POD, dtype=np.int64)
        self._refresh_fodder(range(n_cards))
        self.epoch = 0  # bumped by every commit
        # What the search worked out per card (`plan.memo`): boards built alike may share
        # one memo, as the portfolio's runs do; a card's stamp changes when a commit does.
        self.memo = memo if memo is not None else CardMemo()
        self.stamps = [0] * n_cards
        # per card its `movable_mask` (None: to be worked out again, after a commit changed
        # the card or the Pending shapes changed what one of its pods may do)
        self._masks: list[int | None] = [None] * n_cards
        self._mask_changes: set[int] = set()  # cards whose mask the Pending shapes changed

    def set_pending(self, names: Iterable[str], rescuable: Iterable[str] | None = None) -> None:
        """The Pending pods in the queue (they must all fail on this board; those whose
        request the profile cannot read are left out), and those of them a plan may rescue
        (None: all). A plan after which another one lands is no plan: that pod, short of
        cpu or memory say, would take the room the evictions leave."""
        wanted = {i for name in names if self.shape[i := self.ids[name]] is not None}
        queue = queue_order(tuple(self.pods[i] for i in sorted(wanted)))
        self.pending = [self.ids[p.name] for p in queue]
        self.rescuable = (
            set(self.pending) if rescuable is None else {self.ids[n] for n in rescuable}
        )
        self._pending_changed()

    def _pending_changed(self) -> None:
        self._shapes_epoch = -1
        self.pending_members = {}
        for p in self.pending:
            group = self.gang_of[p]
            if group is not None:
                self.pending_members.setdefault(group, []).append(p)
        for group, members in self.pending_members.items():  # Volcano's task order in a job
            ordered = task_order(self.pods[m] for m in sorted(members))
            self.pending_members[group] = [self.ids[pod.name] for pod in ordered]

    # -- facts ---------------------------------------------------------------------

    def shape_of(self, pod: int) -> Shape:
        shape = self.shape[pod]
        if shape is None:  # the message only when it is needed: this is the search's hot path
            return known(shape, f"the request of pod {self.pods[pod].name}")
        return shape

    def node_of_card(self, position: int) -> int:
        return int(self.state.node_of[position])

    def placement(self, positions: Sequence[int]) -> Placement:
        return self.state.placement_of(list(positions))

    def nominal_mib(self, shape: Shape) -> int:
        """What `shape` takes of one card of the commonest size."""
        return self.need_on(shape, None)

    def need_on(self, shape: Shape, card: int | None) -> int:
        """What `shape` takes of card `card` (None: a card of the commonest size)."""
        if shape.card_memory_mib > 0 and shape.memory_percent == 0:
            return shape.card_memory_mib
        if card is None:
            capacity = np.array([self.reference_mib], dtype=np.int64)
            return int(self.state.profile.card_need(capacity, shape)[0])
        return int(self.state.card_need(shape, np.array([card], dtype=np.int64))[0])

    def mib(self, pod: int) -> int:
        """What the pod takes of all its cards (nominally, for a Pending share)."""
        return self.shape_of(pod).gpus * self.card_mib[pod]

    def _held_mib(self, pod: int, shape: Shape) -> int:
        positions = self.where[pod]
        return self.need_on(shape, positions[0] if positions else None)

    def conflicts(self, shape: Shape, level: Shape) -> bool:
        """Whether a pod of `shape` must leave a card before one of `level` can join it:
        the profile's one isolation mode per card, if it has that rule."""
        # memoised by the two modes: the search asks it for every pod of every card it looks at
        key = (level.mode, shape.mode)
        found = self._conflict.get(key)
        if found is None:
            found = self._conflict[key] = mode_conflict(self.state.profile, level.mode, shape.mode)
        return found

    def demand(self, pods: Iterable[int]) -> tuple[int, int, int]:
        """(pod slots, cpu, memory) the pods take from their nodes, summed."""
        slots = cpu = memory = 0
        for pod in pods:
            d = self.shape_of(pod).demand
            slots, cpu, memory = slots + d[0], cpu + d[1], memory + d[2]
        return (slots, cpu, memory)

    @property
    def work(self) -> int:
        """Work done, in simulated placements (`work_units`): a card's victims take about a
        thirtieth of the time of one placement on a cluster of PLACEMENT_CARDS cards."""
        return work_units(self.placements, self.card_checks, len(self.state.capacity))

    def cost(self, evict: Iterable[int]) -> float:
        """What evicting these pods together costs (`plan_cost`)."""
        return plan_cost(self.costs, evict)

    def within_budgets(self, evict: Iterable[int]) -> bool:
        """Whether evicting these pods together keeps every PodDisruptionBudget they fall
        under within the disruptions it allows now (the Eviction API refuses the one over)."""
        return not budgets_overrun(self.budget[pod] for pod in evict)

    def movable_limit(self) -> int:
        """Single-card pods at or above this memory cannot move while Pending single-card
        pods of that size wait (see `movable`); used where a bound is enough."""
        sizes = [self.nominal_mib(s) for s in self._pending_shapes() if s.gpus == 1]
        return min(sizes) if sizes else int(BIG)

    def movable(self, pod: int) -> bool:
        """Whether evicting `pod` can pay. Not while a Pending pod waits whose shape it
        dominates (same mode, no more cards, memory or core) and whose priority is not
        lower: that pod is queued first and fits wherever this one would, so this one
        could land only if every such Pending pod landed before it (`plan.movable`)."""
        self._pending_shapes()  # brings the answers up to date on a new epoch
        return self._movability.movable(pod)

    def _pending_shapes(self) -> dict[Shape, int]:
        """The shapes of the Pending pods, with the highest priority of each."""
        if self._shapes_epoch != self.epoch:
            shapes: dict[Shape, int] = {}
            for p in self.pending:
                shape = self.shape_of(p)
                shapes[shape] = max(shapes.get(shape, self.priority[p]), self.priority[p])
            self._shapes_epoch = self.epoch
            if shapes != self._shapes:  # most commits leave every shape some Pending pod
                self._shapes = shapes
                for pod in self._movability.update(shapes):
                    for k in self.where[pod] or ():
                        self._masks[k] = None
                        self._mask_changes.add(k)
                self._shapes_seen += 1
        return self._shapes

    @property
    def shapes_seen(self) -> int:
        """A count that moves whenever the Pending shapes (and so which pods may move)
        change."""
        self._pending_shapes()
        return self._shapes_seen

    def take_mask_changes(self) -> set[int]:
        """The cards whose `movable_mask` a change of the Pending shapes changed since the
        last call (commits aside: the caller knows the cards a commit changes)."""
        self._pending_shapes()
        changes, self._mask_changes = self._mask_changes, set()
        return changes

    def movable_mask(self, k: int) -> int:
        """Which pods on card `k` are `movable` now, bit i for its i-th pod: with the
        card's stamp, all an answer about the card depends on (`plan.memo`)."""
        self._pending_shapes()
        mask = self._masks[k]
        if mask is None:
            mask = 0
            for i, pod in enumerate(self.on_card[k]):
                if self._movability.movable(pod):
                    mask |= 1 << i
            self._masks[k] = mask
        return mask

    # -- simulation (docs/design.md §8) -------------------------------------------------------

    def queue(self, evict: Sequence[int]) -> list[tuple[int, bool]]:
        """(pod, evicted?) in scheduling order: priority desc; evicted pods after the Pending
        pods of equal priority, in the order given."""
        order = sorted(range(len(evict)), key=lambda j: (-self.priority[evict[j]], j))
        merged: list[tuple[int, bool]] = []
        i = 0
        for j in order:
            pod = evict[j]
            while i < len(self.pending) and self.priority[self.pending[i]] >= self.priority[pod]:
                merged.append((self.pending[i], False))
                i += 1
            merged.append((pod, True))
        merged.extend((p, False) for p in self.pending[i:])
        return merged

    def simulate(self, evict: Sequence[int], *, quick: bool) -> Outcome:
        st = self.state.copy()
        touched: set[int] = set()
        for pod in evict:
            held = known(self.where[pod], f"the cards of evicted pod {self.pods[pod].name}")
            st.release(held, self.shape_of(pod))
            touched.update(self.node_of_card(k) for k in held)
        local = _LocalCards(st, touched) if quick else None
        # The literal one skips the scan for a shape that needs no less than one that failed
        # (exact: placing only takes room, a gang's discarded members give back what they
        # took), but counts it as tried: the work, and so the plans, stay the same.
        failures = Failures() if local is None else None
        dead: set[Shape] = set()
        landed: dict[int, list[int]] = {}
        rescued: list[int] = []
        stranded: list[int] = []
        intruders: list[int] = []
        short: dict[str, int] = {}
        node_policy, card_policy = self.policy.node, self.policy.card
        gangs_done: set[str] = set()
        for pod, evicted in self.queue(evict):
            group = None if evicted else self.gang_of[pod]
            if group is not None:
                # A Pending gang is one job: where its first member comes in the queue, all
                # of them, all-or-nothing (`_place_gang`). They may fit anywhere, so the
                # quick shortcut below (it knows only pods that fail now) never skips them.
                if group not in gangs_done:
                    gangs_done.add(group)
                    placed = self._place_gang(st, group, evict)
                    if isinstance(placed, int):
                        short[group] = placed
                        if placed > self.gang_best.get(group, 0):
                            self.gang_best[group] = placed
                        continue
                    for member, cards in placed:
                        landed[member] = cards
                        (rescued if member in self.rescuable else intruders).append(member)
                continue
            shape = self.shape_of(pod)
            if not evicted and local is not None:
                if shape in dead:
                    continue
                if not local.could_fit(shape):
                    dead.add(shape)
                    continue
            self.placements += 1
            if failures is not None and failures.known(shape):
                positions = None
            else:
                positions = st.place(shape, node_policy, card_policy)
                if positions is None and failures is not None:
                    failures.add(shape)
            if positions is None:
                if evicted:
                    stranded.append(pod)
                elif local is not None:
                    dead.add(shape)
                continue
            st.apply(positions, shape)
            landed[pod] = positions
            if not evicted:
                (rescued if pod in self.rescuable else intruders).append(pod)
        return Outcome(st, landed, rescued, stranded, touched, intruders, short)

    def _place_gang(
        self, st: CardState, group: str, evict: Sequence[int]
    ) -> list[tuple[int, list[int]]] | int:
        """The gang's Pending members placed in task order on `st` (Volcano's allocate for
        one job, core.gang): each where it fits, until one fails while every member is
        needed (NeedContinueAllocating). Below min_member the placements are released
        (`Statement.Discard`) and the count of members that fitted is returned."""
        members = self.pending_members[group]
        need = self.gang_need(group, evict)
        every = self.gang_min[group] >= len(self.members[group])
        placed: list[tuple[int, list[int]]] = []
        for member in members:
            shape = self.shape_of(member)
            self.placements += 1
            positions = st.place(shape, self.policy.node, self.policy.card)
            if positions is None:
                if every and len(placed) < need:
                    break
                continue
            st.apply(positions, shape)
            placed.append((member, positions))
        if len(placed) >= need:
            return placed
        for member, positions in placed:
            st.release(positions, self.shape_of(member))
        return len(placed)

    def cycle_agrees(self, evict: Sequence[int], outcome: Outcome) -> bool:
        """Whether the job cycle (`gang.judge`, what every output judges by) places exactly
        the pods the simulated plan lands, where it lands them, on the state the plan
        leaves: every Pending pod queued, the evicted ones Pending again and created last (the
        controllers recreate them; their PodGroup is ordered by them too). Always true where
        the literal simulation is that cycle (no jobs or queues under Volcano's session)."""
        if self.cycle_cluster is None:
            return True
        gone = set(evict)
        kept = tuple(
            replace(
                pod, placement=None if (where := self.where[i]) is None else self.placement(where)
            )
            for i, pod in enumerate(self.pods)
            if i not in gone
        )
        # the evicted pods are recreated: the newest, after every pod Pending now
        pods = kept + tuple(replace(self.pods[i], placement=None) for i in evict)
        verdicts = judge(replace(self.cycle_cluster, pods=pods), node_detail_limit=0).pods
        placed = {d.pod.name: d.placement for d in verdicts if d.placement is not None}
        landed = {self.pods[p].name: self.placement(k) for p, k in outcome.landed.items()}
        return placed == landed

    # -- commit ----------------------------------------------------------------------

    def commit(self, evict: Sequence[int], outcome: Outcome) -> set[int]:
        """Make the simulated plan the new board; returns the card positions it changed."""
        changed: set[int] = set()
        for pod in evict:
            changed.update(self._unbind(pod))
        for pod, positions in outcome.landed.items():
            self._bind(pod, positions)
            changed.update(positions)
        rescued = set(outcome.rescued)
        self.pending = [p for p in self.pending if p not in rescued]
        self._pending_changed()
        self.state = outcome.state
        for k in changed:
            self.stamps[k] = self.memo.fresh_stamp()
            self._masks[k] = None
        self._refresh_fodder(sorted(changed))
        self.epoch += 1
        return changed

    def _bind(self, pod: int, positions: list[int]) -> None:
        self.where[pod] = positions
        for k in positions:
            self.on_card[k].append(pod)

    def _unbind(self, pod: int) -> list[int]:
        positions = self.where[pod] or []
        for k in positions:
            self.on_card[k].remove(pod)
        self.where[pod] = None
        return positions

    def _refresh_fodder(self, positions: Iterable[int]) -> None:
        """Per card, the smallest evictable single-card pods: what a chain may move away."""
        for k in positions:
            small = sorted(
                (self.card_mib[p], p)
                for p in self.on_card[k]
                if self.evictable[p] and self.shape_of(p).gpus == 1 and self.loose(p)
            )[:FODDER]
            self.fodder_size[k] = BIG
            self.fodder_core[k] = 0
            self.fodder_pod[k] = NO_POD
            for j, (size, pod) in enumerate(small):
                self.fodder_size[k, j] = size
                self.fodder_core[k, j] = self.shape_of(pod).card_core
                self.fodder_pod[k, j] = pod


class _LocalCards:
    """The cards of the touched nodes: the only place a Pending pod can land (see above)."""

    def __init__(self, st: CardState, nodes: set[int]) -> None:
        self.st = st
        ordered = sorted(nodes)
        positions = [k for n in ordered for k in st.node_positions(n)]
        self.positions: IntArray = np.array(positions, dtype=np.int64)
        local = {n: i for i, n in enumerate(ordered)}
        self.local_node: IntArray = np.array(
            [local[int(st.node_of[k])] for k in positions], dtype=np.int64
        )
        self.n_nodes = len(ordered)
        self.nodes: IntArray = np.array(ordered, dtype=np.int64)

    def could_fit(self, shape: Shape) -> bool:
        if self.n_nodes == 0:
            return False
        st = self.st
        ok = st.eligible(shape, self.positions)
        counts = np.bincount(self.local_node[ok], minlength=self.n_nodes)
        roomy = counts >= shape.gpus
        if not roomy.any():
            return False
        # `node_ok` on these nodes alone: judging every node's resources costs the most here
        static = st.static_ok(shape.constraints)[self.nodes]
        short = st.resource_shortfalls(shape, at=self.nodes)
        return bool((roomy & static & ~short.any(axis=1)).any())

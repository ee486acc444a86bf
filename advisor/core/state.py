"""Card occupancy as flat arrays, so one placement scans a whole cluster in a few numpy ops.

`CardState` is the scheduler core's scratch pad: every public function of the core builds
one from frozen values, works on it privately and returns new frozen values, so nothing
outside ever sees it change. Plans copy it (`copy()`) as a checkpoint instead of rolling
back by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from advisor.core.model import Cluster, Mode, Node, Placement, PolicyName
from advisor.core.nodefilters import NodeConstraints, ResourceFit, static_reasons
from advisor.core.profiles import Profile, profile_of
from advisor.core.profiles.base import BoolArray, IntArray, pick
from advisor.core.shape import Shape
from advisor.core.verdicts import StaticVerdicts, Verdicts, count_per_node, eligible_of

__all__ = ["UNLIMITED", "BoolArray", "CardState", "IntArray", "Shape"]


UNLIMITED = np.iinfo(np.int64).max // 4  # an allocatable that is not known never limits
# What a node's request sums hold in int64; past it (pods of exabytes, which an API server
# accepts one by one) the rest is kept exactly beside them (`CardState.add_requested`), so
# no sum wraps around into room.
REQUESTED_MAX = 2**62
# The arrays no pod binding, removal or repair changes: the cards' layout and sizes, and
# what the profile counts. `copy` shares them instead of copying.
FIXED = (
    "name_rank",
    "slots",
    "numa",
    "node_of",
    "card_index",
    "capacity",
    "first_card",
    "card_count",
    "_carded",
    "uniform_capacity",
    "node_total",
    "counted",
    "healthy_count",
    "counted_count",
)


class CardState:
    """Mutable occupancy of every card; private to one call of the core."""

    def __init__(self, cluster: Cluster) -> None:
        nodes = cluster.nodes
        self.node_names = [n.name for n in nodes]
        self.node_index = {name: i for i, name in enumerate(self.node_names)}
        # Ties go to the node that sorts first by name, whatever order the nodes came in.
        order = sorted(range(len(nodes)), key=lambda i: self.node_names[i])
        self.name_rank = np.empty(len(nodes), dtype=np.int64)
        self.name_rank[order] = np.arange(len(nodes))
        # A card in MIG mode takes MIG pods only (docs/design.md §13): the vGPU arrays never
        # see it; `core.mig_cycle` keeps its instances.
        cards = [(i, c) for i, n in enumerate(nodes) for c in n.cards if c.mig is None]
        self._mig_cards = {(n.name, c.index) for n in nodes for c in n.cards if c.mig is not None}
        self.limit = cluster.max_vgpus_per_card
        self.scheduler = cluster.scheduler
        self.profile: Profile = profile_of(cluster.scheduler)
        # The node's cpu, memory and pod-slot check: NodeResourcesFit or Volcano's own.
        self.fit: ResourceFit = self.profile.session.resource_fit
        self.tied = 0  # nodes tied in the last `place` where the real pick is random
        self.slots: IntArray = np.array(
            [self.limit if c.max_vgpus is None else c.max_vgpus for _, c in cards], dtype=np.int64
        )
        self.numa: IntArray = np.array([c.numa or 0 for _, c in cards], dtype=np.int64)
        self.node_of: IntArray = np.array([i for i, _ in cards], dtype=np.int64)
        self.card_index: IntArray = np.array([c.index for _, c in cards], dtype=np.int64)
        self.capacity: IntArray = np.array([c.memory_mib for _, c in cards], dtype=np.int64)
        self.healthy: BoolArray = np.array([c.healthy for _, c in cards], dtype=np.bool_)
        # The cards a profile counts as able to host anything: the healthy ones, or every
        # card where the profile has no health check (Volcano).
        self.counted: BoolArray = (
            self.healthy.copy() if self.profile.checks_health else np.ones(len(cards), np.bool_)
        )
        self.free_memory: IntArray = self.capacity.copy()
        self.free_core: IntArray = np.full(len(cards), 100, dtype=np.int64)
        self.vgpus: IntArray = np.zeros(len(cards), dtype=np.int64)
        self.mode: IntArray = np.full(len(cards), int(Mode.UNUSED), dtype=np.int64)
        n_nodes = len(nodes)
        self.first_card: IntArray = np.zeros(n_nodes, dtype=np.int64)
        self.card_count: IntArray = np.bincount(self.node_of, minlength=n_nodes).astype(np.int64)
        if n_nodes:
            self.first_card[1:] = np.cumsum(self.card_count)[:-1]
        self._carded: IntArray = np.flatnonzero(self.card_count > 0)  # nodes with a card
        self.healthy_count: IntArray = np.bincount(
            self.node_of, weights=self.healthy, minlength=n_nodes
        ).astype(np.int64)
        healthy_cap = np.where(self.healthy, self.capacity, 0)
        cap_max = np.zeros(n_nodes, dtype=np.int64)
        cap_min = np.full(n_nodes, np.iinfo(np.int64).max, dtype=np.int64)
        np.maximum.at(cap_max, self.node_of, healthy_cap)
        np.minimum.at(
            cap_min, self.node_of, np.where(self.healthy, self.capacity, cap_max[self.node_of])
        )
        # A node whose healthy cards share one size scores from integer sums (exact ties).
        self.uniform_capacity: IntArray = np.where(cap_max == cap_min, cap_max, 0)
        self.allotted_healthy: IntArray = np.zeros(n_nodes, dtype=np.int64)
        # Per node: vGPUs, cores and memory in use (kept by apply/release), and the card
        # totals they are scored against (HAMi's node score reads these).
        self.node_used: IntArray = np.zeros((n_nodes, 3), dtype=np.int64)
        # Per node: Σ of each pod's per-card core as its spec writes it (Volcano counts it).
        self.node_core_asked: IntArray = np.zeros(n_nodes, dtype=np.int64)
        # Per node: Σ of each pod's per-card memory as its spec writes it (Volcano's
        # volcano.sh/vgpu-memory: nothing for a whole card or a share).
        self.node_memory_asked: IntArray = np.zeros(n_nodes, dtype=np.int64)
        self.node_total: IntArray = (
            np.stack(
                [
                    np.bincount(self.node_of, weights=self.slots, minlength=n_nodes),
                    100 * self.card_count,
                    np.bincount(self.node_of, weights=self.capacity, minlength=n_nodes),
                ],
                axis=1,
            )
            .astype(np.int64)
            .reshape(n_nodes, 3)
        )
        self.counted_count: IntArray = np.bincount(
            self.node_of, weights=self.counted, minlength=n_nodes
        ).astype(np.int64)
        self._position = {(self.node_names[i], c.index): k for k, (i, c) in enumerate(cards)}
        # The rest of the node (§9.1): allocatable and what every pod on it requests, in
        # columns SLOTS, CPU, MEMORY; the static filters' verdicts cached per constraints.
        self.nodes: tuple[Node, ...] = nodes
        self.allocatable: IntArray = np.array(
            [_allocatable(n) for n in nodes], dtype=np.int64
        ).reshape(n_nodes, 3)
        self.requested: IntArray = np.zeros((n_nodes, 3), dtype=np.int64)
        self.excess: dict[int, tuple[int, int, int]] = {}  # node -> requested past the max
        for i, node in enumerate(nodes):
            for other in (*(node.other_pods or ()), *node.resident_pods):
                self.add_requested(i, (1, other.resources.cpu_milli, other.resources.memory_bytes))
        # What the static filters read of each node besides its name.
        self._looks = [(tuple(sorted(n.labels.items())), n.taints, n.unschedulable) for n in nodes]
        self._static: dict[NodeConstraints, StaticVerdicts] = {}
        for name in FIXED:  # shared by every copy, so never written (numpy refuses)
            getattr(self, name).flags.writeable = False

    def copy(self) -> CardState:
        clone = object.__new__(CardState)
        for name, value in vars(self).items():
            # The static cache and the FIXED arrays are shared: labels, taints, cordons and
            # the cards' layout never change (a copy per scale-down candidate is O(cards)).
            fresh = isinstance(value, np.ndarray) and value.flags.writeable
            setattr(clone, name, value.copy() if fresh else value)
        clone.excess = dict(self.excess)
        return clone

    # -- positions -----------------------------------------------------------------

    def positions(self, placement: Placement) -> list[int]:
        """Array positions of a placement's cards (none for a MIG card's); KeyError for
        unknown node or card."""
        return [
            self._position[(placement.node, index)]
            for index in placement.cards
            if (placement.node, index) not in self._mig_cards
        ]

    def node_positions(self, node: int) -> range:
        start = int(self.first_card[node])
        return range(start, start + int(self.card_count[node]))

    def cards_of(self, nodes: IntArray) -> IntArray:
        """Positions of the cards of `nodes`, node by node: a node's cards lie side by side,
        so the runs of a few nodes, not a scan of every card."""
        counts = self.card_count[nodes]
        ends = np.cumsum(counts)
        cards = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64)
        cards += np.repeat(self.first_card[nodes] - (ends - counts), counts)
        return cards

    # -- node filters (kube-scheduler's, before the GPU one) --------------------------------

    def static_ok(self, constraints: NodeConstraints) -> BoolArray:
        """Nodes that pass NodeUnschedulable, NodeAffinity and TaintToleration: decided by
        `nodefilters.static_reasons`, the same code that explains a rejection."""
        return self._static_verdicts(constraints).ok

    def static_rejections(self, constraints: NodeConstraints) -> dict[int, tuple[str, ...]]:
        """node index -> the static filter's messages, for the nodes it rejects."""
        return self._static_verdicts(constraints).rejected

    def static_counts(self, constraints: NodeConstraints) -> dict[str, int]:
        """The static filters' messages -> how many nodes each rejects."""
        return self._static_verdicts(constraints).counts

    def _static_verdicts(self, constraints: NodeConstraints) -> StaticVerdicts:
        known = self._static.get(constraints)
        if known is None:
            rejected = {}
            counts: dict[str, int] = {}
            # Nodes alike in labels, taints and cordon share a verdict; matchFields reads
            # the name too, so then each node is judged alone.
            by_name = constraints.required is not None and any(
                term.fields for term in constraints.required
            )
            judged: dict[object, tuple[str, ...]] = {}
            for i, node in enumerate(self.nodes):
                look = node.name if by_name else self._looks[i]
                reasons = judged.get(look)
                if reasons is None:
                    reasons = judged[look] = static_reasons(node, constraints)
                if reasons:
                    rejected[i] = reasons
                    for reason in reasons:
                        counts[reason] = counts.get(reason, 0) + 1
            ok = np.ones(len(self.nodes), dtype=np.bool_)
            ok[list(rejected)] = False
            known = self._static[constraints] = StaticVerdicts(ok, rejected, counts)
        return known

    def resource_shortfalls(
        self, shape: Shape, fit: ResourceFit | None = None, at: IntArray | None = None
    ) -> BoolArray:
        """(nodes, 3): which of pod slots, cpu and memory each node lacks for `shape`, as
        the session's check (`fit`, default the profile's) judges them: NodeResourcesFit's
        `fitsRequest` only where the pod asks some (an overcommitted node still takes a pod
        asking no cpu), Volcano's allocate in every dimension. Its `words` name them.
        `at`: those nodes only, a row each."""
        fit = fit or self.fit
        if at is None:
            short = _shortfalls(self.requested, self.allocatable, shape, fit)
            rows = {node: node for node in self.excess}
        else:
            short = _shortfalls(self.requested[at], self.allocatable[at], shape, fit)
            rows = {}
            if self.excess:  # rare: sums past REQUESTED_MAX
                rows = {node: row for row, node in enumerate(at.tolist()) if node in self.excess}
        for node, row in rows.items():
            short[row] = _shortfalls_exact(
                self.node_requested(node), self.allocatable[node], shape, fit
            )
        return short

    def resources_ok(self, shape: Shape) -> BoolArray:
        return np.asarray(~self.resource_shortfalls(shape).any(axis=1), dtype=np.bool_)

    def resources_fit(
        self, node: int, shape: Shape, freed: tuple[int, int, int] = (0, 0, 0)
    ) -> bool:
        """`resource_shortfalls`' rule on one node, once pods taking `freed` (slots, cpu,
        memory) have left it: what a plan asks before evicting them."""
        left = [r - f for r, f in zip(self.node_requested(node), freed, strict=True)]
        return not any(_shortfalls_exact(left, self.allocatable[node], shape, self.fit))

    def node_requested(self, node: int) -> list[int]:
        """(pod slots, cpu, memory) the pods on `node` request, exactly."""
        extra = self.excess.get(node, (0, 0, 0))
        return [int(r) + e for r, e in zip(self.requested[node], extra, strict=True)]

    def add_requested(self, node: int, demand: tuple[int, int, int], sign: int = 1) -> None:
        """A pod's (slots, cpu, memory) arrives on `node` (`sign` -1: leaves). The sums stay
        exact: what passes REQUESTED_MAX is kept in `excess`."""
        total = [r + sign * d for r, d in zip(self.node_requested(node), demand, strict=True)]
        kept = [min(t, REQUESTED_MAX) for t in total]
        self.requested[node] = kept
        over = (total[0] - kept[0], total[1] - kept[1], total[2] - kept[2])
        if any(over):
            self.excess[node] = over
        else:
            self.excess.pop(node, None)

    def node_ok(self, shape: Shape) -> BoolArray:
        """Nodes that pass every filter but the GPU one."""
        ok: BoolArray = self.static_ok(shape.constraints) & self.resources_ok(shape)
        return ok

    def free_resources(self, node: int) -> tuple[int | None, int | None, int | None]:
        """(pod slots, cpu millicores, memory bytes) left on `node`; None: unlimited."""
        used = self.node_requested(node)
        return tuple(  # type: ignore[return-value]
            None
            if self.allocatable[node, j] >= UNLIMITED
            else int(self.allocatable[node, j]) - used[j]
            for j in range(3)
        )

    # -- filter --------------------------------------------------------------------

    def card_rejections(
        self, shape: Shape, at: IntArray | None = None
    ) -> tuple[BoolArray | None, ...]:
        """Per card (all, or those at positions `at`), whether each card check of the
        profile (`profile.reasons[1:]`) rejects it for `shape` (None: the check does not
        apply). `eligible` and the diagnosis both read this, so a card is never explained
        by another rule than the one that rejected it."""
        return self.profile.card_rejections(self, shape, slice(None) if at is None else at)

    def eligible(self, shape: Shape, at: IntArray | None = None) -> BoolArray:
        return eligible_of(
            self.card_rejections(shape, at), self.capacity.size if at is None else at.size
        )

    def eligible_per_node(self, eligible: BoolArray) -> IntArray:
        """Per node, how many of its cards `eligible` marks. A node's cards lie side by side,
        so each node's run is summed (a few times faster than counting by node_of), unless
        few cards are marked (the ideal repack's candidates): then those are counted."""
        return count_per_node(eligible, self.node_of, self.first_card, self._carded)

    def card_need(self, shape: Shape, at: IntArray | None = None) -> IntArray:
        """Memory (MiB) each card must give `shape` (a share differs card by card)."""
        return self.profile.card_need(self.capacity if at is None else self.capacity[at], shape)

    # -- choose -----------------------------------------------------------------------------

    def gpu_fits(self, shape: Shape, eligible: BoolArray) -> BoolArray:
        """Per node: the profile's GPU filter passes."""
        return self.profile.fits(self, shape, eligible)

    def place(
        self, shape: Shape, node_policy: PolicyName, card_policy: PolicyName
    ) -> list[int] | None:
        """Card positions where the scheduler would put `shape`, or None when nothing fits.
        Sets `tied` to the number of nodes the real scheduler would pick from at random."""
        return self.place_by(self.verdicts(shape), shape, node_policy, card_policy)

    def verdicts(self, shape: Shape) -> Verdicts:
        """Every filter's verdict on every node and card for `shape`, in one pass."""
        rejections = self.card_rejections(shape)
        eligible = eligible_of(rejections, self.capacity.size)
        gpu_fit = self.gpu_fits(shape, eligible)
        static_ok = self.static_ok(shape.constraints)
        return Verdicts(static_ok, self.resource_shortfalls(shape), rejections, eligible, gpu_fit)

    def place_by(
        self, verdicts: Verdicts, shape: Shape, node_policy: PolicyName, card_policy: PolicyName
    ) -> list[int] | None:
        """`place`, from verdicts already taken (`verdicts`) on this very state."""
        nodes = verdicts.nodes
        self.tied = 0
        if nodes.size == 0:
            return None
        policy = (node_policy, card_policy)
        positions = pick(self.profile, self, nodes, shape, verdicts.eligible, policy)
        if not self.profile.random_ties:
            self.tied = 0
        return positions

    # -- bind and unbind ------------------------------------------------------------------

    def apply(self, positions: list[int], shape: Shape) -> None:
        if not positions:
            return
        self.add_requested(int(self.node_of[positions[0]]), shape.demand)
        need = self._need_list(shape, positions)
        core = self.profile.card_core(shape)
        node = self.node_of[positions[0]]
        self.node_used[node] += (len(positions), core * len(positions), sum(need))
        self.node_core_asked[node] += core
        self.node_memory_asked[node] += _memory_asked(shape)
        for k, mib in zip(positions, need, strict=True):
            self.free_memory[k] -= mib
            self.free_core[k] -= core
            self.vgpus[k] += 1
            self.mode[k] = shape.mode
            if self.healthy[k]:
                self.allotted_healthy[self.node_of[k]] += mib

    def release(self, positions: list[int], shape: Shape) -> None:
        if not positions:
            return
        self.add_requested(int(self.node_of[positions[0]]), shape.demand, -1)
        need = self._need_list(shape, positions)
        core = self.profile.card_core(shape)
        node = self.node_of[positions[0]]
        self.node_used[node] -= (len(positions), core * len(positions), sum(need))
        self.node_core_asked[node] -= core
        self.node_memory_asked[node] -= _memory_asked(shape)
        for k, mib in zip(positions, need, strict=True):
            self.free_memory[k] += mib
            self.free_core[k] += core
            self.vgpus[k] -= 1
            if self.vgpus[k] == 0:
                self.mode[k] = int(Mode.UNUSED)
            if self.healthy[k]:
                self.allotted_healthy[self.node_of[k]] -= mib

    def _need_list(self, shape: Shape, positions: list[int]) -> list[int]:
        if shape.card_memory_mib > 0 and shape.memory_percent == 0:  # the same on every card
            return [shape.card_memory_mib] * len(positions)
        need: list[int] = self.card_need(shape, np.array(positions, dtype=np.int64)).tolist()
        return need

    def placement_of(self, positions: list[int]) -> Placement:
        node = self.node_names[int(self.node_of[positions[0]])]
        return Placement(node, tuple(sorted(int(self.card_index[k]) for k in positions)))


def _memory_asked(shape: Shape) -> int:
    return shape.card_memory_mib if shape.memory_percent == 0 else 0


def _allocatable(node: Node) -> tuple[int, int, int]:
    a = node.allocatable
    return tuple(  # type: ignore[return-value]
        UNLIMITED if v is None else v for v in (a.pods, a.cpu_milli, a.memory_bytes)
    )


def _shortfalls(
    requested: IntArray, allocatable: IntArray, shape: Shape, fit: ResourceFit
) -> BoolArray:
    """The session's rule (`ResourceFit.lacks`) on every node at once; `_shortfalls_exact`
    applies it to one node in Python's integers (sums past REQUESTED_MAX, a plan's what-if)."""
    want = np.array(shape.demand, dtype=np.int64)
    # Room left, not requested + want: requested <= REQUESTED_MAX, so nothing wraps around.
    return np.asarray(fit.lacks(want[None, :], allocatable - requested), dtype=np.bool_)


def _shortfalls_exact(
    requested: Sequence[int], allocatable: IntArray, shape: Shape, fit: ResourceFit
) -> list[bool]:
    """`_shortfalls` for one node in Python's integers (for sums past REQUESTED_MAX)."""
    return [
        fit.lacks(want, int(a) - r)
        for want, a, r in zip(shape.demand, allocatable, requested, strict=True)
    ]

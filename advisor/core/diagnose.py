"""Why is each Pending GPU pod Pending? (docs/design.md §3)

One simulated scheduling cycle: Pending pods in queue order, each placed if it fits and
seeing the placements before it; every pod that does not fit gets a cause, and every node
the reason it was rejected, counted the way the cluster-autoscaler reports them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from advisor.core.diagnose_text import (
    deciding,
    node_details,
    per_card_text,
    resources_text,
)
from advisor.core.diagnosis import Diagnosis, PodDiagnosis
from advisor.core.mig_cycle import MigBook, is_mig
from advisor.core.model import Cluster, Placement, Pod, Policy, queue_order
from advisor.core.nodefilters import fit_error, lacks
from advisor.core.occupancy import build_state
from advisor.core.placer import QueuePlacer
from advisor.core.profiles.cce import CceProfile
from advisor.core.state import BoolArray, CardState, IntArray, Shape
from advisor.core.verdicts import Verdicts
from advisor.defaults import DEFAULT_NODE_DETAIL
from advisor.errors import known

# CCE's per-node GPU reasons: too-few-cards, then its card checks in order; each profile
# names its own (`CardState.profile.reasons`).
REASONS = CceProfile.reasons


def diagnose(cluster: Cluster, *, node_detail_limit: int | None = DEFAULT_NODE_DETAIL) -> Diagnosis:
    """Run one scheduling cycle over the Pending pods and explain each of them."""
    state = build_state(cluster)
    cycle = Cycle(state, cluster.policy, node_detail_limit, MigBook(cluster, state))
    return Diagnosis(cluster.policy, tuple(cycle.visit(p) for p in queue_order(cluster.pending)))


# Shapes whose verdicts the cycle keeps (a few arrays of nodes and cards each: unbounded,
# a queue of thousands of distinct shapes on 20,000 nodes would hold gigabytes).
KEPT_SHAPES = 64


class Cycle:
    """Places pods one by one on a private CardState; `visit` returns each pod's verdict."""

    def __init__(
        self,
        state: CardState,
        policy: Policy,
        node_detail_limit: int | None,
        mig: MigBook | None = None,
    ) -> None:
        self.state = state
        self.mig = mig  # MIG cards' instances (core.mig_cycle); None: MIG pods not judged
        self.policy = policy
        self.node_detail_limit = node_detail_limit
        self._satisfiable: dict[tuple[object, ...], str | None] = {}
        self._big: dict[tuple[int, int, int], BoolArray] = {}
        # Per node, whether every filter passed for the pod last visited (`passing`);
        # None: that pod took no vGPU filtering pass (a MIG pod, or one failing alone).
        self._passing: BoolArray | None = None
        # Each shape's verdicts kept between pods, judged again only on the nodes changed
        # since (core.placer): the same picks as `CardState.place`, without reading every
        # card for every pod. A pod that fits nowhere is explained from its full verdicts.
        self._placer = QueuePlacer(state, keep=KEPT_SHAPES)

    def fails_alone(self, pod: Pod) -> PodDiagnosis | None:
        """The pod's verdict where it fails whatever the cards hold (`invalid` or
        `unsatisfiable`), or None: a fact of its spec and the nodes, so it holds for a gang
        member the cycle never tries too."""
        if is_mig(pod):
            if pod.invalid is not None:
                return PodDiagnosis(pod, "invalid", pod.invalid)
            return self._mig().fails_alone(pod)
        shape = Shape.of_pod(pod)
        problem = pod.invalid or self.state.profile.request_problem(pod.request)
        if problem is None:
            problem = self.state.profile.shape_problem(shape)
        if problem is not None:
            return PodDiagnosis(pod, "invalid", problem)
        never = self._never_fits(shape)
        if never is not None:
            return PodDiagnosis(pod, "unsatisfiable", never)
        return None

    def visit(self, pod: Pod, barred: BoolArray | None = None) -> PodDiagnosis:
        """The pod's verdict, placed on the cards where it fits. `barred`: nodes it may not
        take whatever its filters say (core.gang: the nodes an earlier task of its role
        failed in this job's turn); `passing` then gives the nodes every filter passed."""
        self._passing = None
        alone = self.fails_alone(pod)
        if alone is not None:
            return alone
        if is_mig(pod):
            verdict = self._mig().visit(pod, self.policy.node, self.node_detail_limit)
            if verdict.placement is not None:  # its node's cpu and memory now count it
                self._placer.bound(self.state.node_index[verdict.placement.node])
            return verdict
        shape = Shape.of_pod(pod)
        policy = (self.policy.node, self.policy.card)
        if barred is None or not barred.any():
            positions = self._placer.place(shape, *policy)
            if positions is not None:
                self._passing = self._placer.passing(shape, *policy)
                return self._bind(pod, shape, positions)
            verdicts = self.state.verdicts(shape)
            self._passing = verdicts.passing
            return self._explain(pod, shape, verdicts)
        verdicts = self.state.verdicts(shape)
        self._passing = verdicts.passing
        taken = replace(verdicts, gpu_fit=verdicts.gpu_fit & ~barred)
        positions = self.state.place_by(taken, shape, *policy)
        if positions is not None:
            return self._bind(pod, shape, positions)
        passing = self.passing()
        if passing.any() and not (passing & ~barred).any():  # only barred nodes pass
            return PodDiagnosis(pod, "gang", self._barred_message(pod, barred))
        return self._explain(pod, shape, verdicts)

    def changed(self, node: int) -> None:
        """The caller changed node `node` of the cycle's state itself (bound a pod that
        asks no GPU there, say): judged again at the next pod."""
        self._placer.bound(node)

    def _bind(self, pod: Pod, shape: Shape, positions: list[int]) -> PodDiagnosis:
        """The pod placed on the cards at `positions` (the pick `place` made)."""
        tied = self.state.tied
        self.state.apply(positions, shape)
        self._placer.bound(int(self.state.node_of[positions[0]]))
        placement = self.state.placement_of(positions)
        cards = ", ".join(map(str, placement.cards))
        message = f"fits on {placement.node} cards {cards}"
        if tied > 1:
            message += (
                f" ({tied} nodes score the same and the scheduler picks one of them at "
                "random, so the real pick may differ)"
            )
        return PodDiagnosis(pod, "schedulable", message, placement)

    def passing(self) -> BoolArray:
        """Per node, whether every filter passed for the pod last visited (its turn's
        verdicts, before its own placement); every node where that pod took no vGPU
        filtering pass (a MIG pod), so no node is cached as failed for its role."""
        if self._passing is None:
            return np.ones(len(self.state.node_names), dtype=np.bool_)
        return self._passing

    def _barred_message(self, pod: Pod, barred: BoolArray) -> str:
        """Volcano's predicate error cache (v1.15.1 util/predicate_helper.go PredicateNodes,
        keyed by job and task role): a node an earlier task of the role failed in this
        turn is failed for the pod with that task's error, unchecked."""
        n = len(self.state.node_names)
        shut = int(np.count_nonzero(barred & self.passing()))
        return (
            f"0/{n} nodes are unavailable: the {shut} node(s) where it would fit failed an "
            f"earlier task of its role {pod.role} in this job's turn, and Volcano's "
            "predicate error cache keeps them failed for the role"
        )

    def release(self, pod: Pod, placement: Placement, positions: list[int], shape: Shape) -> None:
        """Undo a placement this cycle made (a gang rolled back)."""
        if is_mig(pod):
            self._mig().release(pod, placement)
        else:
            self.state.release(positions, shape)
        self._placer.bound(self.state.node_index[placement.node])

    def _mig(self) -> MigBook:
        return known(self.mig, "the cycle's MIG instances")

    # -- unsatisfiable ---------------------------------------------------------------

    def _never_fits(self, shape: Shape) -> str | None:
        """Why no node could ever take `shape`, even empty and repaired, or None: no node
        passes the static filters and has the allocatable and the cards it needs."""
        key = (
            shape.gpus,
            shape.card_memory_mib,
            shape.memory_percent,
            shape.resources,
            shape.constraints,
        )
        if key not in self._satisfiable:
            self._satisfiable[key] = self._never_fits_message(shape)
        return self._satisfiable[key]

    def _big_enough(self, shape: Shape) -> BoolArray:
        """Nodes with enough cards big enough for `shape`, empty: cards never change size,
        so this is cached by the GPU part of the shape alone (the pods' requests and
        constraints vary far more than their GPU shapes)."""
        key = (shape.gpus, shape.card_memory_mib, shape.memory_percent)
        big = self._big.get(key)
        if big is None:
            s = self.state
            roomy_cards = (s.capacity >= s.card_need(shape)) & (s.slots > 0)
            big = self._big[key] = s.eligible_per_node(roomy_cards) >= shape.gpus
        return big

    def _never_fits_message(self, shape: Shape) -> str | None:
        s = self.state
        n_nodes = len(s.node_names)
        allowed = s.static_ok(shape.constraints)
        if not allowed.any():
            return fit_error(
                n_nodes, s.static_counts(shape.constraints).items(), s.profile.session.volcano
            )
        want = np.array(shape.demand, dtype=np.int64)
        roomy = ~lacks(want[None, :], s.allocatable).any(axis=1)  # on an empty node
        big = self._big_enough(shape)
        if (allowed & roomy & big).any():
            return None
        if (allowed & big).any():
            return (
                f"no node the pod may use has the allocatable it requests "
                f"({resources_text(shape)}), even with no other pod on it"
            )
        considered = np.flatnonzero(allowed)
        positions = np.isin(s.node_of, considered)
        largest = int(s.capacity[positions].max()) if positions.any() else 0
        most = int(s.card_count[considered].max()) if considered.size else 0
        scope = "no node" if considered.size == n_nodes else "no node the pod may use"
        return (
            f"{scope} has {shape.gpus} cards of at least {shape.card_memory_mib} MiB "
            f"(largest card {largest} MiB, most cards on a node {most})"
        )

    # -- node-resources, fragmentation or capacity -------------------------------------------

    def _explain(self, pod: Pod, shape: Shape, verdicts: Verdicts) -> PodDiagnosis:
        """Why no node takes the pod, read off the verdicts `place` decided by."""
        s = self.state
        n_nodes = len(s.node_names)
        static_ok, short = verdicts.static_ok, verdicts.short
        open_nodes = static_ok & verdicts.roomy
        codes = verdicts.card_codes()
        width = len(s.profile.reasons)
        per_node = np.bincount(s.node_of * width + codes, minlength=n_nodes * width).reshape(
            n_nodes, width
        )
        gpus_fit = verdicts.gpu_fit
        checks = len(verdicts.rejections)
        primary = self._primary_reasons(per_node, shape, gpus_fit, checks)
        reason_counts = self._reason_counts(shape, short, open_nodes, primary)
        counted = s.counted & open_nodes[s.node_of]
        free_memory = np.where(counted, s.free_memory, 0)
        free_core = np.where(counted, s.free_core, 0)
        node_free = np.bincount(s.node_of, weights=free_memory, minlength=n_nodes).astype(np.int64)
        core = s.profile.card_core(shape)
        total_memory, total_core = self._node_demand(shape), shape.gpus * core
        listed = self._listed_nodes(static_ok, open_nodes, per_node[:, 0], node_free)
        details = tuple(
            (
                s.node_names[i],
                node_details(
                    s,
                    i,
                    self._node_reason(i, shape, short, primary),
                    per_node[i],
                    codes,
                    shape,
                    checks,
                ),
            )
            for i in listed
        )
        verdict = PodDiagnosis(
            pod,
            "capacity",
            "",
            node_reasons=details,
            nodes_omitted=n_nodes - len(listed),
            reason_counts=reason_counts,
            nodes_total=n_nodes,
            volcano=s.profile.session.volcano,
        )
        summary = fit_error(n_nodes, reason_counts, s.profile.session.volcano)
        starved = np.flatnonzero(static_ok & ~open_nodes & gpus_fit)
        if starved.size:
            best = int(starved[np.argmin(s.name_rank[starved])])
            lacking = ", ".join(s.fit.words(short[best]))
            others = f" (and {starved.size - 1} other nodes)" if starved.size > 1 else ""
            message = (
                f"{summary} The GPUs fit now on {s.node_names[best]}{others}, but {lacking} there "
                f"for {resources_text(shape)}: free or add cpu and memory on GPU nodes, "
                "not GPUs"
            )
            return replace(verdict, cause="node-resources", message=message)
        # Only cards that could ever hold one of the pod's slices make room for it: healthy
        # (counted), on a node it may use, big enough and with a vGPU slot at all.
        pool = counted & (s.capacity >= s.card_need(shape)) & (s.slots > 0)
        pool_cards = np.bincount(s.node_of, weights=pool, minlength=n_nodes).astype(np.int64)
        pool_memory = np.where(pool, s.free_memory, 0)
        pool_core = np.where(pool, s.free_core, 0)
        pool_free = np.bincount(s.node_of, weights=pool_memory, minlength=n_nodes).astype(np.int64)
        hosts = pool_cards >= shape.gpus  # nodes that could take it, rearranged
        split = open_nodes & hosts & (pool_free >= total_memory)
        if core > 0:
            node_pool_core = np.bincount(s.node_of, weights=pool_core, minlength=n_nodes)
            split &= node_pool_core.astype(np.int64) >= total_core
        if split.any():
            ranked = np.flatnonzero(split)
            best = int(ranked[np.lexsort((s.name_rank[ranked], -pool_free[ranked]))[0]])
            lines = node_details(
                s,
                best,
                self._node_reason(best, shape, short, primary),
                per_node[best],
                codes,
                shape,
                checks,
            )
            message = (
                f"{summary} {s.node_names[best]} has {int(pool_free[best])} MiB free over "
                f"{int(pool_cards[best])} {s.profile.card_word}cards, but "
                + deciding(s, best, shape, pool, codes, primary, lines)
            )
            return replace(verdict, cause="fragmentation", message=message)
        pooled = int(pool_memory.sum())
        sufficient = bool(hosts.any()) and pooled >= int(total_memory[hosts].min())
        if core > 0:
            sufficient = sufficient and int(pool_core.sum()) >= total_core
        least = int(total_memory.min()) if total_memory.size else 0
        movable = int(free_memory.sum()) >= least
        if core > 0:
            movable = movable and int(free_core.sum()) >= total_core
        scope = "the cluster has" if open_nodes.all() else "the nodes it may use have"
        wanted = f"{least} MiB" if shape.card_memory_mib > 0 else f"{per_card_text(shape)} each"
        n_pool = int(pool.sum())
        noun = "card" if n_pool == 1 else "cards"
        message = (
            f"{summary} No node has {wanted} free on {shape.gpus} or more {s.profile.card_word}"
            f"cards; {scope} {pooled} MiB free in all on the {n_pool} {s.profile.card_word}"
            f"{noun} big enough for it"
            + (" (enough if consolidated)" if sufficient else " (not enough)")
        )
        return replace(
            verdict,
            message=message,
            cluster_free_sufficient=sufficient,
            movable_free_sufficient=movable,
        )

    def _node_demand(self, shape: Shape) -> IntArray:
        """Per node, the memory the pod needs in all: N x its per-card memory, or for a
        share of each card the sum over the node's N smallest counted cards (§9.2)."""
        s = self.state
        n_nodes = len(s.node_names)
        if shape.card_memory_mib > 0 and shape.memory_percent == 0:
            return np.full(n_nodes, shape.gpus * shape.card_memory_mib, dtype=np.int64)
        width = int(s.card_count.max()) if n_nodes else 0
        column = np.arange(width)
        valid = column[None, :] < s.card_count[:, None]
        pos = np.where(valid, s.first_card[:, None] + column[None, :], 0)
        big = np.iinfo(np.int64).max // (4 * max(shape.gpus, 1))
        need = np.where(valid & s.counted[pos], s.card_need(shape)[pos], big)
        demand = np.sort(need, axis=1)[:, : shape.gpus].sum(axis=1)
        return np.where(s.counted_count >= shape.gpus, demand, big).astype(np.int64)

    def _primary_reasons(
        self, per_node: IntArray, shape: Shape, gpus_fit: BoolArray, checks: int
    ) -> IntArray:
        """Reason index per node (`profile.reasons`): the node-level one when some (or too
        few) cards qualify; a profile's extra node reason (HAMi's NumaNotFit) when enough
        cards qualify but the profile still refuses them; else the commonest card-level
        reason (ties in check order); `checks`: how many card checks the profile has."""
        card_level = 1 + np.argmax(per_node[:, 1 : 1 + checks], axis=1)
        eligible = per_node[:, 0]
        profile = self.state.profile
        primary = np.where(eligible > 0, 0, card_level)
        if profile.refused_reason is not None:
            refused = (eligible >= shape.gpus) & ~gpus_fit
            primary = np.where(refused, profile.refusals(self.state, shape), primary)
        primary = np.where(self.state.card_count < shape.gpus, profile.few_cards_reason, primary)
        return primary.astype(np.int64)

    def _node_reason(
        self, node: int, shape: Shape, short: BoolArray, primary: IntArray
    ) -> tuple[str, ...]:
        """The node's rejection by the first filter that rejects it, in the session's
        order (`ResourceFit.rejection`): a static filter's message or the resource check's,
        else the GPU reason."""
        static = self.state.static_rejections(shape.constraints).get(node, ())
        found = self.state.fit.rejection(static, short[node])
        return found or (self.state.profile.reasons[int(primary[node])],)

    def _reason_counts(
        self,
        shape: Shape,
        short: BoolArray,
        open_nodes: BoolArray,
        primary: IntArray,
    ) -> tuple[tuple[str, int], ...]:
        """`_node_reason` counted over every node (vectorised: it runs for every pod that
        does not fit), most first: kube-scheduler's histogram of reasons."""
        s, c = self.state, shape.constraints
        counts = s.fit.counts(s.static_counts(c), s.static_rejections(c), short)
        names = self.state.profile.reasons
        gpu = np.bincount(primary[open_nodes], minlength=len(names))
        for code in np.flatnonzero(gpu):
            counts[names[int(code)]] = int(gpu[code])
        return tuple(sorted(counts.items(), key=lambda rc: -rc[1]))

    def _listed_nodes(
        self, static_ok: BoolArray, open_nodes: BoolArray, eligible: IntArray, node_free: IntArray
    ) -> list[int]:
        """Nodes nearest to fitting first: past every non-GPU filter, then past the static
        ones; then most eligible cards, most free memory, name."""
        s = self.state
        stage = np.where(open_nodes, 0, np.where(static_ok, 1, 2))
        order = np.lexsort((s.name_rank, -node_free, -eligible, stage))
        limit = self.node_detail_limit
        return [int(i) for i in (order if limit is None else order[:limit])]

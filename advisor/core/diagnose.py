"""Why is each Pending GPU pod Pending? (DESIGN.md §3)

One simulated scheduling cycle: Pending pods in queue order, each placed if it fits and
seeing the placements before it; every pod that does not fit gets a cause, and every node
the reason it was rejected, counted the way the cluster-autoscaler reports them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from advisor.core.model import Cluster, Mode, Placement, Pod, Policy, queue_order, request_problem
from advisor.core.state import CardState, IntArray, Shape

Cause = Literal["invalid", "unsatisfiable", "schedulable", "fragmentation", "capacity"]
CAUSES: tuple[Cause, ...] = ("schedulable", "fragmentation", "capacity", "unsatisfiable", "invalid")
# Card-level rejections in the order they are checked; index = code used below (0 = eligible).
CARD_REASONS = ("", "unhealthy", "mode-conflict", "vgpu-limit", "card-memory", "card-core")
REASONS = ("too-few-cards", *CARD_REASONS[1:])
DEFAULT_NODE_DETAIL = 20


@dataclass(frozen=True, slots=True)
class PodDiagnosis:
    pod: Pod
    cause: Cause
    message: str
    placement: Placement | None = None
    node_reasons: tuple[tuple[str, tuple[str, ...]], ...] = ()  # listed nodes only
    nodes_omitted: int = 0
    reason_counts: tuple[tuple[str, int], ...] = ()  # primary reason -> nodes, most first
    nodes_total: int = 0
    cluster_free_sufficient: bool | None = None  # capacity pods only

    @property
    def node_summary(self) -> str | None:
        if not self.reason_counts:
            return None
        parts = ", ".join(f"{count} {reason}" for reason, count in self.reason_counts)
        return f"0/{self.nodes_total} nodes fit: {parts}"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    policy: Policy
    pods: tuple[PodDiagnosis, ...]  # queue order

    def count(self, cause: Cause) -> int:
        return sum(1 for d in self.pods if d.cause == cause)

    @property
    def summary(self) -> dict[str, int]:
        return {"pending": len(self.pods), **{c: self.count(c) for c in CAUSES}}


def build_state(cluster: Cluster) -> CardState:
    """Card occupancy with every running pod bound (the scenario loader vouches for them)."""
    state = CardState(cluster)
    for pod in cluster.running:
        assert pod.placement is not None
        state.apply(state.positions(pod.placement), Shape.of(pod.request))
    return state


def diagnose(cluster: Cluster, *, node_detail_limit: int | None = DEFAULT_NODE_DETAIL) -> Diagnosis:
    """Run one scheduling cycle over the Pending pods and explain each of them."""
    state = build_state(cluster)
    cycle = Cycle(state, cluster.policy, node_detail_limit)
    return Diagnosis(cluster.policy, tuple(cycle.visit(p) for p in queue_order(cluster.pending)))


class Cycle:
    """Places pods one by one on a private CardState; `visit` returns each pod's verdict."""

    def __init__(self, state: CardState, policy: Policy, node_detail_limit: int | None) -> None:
        self.state = state
        self.policy = policy
        self.node_detail_limit = node_detail_limit
        self._satisfiable: dict[tuple[int, int], bool] = {}

    def visit(self, pod: Pod) -> PodDiagnosis:
        problem = pod.invalid or request_problem(pod.request)
        if problem is not None:
            return PodDiagnosis(pod, "invalid", problem)
        shape = Shape.of(pod.request)
        if not self._could_ever_fit(shape):
            return PodDiagnosis(pod, "unsatisfiable", self._unsatisfiable_message(shape))
        positions = self.state.place(shape, self.policy.node, self.policy.card)
        if positions is not None:
            self.state.apply(positions, shape)
            placement = self.state.placement_of(positions)
            cards = ", ".join(map(str, placement.cards))
            return PodDiagnosis(
                pod, "schedulable", f"fits on {placement.node} cards {cards}", placement
            )
        return self._explain(pod, shape)

    # -- unsatisfiable ---------------------------------------------------------------

    def _could_ever_fit(self, shape: Shape) -> bool:
        key = (shape.gpus, shape.card_memory_mib)
        if key not in self._satisfiable:
            s = self.state
            big = s.eligible_per_node(s.capacity >= shape.card_memory_mib)
            self._satisfiable[key] = bool((big >= shape.gpus).any()) and s.limit > 0
        return self._satisfiable[key]

    def _unsatisfiable_message(self, shape: Shape) -> str:
        s = self.state
        largest = int(s.capacity.max()) if s.capacity.size else 0
        most = int(s.card_count.max()) if s.card_count.size else 0
        return (
            f"no node has {shape.gpus} cards of at least {shape.card_memory_mib} MiB "
            f"(largest card {largest} MiB, most cards on a node {most})"
        )

    # -- fragmentation or capacity ---------------------------------------------------------

    def _explain(self, pod: Pod, shape: Shape) -> PodDiagnosis:
        s = self.state
        n_nodes = len(s.node_names)
        codes = self._card_codes(shape)
        per_node = np.bincount(
            s.node_of * len(CARD_REASONS) + codes, minlength=n_nodes * len(CARD_REASONS)
        ).reshape(n_nodes, len(CARD_REASONS))
        primary = self._primary_reasons(per_node, shape)
        counts = np.bincount(primary, minlength=len(REASONS))
        by_count = sorted(
            (i for i in range(len(REASONS)) if counts[i]), key=lambda i: (-counts[i], i)
        )
        reason_counts = tuple((REASONS[i], int(counts[i])) for i in by_count)
        free_memory = np.where(s.healthy, s.free_memory, 0)
        free_core = np.where(s.healthy, s.free_core, 0)
        node_free = np.bincount(s.node_of, weights=free_memory, minlength=n_nodes).astype(np.int64)
        node_core = np.bincount(s.node_of, weights=free_core, minlength=n_nodes).astype(np.int64)
        total_memory, total_core = shape.gpus * shape.card_memory_mib, shape.gpus * shape.card_core
        split = (s.healthy_count >= shape.gpus) & (node_free >= total_memory)
        if shape.mode == int(Mode.MEMORY_CORE):
            split &= node_core >= total_core
        listed = self._listed_nodes(per_node[:, 0], node_free)
        details = tuple(
            (s.node_names[i], self._node_details(i, per_node[i], codes, shape, int(primary[i])))
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
        )
        summary = f"0/{n_nodes} nodes fit: " + ", ".join(f"{c} {r}" for r, c in reason_counts)
        if split.any():
            ranked = np.flatnonzero(split)
            best = int(ranked[np.lexsort((s.name_rank[ranked], -node_free[ranked]))[0]])
            message = (
                f"{summary}; {s.node_names[best]} has {int(node_free[best])} MiB free over "
                f"{int(s.healthy_count[best])} healthy cards, but not "
                f"{shape.card_memory_mib} MiB on each of {shape.gpus} eligible cards"
            )
            return replace(verdict, cause="fragmentation", message=message)
        cluster_free = int(free_memory.sum())
        sufficient = cluster_free >= total_memory
        if shape.mode == int(Mode.MEMORY_CORE):
            sufficient = sufficient and int(free_core.sum()) >= total_core
        message = (
            f"{summary}; no node has {total_memory} MiB free on {shape.gpus} or more healthy "
            f"cards; the cluster has {cluster_free} MiB free in all"
            + (" (enough if consolidated)" if sufficient else " (not enough)")
        )
        return replace(verdict, message=message, cluster_free_sufficient=sufficient)

    def _card_codes(self, shape: Shape) -> IntArray:
        s = self.state
        other_mode = (s.mode != int(Mode.UNUSED)) & (s.mode != shape.mode)
        low_core = (
            s.free_core < shape.card_core
            if shape.mode == int(Mode.MEMORY_CORE)
            else np.zeros(s.mode.size, dtype=np.bool_)
        )
        conditions = [
            ~s.healthy,
            other_mode,
            s.vgpus >= s.limit,
            s.free_memory < shape.card_memory_mib,
            low_core,
        ]
        return np.select(conditions, [1, 2, 3, 4, 5], 0).astype(np.int64)

    def _primary_reasons(self, per_node: IntArray, shape: Shape) -> IntArray:
        """REASONS index per node: too-few-cards when some (or too few) cards qualify,
        else the commonest card-level reason (ties in check order)."""
        card_level = 1 + np.argmax(per_node[:, 1:], axis=1)  # index into CARD_REASONS
        too_few = (self.state.card_count < shape.gpus) | (per_node[:, 0] > 0)
        return np.where(too_few, 0, card_level).astype(np.int64)

    def _listed_nodes(self, eligible: IntArray, node_free: IntArray) -> list[int]:
        """Nodes nearest to fitting first: most eligible cards, most free memory, name."""
        s = self.state
        order = np.lexsort((s.name_rank, -node_free, -eligible))
        limit = self.node_detail_limit
        return [int(i) for i in (order if limit is None else order[:limit])]

    def _node_details(
        self, node: int, counts: IntArray, codes: IntArray, shape: Shape, primary: int
    ) -> tuple[str, ...]:
        s = self.state
        if s.card_count[node] < shape.gpus:
            return (
                f"too-few-cards: node has {int(s.card_count[node])} cards, {shape.gpus} needed",
            )
        lines = []
        if primary == 0:
            lines.append(f"too-few-cards: {int(counts[0])} of {shape.gpus} cards eligible")
        positions = s.node_positions(node)
        for code in sorted(range(1, len(CARD_REASONS)), key=lambda c: (-int(counts[c]), c)):
            if counts[code] == 0:
                continue
            cards = [int(s.card_index[k]) for k in positions if codes[k] == code]
            lines.append(_card_reason_text(code, cards, shape, s.limit))
        return tuple(lines)


def _card_reason_text(code: int, cards: list[int], shape: Shape, limit: int) -> str:
    listed = ", ".join(map(str, cards))
    noun = "card" if len(cards) == 1 else "cards"
    verb = "has" if len(cards) == 1 else "have"
    wanted = "memory+core" if shape.mode == int(Mode.MEMORY_CORE) else "memory"
    other = "memory" if shape.mode == int(Mode.MEMORY_CORE) else "memory+core"
    text = {
        1: f"{noun} {listed} {'is' if len(cards) == 1 else 'are'} unhealthy",
        2: f"{noun} {listed} host {other} isolation vGPUs, pod needs {wanted} isolation",
        3: f"{noun} {listed} {verb} {limit} vGPUs (the limit)",
        4: f"{noun} {listed} {verb} less than {shape.card_memory_mib} MiB free",
        5: f"{noun} {listed} {verb} less than {shape.card_core}% core free",
    }[code]
    return f"{CARD_REASONS[code]}: {text}"

"""`python -m benchmarks.plan_ceiling`: the full-repack optimum of the openb end states,
computed, not cited: the most Pending GPU memory ANY rearrangement of the running pods
could place, with unlimited evictions and queue order ignored.

An exact integer program (scipy's HiGHS), in the cutting-stock form: every card of the
cluster is either part of a multi-card pod's whole cards (chosen per node by a node
*configuration*: how many 8-, 4- and 2-card pods it hosts) or a single-card bin filled by
one *pattern* (a maximal multiset of single-card pod sizes within the card's memory and the
profile's vGPU count). Every running pod must be placed again; each Pending pod may be.
The objective is the rescued memory. Maximal patterns suffice: a pattern's slot may stay
empty, so covering constraints (`>=`) are exact.

Scope, checked up front (`ValueError` otherwise): one card memory, no node constraints or
cpu/memory requests (the GPU-only replay), multi-card pods on whole cards. That is the
openb end state; a general cluster would need per-node patterns.

The plan figures set beside this (`benchmarks.plan_bench`) show the distance from the
optimum; the ceiling within an eviction budget and the queue order is
`benchmarks.plan_queue_ceiling`'s, which uses `rescue_all_single` for one of its cases.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Placement, Pod
from advisor.core.nodefilters import NodeConstraints, Resources
from benchmarks.openb_states import NODES_CSV, end_state, openb_dir

MULTI_CARD = (8, 4, 2)  # the multi-card pod sizes a node configuration counts


@dataclass(frozen=True, slots=True)
class Optimum:
    rescued_mib: int
    pending_mib: int
    patterns: int  # single-card patterns in the program
    status: str  # HiGHS's word: "optimal" when the figure is exact

    @property
    def share(self) -> float:
        return self.rescued_mib / self.pending_mib if self.pending_mib else 0.0


@dataclass(frozen=True, slots=True)
class _Demand:
    """Pods by shape: single-card memory -> count, and k-card whole-card pods -> count."""

    single: Counter[int]
    multi: Counter[int]


def full_repack_optimum(cluster: Cluster, rescue_all_single: bool = False) -> Optimum:
    """The exact full-repack optimum of `cluster` (see the module's scope);
    `rescue_all_single`: with every single-card Pending pod rescued (status "infeasible"
    when no rearrangement places them all)."""
    card_mib = one_card_memory(cluster)
    if any(card.max_vgpus is not None for node in cluster.nodes for card in node.cards):
        raise ValueError("per-card vGPU counts are out of scope")
    vgpus = cluster.max_vgpus_per_card
    running, pending = _Demand(Counter(), Counter()), _Demand(Counter(), Counter())
    for pod, where in scoped_pods(cluster):
        into = running if where is not None else pending
        if pod.request.gpus == 1:
            into.single[pod.request.memory_mib] += 1
        elif (
            pod.request.gpus in MULTI_CARD and pod.request.memory_mib == pod.request.gpus * card_mib
        ):
            into.multi[pod.request.gpus] += 1
        else:
            raise ValueError(f"{pod.name}: only whole-card multi-card pods are in scope")
    nodes = Counter(len(n.cards) for n in cluster.nodes if n.cards)
    sizes = sorted(set(running.single) | set(pending.single), reverse=True)
    patterns = maximal_patterns(sizes, card_mib, vgpus)
    configs = {t: node_configurations(t) for t in nodes}
    return _solve(card_mib, nodes, configs, sizes, patterns, running, pending, rescue_all_single)


def scoped_pods(cluster: Cluster) -> Iterator[tuple[Pod, Placement | None]]:
    """Each pod but those the profile cannot read, in cluster order, with where it runs
    once the current cycle has placed what fits (None: Pending); ValueError for a pod with
    node constraints or cpu/memory requests."""
    causes = {d.pod.name: d for d in diagnose(cluster, node_detail_limit=0).pods}
    for pod in cluster.pods:
        seen = causes.get(pod.name)
        if seen is not None and seen.cause == "invalid":
            continue
        if pod.constraints != NodeConstraints() or pod.resources != Resources():
            raise ValueError(f"{pod.name}: node constraints or cpu/memory are out of scope")
        yield pod, pod.placement or (seen.placement if seen is not None else None)


def maximal_patterns(sizes: Sequence[int], capacity: int, slots: int) -> list[Counter[int]]:
    """Every multiset of `sizes` within `capacity` and `slots` to which none can be added."""
    order = sorted(sizes, reverse=True)
    smallest = order[-1] if order else capacity + 1
    found: list[Counter[int]] = []

    def extend(start: int, room: int, count: int, chosen: list[int]) -> None:
        for j in range(start, len(order)):
            if order[j] <= room and count < slots:
                chosen.append(order[j])
                extend(j, room - order[j], count + 1, chosen)
                chosen.pop()
        if count >= slots or smallest > room:
            found.append(Counter(chosen))

    extend(0, capacity, 0, [])
    return found


def node_configurations(cards: int) -> list[tuple[int, ...]]:
    """How many pods of each `MULTI_CARD` size a node of `cards` cards can host at once."""
    ranges = [range(cards // k + 1) for k in MULTI_CARD]
    return [
        combo
        for combo in itertools.product(*ranges)
        if sum(k * n for k, n in zip(MULTI_CARD, combo, strict=True)) <= cards
    ]


def _solve(
    card_mib: int,
    nodes: Counter[int],
    configs: dict[int, list[tuple[int, ...]]],
    sizes: list[int],
    patterns: list[Counter[int]],
    running: _Demand,
    pending: _Demand,
    rescue_all_single: bool,
) -> Optimum:
    # Columns: patterns, then (node type, configuration), then rescued singles per size,
    # then rescued multi-card pods per size.
    node_cols = [(t, c) for t in sorted(nodes) for c in configs[t]]
    n_pat, n_node, n_single = len(patterns), len(node_cols), len(sizes)
    width = n_pat + n_node + n_single + len(MULTI_CARD)
    rows: list[np.ndarray] = []
    lower: list[float] = []
    upper: list[float] = []

    def row() -> np.ndarray:
        return np.zeros(width)

    def constrain(r: np.ndarray, low: float, high: float) -> None:
        rows.append(r)
        lower.append(low)
        upper.append(high)

    # Every node has exactly one configuration.
    for t in sorted(nodes):
        r = row()
        for j, (tt, _) in enumerate(node_cols):
            r[n_pat + j] = 1.0 if tt == t else 0.0
        constrain(r, nodes[t], nodes[t])
    # Patterns fill at most the cards the configurations leave single.
    r = row()
    r[:n_pat] = 1.0
    for j, (t, c) in enumerate(node_cols):
        r[n_pat + j] = -(t - sum(k * n for k, n in zip(MULTI_CARD, c, strict=True)))
    constrain(r, -np.inf, 0.0)
    # Every running single-card pod, and every rescued one, has a slot.
    for i, size in enumerate(sizes):
        r = row()
        r[:n_pat] = [p[size] for p in patterns]
        r[n_pat + n_node + i] = -1.0
        constrain(r, running.single[size], np.inf)
    # Likewise every multi-card pod has its whole cards on one node.
    for m, k in enumerate(MULTI_CARD):
        r = row()
        for j, (_, c) in enumerate(node_cols):
            r[n_pat + j] = c[m]
        r[n_pat + n_node + n_single + m] = -1.0
        constrain(r, running.multi[k], np.inf)
    cost = np.zeros(width)
    cost[n_pat + n_node : n_pat + n_node + n_single] = [-s for s in sizes]
    cost[n_pat + n_node + n_single :] = [-k * card_mib for k in MULTI_CARD]
    high = np.full(width, np.inf)
    high[n_pat + n_node : n_pat + n_node + n_single] = [pending.single[s] for s in sizes]
    low = np.zeros(width)
    if rescue_all_single:
        low[n_pat + n_node : n_pat + n_node + n_single] = [pending.single[s] for s in sizes]
    high[n_pat + n_node + n_single :] = [pending.multi[k] for k in MULTI_CARD]
    result = milp(
        cost / card_mib,  # in cards, so HiGHS's tolerances are in a sensible unit
        constraints=LinearConstraint(np.array(rows), lower, upper),
        integrality=np.ones(width, dtype=np.int64),
        bounds=Bounds(low, high),
    )
    pending_mib = sum(s * n for s, n in pending.single.items()) + sum(
        k * card_mib * n for k, n in pending.multi.items()
    )
    if result.x is None:
        status = "infeasible" if result.status == 2 else str(result.message)
        return Optimum(0, pending_mib, n_pat, status)
    chosen = np.round(result.x).astype(int)
    rescued = int(-cost.astype(np.int64) @ chosen)
    status = "optimal" if result.status == 0 else str(result.message)
    return Optimum(rescued, pending_mib, n_pat, status)


def one_card_memory(cluster: Cluster) -> int:
    memories = {card.memory_mib for node in cluster.nodes for card in node.cards}
    if len(memories) != 1:
        raise ValueError(f"one card memory is in scope, found {sorted(memories)}")
    return memories.pop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plan_ceiling")
    parser.add_argument("--only", choices=("binpack", "spread"))
    args = parser.parse_args(argv)
    if not (openb_dir() / NODES_CSV).is_file():
        print(f"no openb trace in {openb_dir()} (set XGPU_OPENB_DIR)", file=sys.stderr)
        return 2
    for node in [args.only] if args.only else ["binpack", "spread"]:
        best = full_repack_optimum(end_state(node))
        print(
            f"node {node}: full-repack optimum {best.rescued_mib} of {best.pending_mib} MiB "
            f"Pending ({best.share:.1%}), {best.patterns} patterns, {best.status}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
